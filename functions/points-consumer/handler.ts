import { createDynamoDb, createSqs } from '../../lib/aws/clients.ts';
import { consumerConfigFromEnv, lazyHandler, type ConsumerRuntimeConfig } from '../../lib/consumer/consumer-config.ts';
import { consumerHandler, type ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import { FailureRouter } from '../../lib/idempotency/failure-router.ts';
import type { RecordReport } from '../../lib/idempotency/settlement.ts';
import { transactionalStrategy } from '../../lib/idempotency/strategies/transactional.ts';
import { awardWrites } from '../../lib/points/ledger.ts';
import { parseOrderPaid } from '../../lib/points/order-paid.ts';

export const POINTS_GROUP = 'point-consumer-group';
export const POINTS_TABLES = ['idempotency', 'ledger', 'accounts'] as const;

export interface PointsConsumerDeps extends ConsumerRuntimeConfig {
  onReport?: (report: RecordReport) => void;
  now?: () => number;
  /** Lets tests and the chaos run put fault injection between the consumer and DynamoDB. */
  dynamoDb?: ReturnType<typeof createDynamoDb>;
}

/** ORDER_TOPIC `PAID` → one ledger entry and one balance increment per order, exactly once. */
export function createPointsConsumer(deps: PointsConsumerDeps): ConsumerHandler {
  const dynamoDb = deps.dynamoDb ?? createDynamoDb(deps.aws);
  const tables = { idempotency: deps.tables.idempotency!, ledger: deps.tables.ledger!, accounts: deps.tables.accounts! };
  const now = deps.now ?? Date.now;
  return consumerHandler({
    group: POINTS_GROUP,
    tagExpression: 'PAID',
    parsePayload: parseOrderPaid,
    keyOf: (order) => order.orderNo,
    fingerprintFields: (order) => ({ orderNo: order.orderNo, userId: order.userId, points: order.points }),
    strategy: transactionalStrategy({ client: dynamoDb, tableName: tables.idempotency, group: POINTS_GROUP, ttlSeconds: deps.ttlSeconds, now }),
    failures: new FailureRouter({ sqs: createSqs(deps.aws), group: POINTS_GROUP, deadLetterQueueUrl: deps.deadLetterQueueUrl, schedule: deps.schedule }),
    business: (msg) => ({ writes: awardWrites(msg.payload, msg.message.msgId, tables, new Date(now())) }),
    onReport: deps.onReport,
    now,
  });
}

export const handler = lazyHandler(() => createPointsConsumer(consumerConfigFromEnv(POINTS_TABLES)));
