import { ConsumptionError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { OutsideServiceCallError } from '../outside-service/index.ts';

/** 5xx, 408/409/425/429, unreachable, a success without its id: retried with the same Idempotency-Key. */
export class NotificationServiceUnavailableError extends OutsideServiceCallError {
  override readonly name = 'NotificationServiceUnavailableError';
  readonly classification = 'transient';
  readonly code = 'NOTIFICATION_SERVICE_UNAVAILABLE';
}

/** No answer in time: the notification may have been sent; the retry's Idempotency-Key gets it back, not a second. */
export class NotificationServiceTimeoutError extends ConsumptionError {
  override readonly name = 'NotificationServiceTimeoutError';
  readonly classification = 'transient';
  readonly code = 'NOTIFICATION_SERVICE_TIMEOUT';
}

/** The service refused this notification (4xx): it would refuse it again. */
export class NotificationRejectedError extends OutsideServiceCallError {
  override readonly name = 'NotificationRejectedError';
  readonly classification = 'permanent';
  readonly code = 'NOTIFICATION_REJECTED';
}

/** A redirect, not followed (the credentials would go with it). */
export class NotificationServiceRedirectError extends OutsideServiceCallError {
  override readonly name = 'NotificationServiceRedirectError';
  readonly classification = 'transient';
  readonly code = 'NOTIFICATION_SERVICE_REDIRECT';
}

/** Credentials unavailable or refused: transient, a fixed secret lets the message through. */
export class NotificationServiceCredentialsError extends OutsideServiceCallError {
  override readonly name = 'NotificationServiceCredentialsError';
  readonly classification = 'transient';
  readonly code = 'NOTIFICATION_SERVICE_CREDENTIALS';
}
