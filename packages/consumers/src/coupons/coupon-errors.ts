import { ConsumptionError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { OutsideServiceCallError } from '../outside-service/index.ts';

/**
 * The coupon service could not answer now (5xx, 408/409/425/429, refused connection, malformed success): retry later
 * with the same Idempotency-Key.
 */
export class CouponServiceUnavailableError extends OutsideServiceCallError {
  override readonly name = 'CouponServiceUnavailableError';
  readonly classification = 'transient';
  readonly code = 'COUPON_SERVICE_UNAVAILABLE';
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
export class CouponGrantRejectedError extends OutsideServiceCallError {
  override readonly name = 'CouponGrantRejectedError';
  readonly classification = 'permanent';
  readonly code = 'COUPON_GRANT_REJECTED';
}

/**
 * The service answered with a redirect, which is not followed: the credentials would travel to
 * wherever it points, and a grant must reach the configured service or none. Transient, as a
 * maintenance page behind a load balancer redirects for a while and the message itself is sound;
 * a misconfigured URL shows in the oldest-message alarm long before the 17th delivery.
 */
export class CouponServiceRedirectError extends OutsideServiceCallError {
  override readonly name = 'CouponServiceRedirectError';
  readonly classification = 'transient';
  readonly code = 'COUPON_SERVICE_REDIRECT';
}

/**
 * The call's credentials could not be had or were refused (401 after one renewal, 403). Transient:
 * the message is sound and a fixed secret or policy lets it through, where a permanent class would
 * dead-letter every order until then.
 */
export class CouponServiceCredentialsError extends OutsideServiceCallError {
  override readonly name = 'CouponServiceCredentialsError';
  readonly classification = 'transient';
  readonly code = 'COUPON_SERVICE_CREDENTIALS';
}
