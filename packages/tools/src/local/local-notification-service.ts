import { randomUUID } from 'node:crypto';
import type { PointsNotification } from '@rocketmq-lambda/consumers/notifications/index.ts';
import { IdempotentStandIn } from './idempotent-stand-in.ts';

/** One notification the stand-in sent. */
export interface SentNotification {
  readonly notificationId: string;
  /** The award event's id, as the consumer sent it in `Idempotency-Key`. */
  readonly idempotencyKey: string;
  readonly request: PointsNotification;
  readonly sentAt: string;
}

/**
 * The notification service as the local run and the tests need it: one notification per
 * `Idempotency-Key` (`IdempotentStandIn`), and the account a run judges "one notification per
 * award" by: a user is told twice when one award (its order and user) was notified under two keys,
 * which the service's own dedup cannot absorb (a consumer keying on the msgId would do that).
 */
export class LocalNotificationService extends IdempotentStandIn<SentNotification> {
  static start(): Promise<LocalNotificationService> {
    return new LocalNotificationService().listen();
  }

  /** The notifications sent, by event id. */
  get sent(): ReadonlyMap<string, SentNotification> {
    return this.results;
  }

  /** Awards notified under more than one event id, each with its keys: users told twice. */
  doubleNotifications(): Array<{ award: string; keys: string[] }> {
    const byAward = new Map<string, string[]>();
    for (const { idempotencyKey, request } of this.results.values()) {
      const award = `${request.orderNo}/${request.userId}`;
      byAward.set(award, [...(byAward.get(award) ?? []), idempotencyKey]);
    }
    return [...byAward].filter(([, keys]) => keys.length > 1).map(([award, keys]) => ({ award, keys }));
  }

  protected override refusalOf(request: unknown): string | undefined {
    const r = request as Partial<PointsNotification>;
    return typeof r.orderNo === 'string' && typeof r.userId === 'string' && typeof r.points === 'number'
      ? undefined
      : 'orderNo, userId and points are required';
  }

  protected make(idempotencyKey: string, request: unknown): SentNotification {
    return {
      notificationId: `NTF-${randomUUID()}`,
      idempotencyKey,
      request: request as PointsNotification,
      sentAt: new Date().toISOString(),
    };
  }
}
