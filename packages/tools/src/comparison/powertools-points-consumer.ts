/**
 * The points consumer as a team would build it today with Powertools idempotency: per
 * record, `makeIdempotent` puts an IN_PROGRESS record, the handler writes the ledger entry
 * and the balance in its own transaction, then the record is updated to COMPLETED. Three
 * round trips, and the business write is not atomic with the record. Records of a batch
 * run in parallel and failures are reported per record (what Powertools' BatchProcessor
 * does). Only for the benchmark and the bundle report: never deployed.
 *
 * With `envelopeKeys` it checks the bridge's signatures first, with the project's own check, as a
 * team on Powertools consuming from the same bridge would have to: a refused record is not
 * processed and is reported as failed. Without it, it trusts every envelope.
 */
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import {
  awardWrites,
  type OrderPaid,
  orderPaidFingerprintFields,
  type PointTables,
  parseOrderPaid,
} from '@rocketmq-lambda/consumers/points/index.ts';
import { fingerprintOf } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { parseEnvelope, type SigningKeyRing, signatureRefusals } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent } from 'aws-lambda';

export interface PowertoolsPointsConsumerDeps {
  dynamoDb: DynamoDBClient;
  tables: PointTables & { idempotency: string };
  envelopeKeys?: SigningKeyRing;
}

export function createPowertoolsPointsConsumer(deps: PowertoolsPointsConsumerDeps) {
  const documents = DynamoDBDocumentClient.from(deps.dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'order.orderNo',
    payloadValidationJmesPath: 'order',
    expiresAfterSeconds: 7 * 24 * 3600,
  });
  const award = makeIdempotent(
    async (input: { order: OrderPaid; msgId: string }) => {
      await documents.send(
        new TransactWriteCommand({
          TransactItems: awardWrites(
            input.order,
            { msgId: input.msgId, fingerprint: fingerprintOf(orderPaidFingerprintFields(input.order)) },
            deps.tables,
            new Date(),
          ).map((w) => w.item),
        }),
      );
      return { awarded: input.order.points };
    },
    {
      persistenceStore: new DynamoDBPersistenceLayer({
        tableName: deps.tables.idempotency,
        awsSdkV3Client: deps.dynamoDb,
      }),
      config,
    },
  );
  return async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    config.registerLambdaContext(context);
    const failures: SQSBatchItemFailure[] = [];
    const refusals = deps.envelopeKeys
      ? await signatureRefusals(
          event.Records.map((r) => r.body),
          deps.envelopeKeys,
        )
      : new Map<number, string>();
    await Promise.all(
      event.Records.map(async (record, i) => {
        if (refusals.has(i)) {
          failures.push({ itemIdentifier: record.messageId });
          return;
        }
        try {
          const message = parseEnvelope(record.body);
          await award({ order: parseOrderPaid(message.body), msgId: message.msgId });
        } catch {
          failures.push({ itemIdentifier: record.messageId });
        }
      }),
    );
    return { batchItemFailures: failures };
  };
}

export const handler = (() => {
  let built: ReturnType<typeof createPowertoolsPointsConsumer> | undefined;
  return (event: SQSEvent, context: Context) => {
    built ??= createPowertoolsPointsConsumer({
      dynamoDb: new DynamoDBClient({}),
      tables: {
        idempotency: process.env.IDEMPOTENCY_TABLE!,
        ledger: process.env.LEDGER_TABLE!,
        accounts: process.env.ACCOUNTS_TABLE!,
      },
    });
    return built(event, context);
  };
})();
