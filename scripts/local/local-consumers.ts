import type { ConsumerRuntimeConfig } from '../../lib/consumer/consumer-config.ts';
import type { ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import type { RecordReport } from '../../lib/idempotency/settlement.ts';
import type { CONSUMER_GROUPS, ConsumerGroupName } from '../../lib/config/resources.ts';
import type { ConsumerModule } from '../../lib/consumer/consumer-module.ts';
import { consumer as coupons } from '../../functions/coupon-consumer/handler.ts';
import { consumer as orderStatus } from '../../functions/order-status-consumer/handler.ts';
import { consumer as points } from '../../functions/points-consumer/handler.ts';

/** What the local run hands a consumer factory: the deployed config plus the local observers. */
export interface LocalConsumerDeps extends ConsumerRuntimeConfig {
  onReport: (report: RecordReport) => void;
  /** Base URL of the run's own coupon service stand-in. */
  couponServiceUrl: string;
}

/**
 * One consumer group the local run can drive: its catalogue name, the function name the
 * catalogue gives it, and the same factory the deployed handler module uses.
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

/** What the local run needs to know of a group, all of it read from the module's catalogue entry. */
function registration(module: ConsumerModule<(typeof CONSUMER_GROUPS)[number]>): ConsumerRegistration {
  const { definition } = module;
  const services: readonly string[] = 'services' in definition ? definition.services : [];
  return {
    group: definition.group,
    functionName: definition.functionName,
    create: (deps) => module.create({ ...deps, services: { 'coupon-service': deps.couponServiceUrl } }),
    usesCouponService: services.includes('coupon-service'),
    needsOrders: (definition.tables as readonly string[]).includes('orders'),
  };
}

/**
 * The consumers the local run knows: one handler module per catalogue group, everything else
 * derived from its entry. `test/unit/config/catalogue-wiring.test.ts` fails when a catalogue
 * group is missing here; groups without one are reported as not runnable locally.
 */
export const LOCAL_CONSUMERS: readonly ConsumerRegistration[] = [points, coupons, orderStatus].map(registration);

export function registrationOf(group: string): ConsumerRegistration | undefined {
  return LOCAL_CONSUMERS.find((r) => r.group === group);
}
