import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { type OrderPaid, parseOrderPaid } from '@rocketmq-lambda/consumers/points/index.ts';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { IMMEDIATE_RETRIES, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { queueDepth, readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { inject } from 'vitest';
import { createDynamoDb, createSqs, emulatorConfig } from '../../../src/aws/index.ts';
import { recordId } from '../../../src/config/index.ts';
import type { ConsumerMessage, Invocation, RecordReport } from '../../../src/consumer/index.ts';
import {
  ConsumerEngine,
  type ConsumerInternal,
  type ConsumptionStrategy,
  type DedupRecord,
  FailureRouter,
  rocketmqConsumer,
} from '../../../src/consumer/internal.ts';

export type Business<R> = (msg: ConsumerMessage<OrderPaid>, invocation: Invocation) => Promise<R> | R;

export interface Deps {
  dynamoDb: ReturnType<typeof createDynamoDb>;
  tables: { idempotency: string; ledger: string; accounts: string };
}

export interface ConsumerUnderTest<R> {
  strategy: (deps: Deps) => ConsumptionStrategy<R>;
  business: (deps: Deps) => Business<R>;
}

/**
 * The `rocketmqConsumer` middleware of `packages/runtime/src/consumer` assembled by hand around an
 * `ORDER_TOPIC PAID` payload, on fresh tables and queues of the points group: the strategy,
 * the business and the failure router's SQS client are the test's to choose.
 */
export async function consumerFixture<R>(options: ConsumerUnderTest<R>) {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const resources = await provisionLocal(endpoint, `mw${randomUUID().slice(0, 8)}`, { groups: [POINTS_GROUP] });
  const queue = resources.queues[POINTS_GROUP]!;
  const dynamoDb = createDynamoDb(aws);
  const sqs = createSqs(aws);
  const tables = {
    idempotency: resources.tables.idempotency,
    ledger: resources.tables.ledger,
    accounts: resources.tables.accounts,
  };
  const deps: Deps = { dynamoDb, tables };
  // The failure router's own client, so a test can put faults between it and the DLQ only.
  const routerSqs = createSqs(aws);
  const reports: RecordReport[] = [];
  const handler = middy<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal>().use(
    rocketmqConsumer(
      new ConsumerEngine<OrderPaid, R>({
        group: POINTS_GROUP,
        tagExpression: 'PAID',
        parsePayload: parseOrderPaid,
        keyOf: (order) => order.orderNo,
        strategy: options.strategy(deps),
        business: options.business(deps),
        failures: new FailureRouter({
          sqs: routerSqs,
          group: POINTS_GROUP,
          deadLetterQueueUrl: queue.deadLetter.url,
          schedule: IMMEDIATE_RETRIES,
        }),
        envelopeKeys: PROCESS_SIGNING_KEY.ring,
      }),
      (r) => reports.push(r),
    ),
  );

  return {
    resources,
    queue,
    tables,
    dynamoDb,
    sqs,
    routerSqs,
    handler,
    reports,
    record: (body: string, receiveCount = 1): SQSRecord => sqsRecord(body, queue.source.arn, receiveCount),
    invoke: (records: SQSRecord[]) => handler({ Records: records }, lambdaContext('consumer-under-test', 30_000)),
    send: async (...bodies: string[]) => {
      for (const body of bodies)
        await sqs.send(new SendMessageCommand({ QueueUrl: queue.source.url, MessageBody: body }));
    },
    poll: () =>
      pollOnce({
        sqs,
        queueUrl: queue.source.url,
        queueArn: queue.source.arn,
        handler,
        functionName: 'consumer-under-test',
      }),
    /** Polls like Lambda until the source queue is empty. */
    drain: async (maxPolls = 20) => {
      for (let i = 0; i < maxPolls; i++) {
        if (
          (
            await pollOnce({
              sqs,
              queueUrl: queue.source.url,
              queueArn: queue.source.arn,
              handler,
              functionName: 'consumer-under-test',
            })
          ).received === 0
        )
          return;
      }
      throw new Error('queue did not drain');
    },
    /** The last report of each key: its settlement and what became of the record. */
    byKey: () => Object.fromEntries(reports.map((r) => [r.key ?? r.sqsMessageId, r])),
    ledgerOf: async (userId: string) =>
      (
        await dynamoDb.send(
          new QueryCommand({
            TableName: tables.ledger,
            KeyConditionExpression: 'userId = :u',
            ExpressionAttributeValues: { ':u': userId },
            ConsistentRead: true,
          }),
        )
      ).Items ?? [],
    balance: async (userId: string): Promise<number> =>
      ((await dynamoDb.send(new GetCommand({ TableName: tables.accounts, Key: { userId }, ConsistentRead: true }))).Item
        ?.balance as number | undefined) ?? 0,
    dedupRecord: async (key: string) =>
      (
        await dynamoDb.send(
          new GetCommand({
            TableName: tables.idempotency,
            Key: { id: recordId(POINTS_GROUP, key) },
            ConsistentRead: true,
          }),
        )
      ).Item as DedupRecord | undefined,
    dedupRecords: async () =>
      (await dynamoDb.send(new ScanCommand({ TableName: tables.idempotency, ConsistentRead: true }))).Items ?? [],
    deadLetters: () => readAllMessages(sqs, queue.deadLetter.url),
    /** Messages in the source queue: visible, and in flight. */
    sourceDepth: () => queueDepth(sqs, queue.source.url),
  };
}
