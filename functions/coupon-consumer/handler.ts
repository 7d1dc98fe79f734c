import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { createDynamoDb, createSqs } from '../../lib/aws/clients.ts';
import { serviceCredentials } from '../../lib/aws/service-credentials.ts';
import { consumerGroup, OUTSIDE_SERVICES, recordIdPrefix } from '../../lib/config/resources.ts';
import { endpointRefusal, type ServiceEndpoint } from '../../lib/config/service-endpoint.ts';
import { FailureRouter, InvalidConsumerConfigError, leaseStrategy } from '../../lib/consumer/index.ts';
import type { ConsumerRuntimeConfig, TablesOf } from '../../lib/consumer/lambda/consumer-config.ts';
import { type ConsumerHandler, consumerHandler } from '../../lib/consumer/lambda/consumer-handler.ts';
import { type ConsumerObservers, defineConsumer } from '../../lib/consumer/lambda/consumer-module.ts';
import { CouponClient } from '../../lib/coupons/coupon-client.ts';
import { parseOrderPaidEvent } from '../../lib/orders/order-events.ts';

export const COUPONS = consumerGroup('coupon-consumer-group');
export const COUPON_GROUP = COUPONS.group;

export interface CouponConsumerDeps extends ConsumerRuntimeConfig<TablesOf<typeof COUPONS>>, ConsumerObservers {
  /** Base URL of a coupon service called without credentials (default: the `coupon-service` of `services`). */
  couponServiceUrl?: string;
  /** Credentials that sign calls to a SigV4 coupon service (default: the SDK's default provider chain). */
  awsCredentials?: AwsCredentialIdentityProvider;
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
  const endpoint = couponServiceEndpoint(deps.couponServiceUrl ?? deps.services?.['coupon-service']);
  const coupons = new CouponClient({
    baseUrl: endpoint.url,
    credentials: serviceCredentials(endpoint.auth, deps),
    reserveMs: deps.couponReserveMs,
  });
  return consumerHandler({
    definition: COUPONS,
    parsePayload: parseOrderPaidEvent,
    keyOf: (order) => order.orderNo,
    // What the grant depends on: the same order for another user is a conflict, a new paidAt is not.
    fingerprintFields: (order) => ({ orderNo: order.orderNo, userId: order.userId }),
    strategy: leaseStrategy({
      client: dynamoDb,
      tableName: deps.tables.idempotency,
      group: COUPONS.group,
      recordIdPrefix: recordIdPrefix(COUPONS.group),
      ttlSeconds: deps.ttlSeconds,
      marginMs: deps.leaseMarginMs,
      now,
    }),
    failures: new FailureRouter({
      sqs: deps.sqs ?? createSqs(deps.aws),
      group: COUPONS.group,
      deadLetterQueueUrl: deps.deadLetterQueueUrl,
      schedule: deps.schedule,
    }),
    queues: deps.queueLifetimes,
    envelopeKeys: deps.envelopeKeys,
    business: (msg, invocation) =>
      coupons.grant(
        { orderNo: msg.payload.orderNo, userId: msg.payload.userId },
        { idempotencyKey: msg.key, remainingMs: invocation.remainingMs() },
      ),
    onReport: deps.onReport,
    now,
  });
}

/**
 * The coupon service as configured, refused at cold start where the synth refuses it too (plain http, no credentials
 * off loopback).
 */
function couponServiceEndpoint(value: string | ServiceEndpoint | undefined): ServiceEndpoint {
  const endpoint: ServiceEndpoint = typeof value === 'object' ? value : { url: value ?? '', auth: { kind: 'none' } };
  const refusal = endpointRefusal(endpoint);
  if (refusal) throw new InvalidConsumerConfigError(`${OUTSIDE_SERVICES['coupon-service'].env} ${refusal}`);
  return endpoint;
}

export const consumer = defineConsumer(COUPONS, createCouponConsumer);
export const handler = consumer.handler;
