import { OUTSIDE_SERVICES } from '@rocketmq-lambda/runtime/config/index.ts';
import { z } from 'zod';
import { OutsideServiceCall, type ServiceCallOptions } from '../outside-service/index.ts';
import {
  CouponGrantRejectedError,
  CouponServiceCredentialsError,
  CouponServiceRedirectError,
  CouponServiceTimeoutError,
  CouponServiceUnavailableError,
} from './coupon-errors.ts';

export { ANSWER_EXCERPT_CHARS, MAX_ANSWER_BYTES } from '../outside-service/index.ts';

export interface CouponGrantRequest {
  orderNo: string;
  userId: string;
}

export interface CouponGrantOptions {
  /** Sent as the `Idempotency-Key` header: the service answers a repeated key with the first grant. */
  idempotencyKey: string;
  /** Time left in the invocation (`context.getRemainingTimeInMillis()`). */
  remainingMs: number;
}

export type CouponClientOptions = Omit<ServiceCallOptions, 'service'>;

/** Path of the grant endpoint under the base URL. */
export const COUPON_GRANT_PATH = OUTSIDE_SERVICES['coupon-service'].call.path;

const grantResponseSchema = z.object({ couponId: z.string().min(1).max(128) });

/**
 * HTTP client of the coupon service. One grant per order: the order number travels as
 * the `Idempotency-Key` header (`OutsideServiceCall`), and failures are classified as the
 * coupon service's own (`coupon-errors.ts`).
 */
export class CouponClient {
  private readonly call: OutsideServiceCall;

  constructor(options: CouponClientOptions) {
    this.call = new OutsideServiceCall(
      { ...options, service: 'coupon-service' },
      {
        unavailable: CouponServiceUnavailableError,
        timeout: CouponServiceTimeoutError,
        rejected: CouponGrantRejectedError,
        redirect: CouponServiceRedirectError,
        credentials: CouponServiceCredentialsError,
      },
    );
  }

  /** The timeout for a call made now: what the invocation has left minus the reserve, capped. */
  timeoutFor(remainingMs: number): number {
    return this.call.timeoutFor(remainingMs);
  }

  /** Grants the order's coupon and returns its id. */
  async grant(request: CouponGrantRequest, options: CouponGrantOptions): Promise<string> {
    const subject = { ...options, thing: 'coupon', of: { kind: 'order', id: request.orderNo } };
    const answer = await this.call.send(request, subject);
    return this.call.settle(answer, subject, grantResponseSchema, 'couponId').couponId;
  }
}
