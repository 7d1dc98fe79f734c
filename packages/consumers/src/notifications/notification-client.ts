import { OUTSIDE_SERVICES } from '@rocketmq-lambda/runtime/config/index.ts';
import { z } from 'zod';
import { OutsideServiceCall, type OutsideServiceConfig, serviceEndpointOf } from '../outside-service/index.ts';
import {
  NotificationRejectedError,
  NotificationServiceCredentialsError,
  NotificationServiceRedirectError,
  NotificationServiceTimeoutError,
  NotificationServiceUnavailableError,
} from './notification-errors.ts';

/** Path of the notification endpoint under the base URL. */
export const NOTIFICATION_PATH = OUTSIDE_SERVICES['notification-service'].call.path;

/** What the user is told: the award of one event. */
export interface PointsNotification {
  readonly eventId: string;
  readonly userId: string;
  readonly orderNo: string;
  readonly points: number;
}

const sentSchema = z.object({ notificationId: z.string().min(1).max(128) });

/**
 * HTTP client of the notification service: one notification per award event, the event id as the
 * `Idempotency-Key` (a second line of defence behind the lease: the service answers a repeated key
 * with the notification it already sent).
 */
export class NotificationClient {
  constructor(private readonly call: OutsideServiceCall) {}

  /** Sends the award's notification (or gets back the one sent for its event id) and returns its id. */
  async notify(notification: PointsNotification, options: { remainingMs: number }): Promise<string> {
    const subject = {
      idempotencyKey: notification.eventId,
      remainingMs: options.remainingMs,
      thing: 'notification',
      of: { kind: 'event', id: notification.eventId },
    };
    const answer = await this.call.send(notification, subject);
    return this.call.settle(answer, subject, sentSchema, 'notificationId').notificationId;
  }
}

/**
 * The notification service as configured, refused at cold start where the synth refuses it too (plain
 * http, no credentials off loopback).
 */
export function notificationClientOf(config: OutsideServiceConfig): NotificationClient {
  return new NotificationClient(
    new OutsideServiceCall(
      { ...serviceEndpointOf('notification-service', config), service: 'notification-service' },
      {
        unavailable: NotificationServiceUnavailableError,
        timeout: NotificationServiceTimeoutError,
        rejected: NotificationRejectedError,
        redirect: NotificationServiceRedirectError,
        credentials: NotificationServiceCredentialsError,
      },
    ),
  );
}
