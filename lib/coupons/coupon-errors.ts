import { ConsumptionError } from '../idempotency/errors.ts';

/** The coupon service could not answer now (5xx, 408/409/425/429, refused connection, malformed success): retry later with the same Idempotency-Key. */
export class CouponServiceUnavailableError extends ConsumptionError {
  override readonly name = 'CouponServiceUnavailableError';
  readonly classification = 'transient';
  readonly code = 'COUPON_SERVICE_UNAVAILABLE';
  constructor(
    message: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * No answer before the timeout. The grant may or may not have happened: the retry sends
 * the same Idempotency-Key, so the service answers it with the coupon it already granted.
 */
export class CouponServiceTimeoutError extends ConsumptionError {
  override readonly name = 'CouponServiceTimeoutError';
  readonly classification = 'transient';
  readonly code = 'COUPON_SERVICE_TIMEOUT';
}

/** The service refused the grant (4xx): the same request will be refused again. */
export class CouponGrantRejectedError extends ConsumptionError {
  override readonly name = 'CouponGrantRejectedError';
  readonly classification = 'permanent';
  readonly code = 'COUPON_GRANT_REJECTED';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}
