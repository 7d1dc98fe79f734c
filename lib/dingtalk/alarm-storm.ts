import type { Logger } from '@aws-lambda-powertools/logger';
import type { AlarmNotification } from './alarm-event.ts';
import { type MessageOptions, renderSummary } from './alarm-message.ts';
import type { Clock } from './clock.ts';
import {
  DeliveryBudgetExhaustedError,
  type DingTalkError,
  RobotRejectedError,
  RobotThrottledError,
  RobotUnavailableError,
} from './errors.ts';
import { type PendingAlarm, type PendingAlarmStore, pendingKey } from './pending-alarms.ts';
import type { RobotAnswer, RobotClient } from './robot-client.ts';
import type { RobotRateLimiter } from './robot-rate-limit.ts';
import type { WebhookConfigSource } from './webhook-secret.ts';

/**
 * Delivery under DingTalk's 20-messages-a-minute rule without dropping anything.
 *
 * Every invocation first records its alarm in the robot's backlog, then loops: take a permit from
 * the robot's shared token bucket, claim its own alarm plus up to `maxPerMessage` - 1 backlog
 * alarms nobody is posting (a lease named after its own SNS MessageId), post them as one message
 * (a detailed one for a single alarm, a summary for several) and mark them delivered.
 *
 * No alarm can be dropped because an invocation returns only when it holds no claims and its own
 * alarm is delivered or claimed by another invocation, and a claimer keeps its claims until they
 * are delivered. If a claimer dies, its leases run out and the alarms are free again: its own
 * Lambda retry (same MessageId, so same claim name) or any later invocation takes them. When the
 * failure is final (DingTalk rejects the configuration) the invocation fails; its Lambda retries take
 * its claims up again, and its event ends in the DLQ if the robot stays broken.
 * In a storm most invocations find their alarm already claimed into somebody's summary and
 * return at once; in quiet times each alarm gets its own detailed message immediately.
 *
 * Each HTTP attempt uses its own permit, so retries count against the budget as well.
 */
export interface DispatchPolicy {
  /** Failed attempts (throttled, unreachable) before this invocation gives up and fails. */
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** After a 410100 despite our budget (someone else uses the robot): everyone holds off this long. */
  throttlePauseMs: number;
  /** Claim duration; longer than a send can take, so a live claimer never loses its claim. */
  leaseMs: number;
  /** A permit older than this is discarded unused; part of the rate-limit proof. */
  maxDispatchDelayMs: number;
  maxPerMessage: number;
}

export const DEFAULT_DISPATCH_POLICY: DispatchPolicy = {
  maxAttempts: 4,
  backoffBaseMs: 1_000,
  backoffMaxMs: 15_000,
  throttlePauseMs: 60_000,
  leaseMs: 60_000,
  maxDispatchDelayMs: 5_000,
  maxPerMessage: 20,
};

export type DeliveryMetric =
  | 'MessagesSent'
  | 'SummariesSent'
  | 'AlarmsPosted'
  | 'RobotThrottled'
  | 'RobotUnavailable'
  | 'DingTalkConfigurationError'
  | 'DingTalkMessageRejected'
  | 'AlarmDeliveryDeferred';

export interface DeliveryMetrics {
  count(metric: DeliveryMetric, value?: number): void;
}

/** Powertools' logger (structured JSON, correlated with the invocation). */
export type DeliveryLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

export interface DispatchResult {
  /** Messages this invocation posted (its own alarm may have gone out in another's summary). */
  messagesSent: number;
  alarmsPosted: number;
  answers: RobotAnswer[];
}

export interface AlarmDispatcherDeps {
  source: WebhookConfigSource;
  robot: RobotClient;
  limiter: RobotRateLimiter;
  backlog: PendingAlarmStore;
  clock: Clock;
  logger: DeliveryLogger;
  metrics: DeliveryMetrics;
  /** Rendering settings that do not come from the secret. */
  messageOptions: Omit<MessageOptions, 'keyword' | 'atMobiles'>;
  policy?: Partial<DispatchPolicy>;
  random?: () => number;
}

export class AlarmDispatcher {
  private readonly policy: DispatchPolicy;
  private readonly random: () => number;

  constructor(private readonly deps: AlarmDispatcherDeps) {
    this.policy = { ...DEFAULT_DISPATCH_POLICY, ...deps.policy };
    this.random = deps.random ?? Math.random;
  }

  /** Resolves when the alarm is delivered or safely in another invocation's hands; throws otherwise. */
  async deliver(notification: AlarmNotification, deadline: number): Promise<DispatchResult> {
    const { source, backlog, limiter, clock, logger, metrics } = this.deps;
    const robotId = source.robotId;
    const ownKey = pendingKey(notification);
    await backlog.add(robotId, ownKey, notification, clock.now());

    const result: DispatchResult = { messagesSent: 0, alarmsPosted: 0, answers: [] };
    let failures = 0;
    let lastError: DingTalkError | undefined;
    let refreshedVersion: string | null = null;
    // Alarms this invocation has claimed and not yet delivered; it owes them a message. A Lambda
    // retry of this event starts with whatever the failed attempt still held.
    const held = new Set(
      (await backlog.list(robotId)).filter((p) => p.claimedBy === ownKey && p.key !== ownKey).map((p) => p.key),
    );

    for (;;) {
      let now = clock.now();
      if (now >= deadline) {
        metrics.count('AlarmDeliveryDeferred');
        throw new DeliveryBudgetExhaustedError(
          `alarm ${notification.id} not delivered within this invocation; failing it so Lambda retries`,
          lastError,
        );
      }
      const own = await backlog.get(robotId, ownKey);
      now = clock.now();
      const isFree = (p: PendingAlarm) => p.claimedBy === null || (p.leaseUntil ?? 0) < now;
      const ownNeedsUs = own !== null && (own.claimedBy === ownKey || isFree(own));
      // Done when our alarm is delivered or in another live invocation's hands and we owe nothing.
      if (!ownNeedsUs && held.size === 0) return result;

      const permit = await limiter.tryAcquire(robotId, now);
      if (!permit.granted) {
        // Jitter spreads the waiters of a storm so they do not all hit the bucket at once.
        const wait = Math.max(permit.retryAt - now, 0) + this.random() * 1_000;
        await clock.sleep(Math.min(wait, Math.max(deadline - now, 0)));
        continue;
      }
      const grantedAt = now;

      // Ours first (own alarm, then what we already hold), then everything nobody is posting.
      const pending = await backlog.list(robotId);
      const candidates = [
        ...(ownNeedsUs ? [ownKey] : []),
        ...pending.filter((p) => p.key !== ownKey && held.has(p.key)).map((p) => p.key),
        ...pending.filter((p) => p.key !== ownKey && !held.has(p.key) && isFree(p)).map((p) => p.key),
      ].slice(0, this.policy.maxPerMessage);
      const leaseUntil = now + this.policy.leaseMs;
      const claims = await Promise.all(candidates.map((key) => backlog.claim(robotId, key, ownKey, leaseUntil, now)));
      const claimed = candidates.flatMap((key, i) => {
        const stored = claims[i];
        if (!stored) {
          // Delivered by someone, or taken over after our lease ran out: no longer ours to post.
          held.delete(key);
          return [];
        }
        if (key !== ownKey) held.add(key);
        // The invocation that received an alarm has its full text; the backlog copy is shortened.
        return [{ key, notification: key === ownKey ? notification : stored }];
      });
      if (claimed.length === 0) continue;

      const config = await source.current();
      const notifications = claimed.map((p) => p.notification);
      const { message, included } = renderSummary(notifications, {
        ...this.deps.messageOptions,
        keyword: config.keyword,
        atMobiles: config.atMobiles,
      });
      // Alarms that did not fit stay claimed by us and go into our next message.
      const includedKeys = claimed.filter((p) => included.includes(p.notification.id)).map((p) => p.key);

      // Too late to honour the bound the bucket promises: ask for a fresh permit.
      if (clock.now() - grantedAt > this.policy.maxDispatchDelayMs) continue;

      try {
        const answer = await this.deps.robot.send(config, message);
        await backlog.markDelivered(robotId, includedKeys, clock.now());
        for (const key of includedKeys) held.delete(key);
        result.messagesSent += 1;
        result.alarmsPosted += includedKeys.length;
        result.answers.push(answer);
        metrics.count('MessagesSent');
        metrics.count('AlarmsPosted', includedKeys.length);
        if (includedKeys.length > 1) metrics.count('SummariesSent');
        logger.info('DingTalk message posted', {
          robotId,
          alarms: includedKeys.length,
          summary: includedKeys.length > 1,
          errcode: answer.errcode,
          errmsg: answer.errmsg,
        });
      } catch (err) {
        // Claims are kept on failure: owners that saw their alarm claimed have already returned.
        if (err instanceof RobotThrottledError) {
          metrics.count('RobotThrottled');
          logger.warn('DingTalk throttled the robot; pausing it for everyone', {
            robotId,
            errcode: err.errcode,
            errmsg: err.errmsg,
            pauseMs: this.policy.throttlePauseMs,
          });
          await limiter.pauseUntil(robotId, clock.now() + this.policy.throttlePauseMs, clock.now());
        } else if (err instanceof RobotUnavailableError) {
          metrics.count('RobotUnavailable');
          logger.warn('DingTalk unavailable; backing off', {
            robotId,
            error: err.message,
            ...(err.errcode !== undefined ? { errcode: err.errcode, errmsg: err.errmsg } : {}),
          });
        } else if (err instanceof RobotRejectedError) {
          if (err.kind === 'configuration' && refreshedVersion !== config.version) {
            // The secret may have been rotated since this container cached it.
            refreshedVersion = config.version;
            const fresh = await source.refresh();
            if (fresh.version !== config.version) {
              logger.info('webhook secret changed; retrying with the new one', { robotId });
              continue;
            }
          }
          // Final for this invocation. Our claims stay under our name: Lambda's retry of this event
          // takes them up again, and once the lease runs out so can any later invocation.
          // Final for this invocation. Our claims stay under our name: Lambda's retry of this event
          // takes them up again, and once the lease runs out so can any later invocation.
          metrics.count(err.kind === 'configuration' ? 'DingTalkConfigurationError' : 'DingTalkMessageRejected');
          logger.error('DingTalk rejected the message; not retrying', {
            robotId,
            errcode: err.errcode,
            errmsg: err.errmsg,
            kind: err.kind,
          });
          throw err;
        } else {
          throw err;
        }
        lastError = err;
        failures += 1;
        if (failures >= this.policy.maxAttempts) {
          metrics.count('AlarmDeliveryDeferred');
          throw new DeliveryBudgetExhaustedError(
            `gave up after ${failures} failed attempts (${err.message}); failing so Lambda retries`,
            err,
          );
        }
        if (err instanceof RobotUnavailableError) {
          const backoff = Math.min(this.policy.backoffMaxMs, this.policy.backoffBaseMs * 2 ** (failures - 1));
          await clock.sleep(Math.min(backoff * (0.5 + this.random() / 2), Math.max(deadline - clock.now(), 0)));
        }
      }
    }
  }
}
