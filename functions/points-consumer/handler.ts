import { createDynamoDb, createSqs } from '../../lib/aws/clients.ts';
import { consumerConfigFromEnv, lazyHandler, type ConsumerRuntimeConfig } from '../../lib/consumer/consumer-config.ts';
import { consumerHandler, type ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import { TABLES } from '../../lib/config/resources.ts';
import { awardWrites } from '../../lib/points/ledger.ts';
import { orderPaidFingerprintFields, parseOrderPaid } from '../../lib/points/order-paid.ts';
import { FailureRouter, packedTransactionalStrategy, type RecordReport, transactionalStrategy } from '../../lib/idempotency/index.ts';

export const POINTS_GROUP = 'point-consumer-group';
export const POINTS_TABLES = ['idempotency', 'ledger', 'accounts'] as const;

export interface PointsConsumerDeps extends ConsumerRuntimeConfig {
  onReport?: (report: RecordReport) => void;
  now?: () => number;
  /** Lets tests and the chaos run put fault injection between the consumer and DynamoDB. */
  dynamoDb?: ReturnType<typeof createDynamoDb>;
  /**
   * Batch packing (default on): the records of one batch commit in as few transactions as
   * DynamoDB allows, with one account's increments merged. Safe here because an award's
   * writes are its own ledger entry (conditional, keyed by order) and an unconditional
   * balance `ADD`, so no record's condition depends on a batch-mate's write. `false` (or
   * `POINTS_PACKING=off`) restores one transaction per record; see docs/performance.md.
   */
  packing?: boolean;
}

/** ORDER_TOPIC `PAID` → one ledger entry and one balance increment per order, exactly once. */
export function createPointsConsumer(deps: PointsConsumerDeps): ConsumerHandler {
  const dynamoDb = deps.dynamoDb ?? createDynamoDb(deps.aws);
  const tables = { idempotency: deps.tables.idempotency!, ledger: deps.tables.ledger!, accounts: deps.tables.accounts! };
  const now = deps.now ?? Date.now;
  const strategyOptions = { client: dynamoDb, tableName: tables.idempotency, group: POINTS_GROUP, ttlSeconds: deps.ttlSeconds, now };
  return consumerHandler({
    group: POINTS_GROUP,
    tagExpression: 'PAID',
    parsePayload: parseOrderPaid,
    keyOf: (order) => order.orderNo,
    fingerprintFields: orderPaidFingerprintFields,
    strategy: (deps.packing ?? true)
      ? packedTransactionalStrategy({ ...strategyOptions, keyAttributes: keyAttributesOf(tables) })
      : transactionalStrategy(strategyOptions),
    failures: new FailureRouter({ sqs: createSqs(deps.aws), group: POINTS_GROUP, deadLetterQueueUrl: deps.deadLetterQueueUrl, schedule: deps.schedule }),
    queues: deps.queueLifetimes,
    business: (msg) => ({ writes: awardWrites(msg.payload, { msgId: msg.message.msgId, fingerprint: msg.fingerprint }, tables, new Date(now())) }),
    onReport: deps.onReport,
    now,
  });
}

/** Physical table name → key attributes, from the resource catalogue (lets the packer see which puts hit one item). */
function keyAttributesOf(tables: { idempotency: string; ledger: string; accounts: string }): Record<string, string[]> {
  const keys = (def: { partitionKey: string; sortKey?: string }) => [def.partitionKey, ...(def.sortKey ? [def.sortKey] : [])];
  return { [tables.idempotency]: keys(TABLES.idempotency), [tables.ledger]: keys(TABLES.ledger), [tables.accounts]: keys(TABLES.accounts) };
}

export const handler = lazyHandler(() =>
  createPointsConsumer({ ...consumerConfigFromEnv(POINTS_TABLES), packing: process.env.POINTS_PACKING !== 'off' }),
);
