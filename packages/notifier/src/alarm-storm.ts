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
    const { source, backlog, clock } = this.deps;
    const robotId = source.robotId;
    const ownKey = pendingKey(notification);
    await backlog.add(robotId, ownKey, notification, clock.now());
    // Alarms this invocation has claimed and not yet delivered; it owes them a message. A Lambda
    // retry of this event starts with whatever the failed attempt still held.
    const held = new Set(
      (await backlog.list(robotId)).filter((p) => p.claimedBy === ownKey && p.key !== ownKey).map((p) => p.key),
    );
    const delivery: Delivery = {
      notification,
      robotId,
      ownKey,
      deadline,
      held,
      failures: 0,
      refreshedVersion: null,
      result: { messagesSent: 0, alarmsPosted: 0, answers: [] },
    };
    while (!(await this.round(delivery))) {
      // Each round takes a permit, claims what it can and posts it; it says when nothing is left to do.
    }
    return delivery.result;
  }

  /** One permit, one claim, one message. True when the invocation owes nothing any more. */
  private async round(delivery: Delivery): Promise<boolean> {
    const { backlog, clock, metrics } = this.deps;
    if (clock.now() >= delivery.deadline) {
      metrics.count('AlarmDeliveryDeferred');
      throw new DeliveryBudgetExhaustedError(
        `alarm ${delivery.notification.id} not delivered within this invocation; failing it so Lambda retries`,
        delivery.lastError,
      );
    }
    const own = await backlog.get(delivery.robotId, delivery.ownKey);
    const now = clock.now();
    const ownNeedsUs = own !== null && (own.claimedBy === delivery.ownKey || isFree(own, now));
    // Done when our alarm is delivered or in another live invocation's hands and we owe nothing.
    if (!ownNeedsUs && delivery.held.size === 0) return true;
    if (!(await this.permit(delivery, now))) return false;
    const claimed = await this.claim(delivery, ownNeedsUs, now);
    if (claimed.length === 0) return false;
    await this.post(delivery, claimed, now);
    return false;
  }

  /** A permit from the robot's shared bucket, or a (jittered) wait for the next one. */
  private async permit(delivery: Delivery, now: number): Promise<boolean> {
    const permit = await this.deps.limiter.tryAcquire(delivery.robotId, now);
    if (permit.granted) return true;
    // Jitter spreads the waiters of a storm so they do not all hit the bucket at once.
    const wait = Math.max(permit.retryAt - now, 0) + this.random() * 1_000;
    await this.deps.clock.sleep(Math.min(wait, Math.max(delivery.deadline - now, 0)));
    return false;
  }

  /** Ours first (own alarm, then what we already hold), then everything nobody is posting, up to one message. */
  private async claim(delivery: Delivery, ownNeedsUs: boolean, now: number): Promise<Claimed[]> {
    const { backlog } = this.deps;
    const { robotId, ownKey, held } = delivery;
    const pending = await backlog.list(robotId);
    const candidates = [
      ...(ownNeedsUs ? [ownKey] : []),
      ...pending.filter((p) => p.key !== ownKey && held.has(p.key)).map((p) => p.key),
      ...pending.filter((p) => p.key !== ownKey && !held.has(p.key) && isFree(p, now)).map((p) => p.key),
    ].slice(0, this.policy.maxPerMessage);
    const leaseUntil = now + this.policy.leaseMs;
    const claims = await Promise.all(candidates.map((key) => backlog.claim(robotId, key, ownKey, leaseUntil, now)));
    return candidates.flatMap((key, i) => {
      const stored = claims[i];
      if (!stored) {
        // Delivered by someone, or taken over after our lease ran out: no longer ours to post.
        held.delete(key);
        return [];
      }
      if (key !== ownKey) held.add(key);
      // The invocation that received an alarm has its full text; the backlog copy is shortened.
      return [{ key, notification: key === ownKey ? delivery.notification : stored }];
    });
  }

  /** Posts the claimed alarms as one message and marks those it included delivered. */
  private async post(delivery: Delivery, claimed: Claimed[], grantedAt: number): Promise<void> {
    const { source, clock } = this.deps;
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
    if (clock.now() - grantedAt > this.policy.maxDispatchDelayMs) return;
    let answer: RobotAnswer;
    try {
      answer = await this.deps.robot.send(config, message);
    } catch (err) {
      // Claims are kept on failure: owners that saw their alarm claimed have already returned.
      return this.failed(delivery, err, config.version);
    }
    await this.deps.backlog.markDelivered(delivery.robotId, includedKeys, clock.now());
    for (const key of includedKeys) delivery.held.delete(key);
    this.posted(delivery, includedKeys.length, answer);
  }

  private posted(delivery: Delivery, alarms: number, answer: RobotAnswer): void {
    const { metrics, logger } = this.deps;
    delivery.result.messagesSent += 1;
    delivery.result.alarmsPosted += alarms;
    delivery.result.answers.push(answer);
    metrics.count('MessagesSent');
    metrics.count('AlarmsPosted', alarms);
    if (alarms > 1) metrics.count('SummariesSent');
    logger.info('DingTalk message posted', {
      robotId: delivery.robotId,
      alarms,
      summary: alarms > 1,
      errcode: answer.errcode,
      errmsg: answer.errmsg,
    });
  }

  /** A failed send: paused, backed off, retried with a rotated secret, or final (thrown). */
  private async failed(delivery: Delivery, err: unknown, configVersion: string): Promise<void> {
    const { metrics, logger, limiter, clock } = this.deps;
    const { robotId } = delivery;
    if (err instanceof RobotRejectedError) return this.rejected(delivery, err, configVersion);
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
    } else {
      throw err;
    }
    await this.countFailure(delivery, err);
  }

  /** Rejected: retried once with a secret rotated since this container read it, else final for this invocation. */
  private async rejected(delivery: Delivery, err: RobotRejectedError, configVersion: string): Promise<void> {
    const { metrics, logger, source } = this.deps;
    if (err.kind === 'configuration' && delivery.refreshedVersion !== configVersion) {
      delivery.refreshedVersion = configVersion;
      const fresh = await source.refresh();
      if (fresh.version !== configVersion) {
        logger.info('webhook secret changed; retrying with the new one', { robotId: delivery.robotId });
        return;
      }
    }
    // Final for this invocation. Our claims stay under our name: Lambda's retry of this event
    // takes them up again, and once the lease runs out so can any later invocation.
    metrics.count(err.kind === 'configuration' ? 'DingTalkConfigurationError' : 'DingTalkMessageRejected');
    logger.error('DingTalk rejected the message; not retrying', {
      robotId: delivery.robotId,
      errcode: err.errcode,
      errmsg: err.errmsg,
      kind: err.kind,
    });
    throw err;
  }

  /** One more failed attempt: given up after `maxAttempts`, backed off (unavailable robot) before the next. */
  private async countFailure(delivery: Delivery, err: RobotThrottledError | RobotUnavailableError): Promise<void> {
    const { metrics, clock } = this.deps;
    delivery.lastError = err;
    delivery.failures += 1;
    if (delivery.failures >= this.policy.maxAttempts) {
      metrics.count('AlarmDeliveryDeferred');
      throw new DeliveryBudgetExhaustedError(
        `gave up after ${delivery.failures} failed attempts (${err.message}); failing so Lambda retries`,
        err,
      );
    }
    if (err instanceof RobotUnavailableError) {
      const backoff = Math.min(this.policy.backoffMaxMs, this.policy.backoffBaseMs * 2 ** (delivery.failures - 1));
      const left = Math.max(delivery.deadline - clock.now(), 0);
      await clock.sleep(Math.min(backoff * (0.5 + this.random() / 2), left));
    }
  }
}

/** One invocation's delivery of its alarm: what it owes, what it has tried, what it has posted. */
interface Delivery {
  readonly notification: AlarmNotification;
  readonly robotId: string;
  readonly ownKey: string;
  readonly deadline: number;
  /** Backlog alarms this invocation has claimed and not yet delivered. */
  readonly held: Set<string>;
  failures: number;
  lastError?: DingTalkError;
  /** The secret version already refreshed once after a configuration rejection. */
  refreshedVersion: string | null;
  readonly result: DispatchResult;
}

interface Claimed {
  readonly key: string;
  readonly notification: AlarmNotification;
}

/** Nobody is posting it: unclaimed, or its claimer's lease has run out. */
const isFree = (p: PendingAlarm, now: number) => p.claimedBy === null || (p.leaseUntil ?? 0) < now;
