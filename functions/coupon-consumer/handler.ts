import { createDynamoDb, createSqs } from '../../lib/aws/clients.ts';
import { CONSUMER_ENV, consumerConfigFromEnv, lazyHandler, type ConsumerRuntimeConfig } from '../../lib/consumer/consumer-config.ts';
import { consumerHandler, type ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import { CouponClient } from '../../lib/coupons/coupon-client.ts';
import { parseOrderPaidEvent } from '../../lib/orders/order-events.ts';
import { FailureRouter, InvalidConsumerConfigError, leaseStrategy, type RecordReport } from '../../lib/idempotency/index.ts';

export const COUPON_GROUP = 'coupon-consumer-group';
export const COUPON_TABLES = ['idempotency'] as const;

export interface CouponConsumerDeps extends ConsumerRuntimeConfig {
  /** Base URL of the coupon service (`COUPON_SERVICE_URL`). */
  couponServiceUrl: string;
  onReport?: (report: RecordReport) => void;
  now?: () => number;
  /** Added to the invocation's deadline to make the lease (default 5 s). */
  leaseMarginMs?: number;
  /** Time the coupon call leaves for completing the record (default 2 s). */
  couponReserveMs?: number;
  /** Fault injection and command recording between the consumer and AWS. */
  dynamoDb?: ReturnType<typeof createDynamoDb>;
  sqs?: ReturnType<typeof createSqs>;
}

/**
 * ORDER_TOPIC `PAID` → one coupon per order from the coupon service, in lease mode: the
 * grant is an HTTP call that cannot join a DynamoDB transaction. The coupon id is the
 * stored result a later duplicate gets back without calling the service again.
 */
export function createCouponConsumer(deps: CouponConsumerDeps): ConsumerHandler {
  const dynamoDb = deps.dynamoDb ?? createDynamoDb(deps.aws);
  const now = deps.now ?? Date.now;
  const coupons = new CouponClient({ baseUrl: couponServiceUrl(deps.couponServiceUrl), reserveMs: deps.couponReserveMs });
  return consumerHandler({
    group: COUPON_GROUP,
    tagExpression: 'PAID',
    parsePayload: parseOrderPaidEvent,
    keyOf: (order) => order.orderNo,
    // What the grant depends on: the same order for another user is a conflict, a new paidAt is not.
    fingerprintFields: (order) => ({ orderNo: order.orderNo, userId: order.userId }),
    strategy: leaseStrategy({ client: dynamoDb, tableName: deps.tables.idempotency!, group: COUPON_GROUP, ttlSeconds: deps.ttlSeconds, marginMs: deps.leaseMarginMs, now }),
    failures: new FailureRouter({ sqs: deps.sqs ?? createSqs(deps.aws), group: COUPON_GROUP, deadLetterQueueUrl: deps.deadLetterQueueUrl, schedule: deps.schedule }),
    queues: deps.queueLifetimes,
    business: (msg, context) =>
      coupons.grant({ orderNo: msg.payload.orderNo, userId: msg.payload.userId }, { idempotencyKey: msg.key, remainingMs: context.getRemainingTimeInMillis() }),
    onReport: deps.onReport,
    now,
  });
}

function couponServiceUrl(value: string | undefined): string {
  try {
    const url = new URL(value ?? '');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError(`unsupported protocol ${url.protocol}`);
    return url.toString();
  } catch (error) {
    throw new InvalidConsumerConfigError(`${CONSUMER_ENV.couponServiceUrl} must be an http(s) URL (got ${JSON.stringify(value ?? '')}): ${(error as Error).message}`);
  }
}

export const handler = lazyHandler(() =>
  createCouponConsumer({ ...consumerConfigFromEnv(COUPON_TABLES), couponServiceUrl: process.env[CONSUMER_ENV.couponServiceUrl] ?? '' }),
);
