import { randomUUID } from 'node:crypto';
import { IdempotentStandIn } from './idempotent-stand-in.ts';

/** One coupon the stand-in granted. */
export interface GrantedCoupon {
  readonly couponId: string;
  readonly idempotencyKey: string;
  readonly request: unknown;
  readonly grantedAt: string;
}

/** The coupon service as the local run needs it: one coupon per `Idempotency-Key` (`IdempotentStandIn`). */
export class LocalCouponService extends IdempotentStandIn<GrantedCoupon> {
  static start(): Promise<LocalCouponService> {
    return new LocalCouponService().listen();
  }

  /** The coupons granted, by key. */
  get grants(): ReadonlyMap<string, GrantedCoupon> {
    return this.results;
  }

  protected make(idempotencyKey: string, request: unknown): GrantedCoupon {
    return { couponId: `CPN-${randomUUID()}`, idempotencyKey, request, grantedAt: new Date().toISOString() };
  }
}
