import type { ConsumerRuntimeConfig } from '../consumer/consumer-config.ts';
import type { ConsumerHandler } from '../consumer/consumer-handler.ts';
import type { RecordReport } from '../idempotency/settlement.ts';
import type { ConsumerGroupName } from '../config/resources.ts';
import { createCouponConsumer } from '../../functions/coupon-consumer/handler.ts';
import { createOrderStatusConsumer } from '../../functions/order-status-consumer/handler.ts';
import { createPointsConsumer } from '../../functions/points-consumer/handler.ts';

/** What the local run hands a consumer factory: the deployed config plus the local observers. */
export interface LocalConsumerDeps extends ConsumerRuntimeConfig {
  onReport: (report: RecordReport) => void;
  /** Base URL of the run's own coupon service stand-in. */
  couponServiceUrl: string;
}

/**
 * One consumer group the local run can drive: its catalogue name, the Lambda function
 * name it would have, and the same factory the deployed handler module uses.
 */
export interface ConsumerRegistration {
  readonly group: ConsumerGroupName;
  readonly functionName: string;
  readonly create: (deps: LocalConsumerDeps) => ConsumerHandler;
  /** Needs the coupon service stand-in running. */
  readonly usesCouponService?: boolean;
  /** Acts on existing orders: the run seeds them as the order service would have created them. */
  readonly needsOrders?: boolean;
}

/**
 * The consumers the local run knows, by group. Adding a group is one entry here: its
 * factory from `functions/<name>/handler.ts`. Groups of the catalogue
 * (`CONSUMER_GROUPS`) without an entry are reported as not runnable locally.
 */
export const LOCAL_CONSUMERS: readonly ConsumerRegistration[] = [
  { group: 'point-consumer-group', functionName: 'points-consumer', create: (deps) => createPointsConsumer(deps) },
  { group: 'coupon-consumer-group', functionName: 'coupon-consumer', create: (deps) => createCouponConsumer(deps), usesCouponService: true },
  { group: 'order-status-consumer-group', functionName: 'order-status-consumer', create: (deps) => createOrderStatusConsumer(deps), needsOrders: true },
];

export function registrationOf(group: string): ConsumerRegistration | undefined {
  return LOCAL_CONSUMERS.find((r) => r.group === group);
}
