import { createDynamoDb, createSqs } from '../../lib/aws/clients.ts';
import { consumerGroup, recordIdPrefix, TABLES } from '../../lib/config/resources.ts';
import { FailureRouter, packedTransactionalStrategy, transactionalStrategy } from '../../lib/consumer/index.ts';
import type { ConsumerRuntimeConfig, TablesOf } from '../../lib/consumer/lambda/consumer-config.ts';
import { type ConsumerHandler, consumerHandler } from '../../lib/consumer/lambda/consumer-handler.ts';
import { type ConsumerObservers, defineConsumer } from '../../lib/consumer/lambda/consumer-module.ts';
import { awardWrites } from '../../lib/points/ledger.ts';
import { orderPaidFingerprintFields, parseOrderPaid } from '../../lib/points/order-paid.ts';

export const POINTS = consumerGroup('point-consumer-group');
export const POINTS_GROUP = POINTS.group;

export interface PointsConsumerDeps extends ConsumerRuntimeConfig<TablesOf<typeof POINTS>>, ConsumerObservers {
  /** Lets tests and the chaos run put fault injection between the consumer and DynamoDB. */
  dynamoDb?: ReturnType<typeof createDynamoDb>;
}

/**
 * ORDER_TOPIC `PAID` → one ledger entry and one balance increment per order, exactly once.
 *
 * Batch packing (the catalogue's `tuning.packing`, on for this group): the records of one
 * batch commit in as few transactions as DynamoDB allows, with one account's increments
 * merged. Safe here because an award's writes are its own ledger entry (conditional, keyed by
 * order) and an unconditional balance `ADD`, so no record's condition depends on a
 * batch-mate's write. `packing: false` (or `CONSUMER_PACKING=off`) restores one transaction
 * per record; see docs/performance.md.
 */
export function createPointsConsumer(deps: PointsConsumerDeps): ConsumerHandler {
  const dynamoDb = deps.dynamoDb ?? createDynamoDb(deps.aws);
  const { tables } = deps;
  const now = deps.now ?? Date.now;
  const strategyOptions = {
    client: dynamoDb,
    tableName: tables.idempotency,
    group: POINTS.group,
    recordIdPrefix: recordIdPrefix(POINTS.group),
    ttlSeconds: deps.ttlSeconds,
    now,
  };
  return consumerHandler({
    definition: POINTS,
    parsePayload: parseOrderPaid,
    keyOf: (order) => order.orderNo,
    fingerprintFields: orderPaidFingerprintFields,
    strategy:
      (deps.packing ?? POINTS.tuning.packing)
        ? packedTransactionalStrategy({ ...strategyOptions, keyAttributes: keyAttributesOf(tables) })
        : transactionalStrategy(strategyOptions),
    failures: new FailureRouter({
      sqs: createSqs(deps.aws),
      group: POINTS.group,
      deadLetterQueueUrl: deps.deadLetterQueueUrl,
      schedule: deps.schedule,
    }),
    queues: deps.queueLifetimes,
    envelopeKeys: deps.envelopeKeys,
    business: (msg) => ({
      writes: awardWrites(
        msg.payload,
        { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
        tables,
        new Date(now()),
      ),
    }),
    onReport: deps.onReport,
    now,
  });
}

/** Physical table name → key attributes, from the resource catalogue (lets the packer see which puts hit one item). */
function keyAttributesOf(tables: Record<TablesOf<typeof POINTS>, string>): Record<string, string[]> {
  const keys = (def: { partitionKey: string; sortKey?: string }) => [
    def.partitionKey,
    ...(def.sortKey ? [def.sortKey] : []),
  ];
  return Object.fromEntries(POINTS.tables.map((t) => [tables[t], keys(TABLES[t])]));
}

export const consumer = defineConsumer(POINTS, createPointsConsumer);
export const handler = consumer.handler;
