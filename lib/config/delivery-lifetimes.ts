/**
 * How long a copy of a message can exist, and so how long everything that must outlive it
 * has to live. One retry schedule decides the rest:
 *
 *   first enqueue ──(backlog allowance + retry window)──► source queue expiry
 *        │                     └─ 17th failed delivery ─► DLQ (a new message: its own DLQ retention)
 *        └─ dedup record ─────────────────────────────────────────────────────────────► TTL
 *                 source retention ─────────────────► DLQ retention ─────────► redrive: a fresh retry window
 *
 * A dedup record that expires while a copy can still come back lets that copy apply the
 * effect again (the incident's double award, recreated by a redrive on day 8). A source
 * queue that drops a message before its schedule is spent loses it, neither applied nor
 * dead-lettered; a redrive count below the schedule's deliveries dead-letters it without a reason.
 */
import { InvalidRetryScheduleError, RetrySchedule } from '../rocketmq/retry-schedule.ts';

const DAY_SECONDS = 86_400;

/** SQS keeps a message at most 14 days. */
export const SQS_MAX_RETENTION_SECONDS = 14 * DAY_SECONDS;
/** Dead letters are kept as long as SQS allows, so a long weekend never loses one. */
export const DEAD_LETTER_RETENTION_SECONDS = SQS_MAX_RETENTION_SECONDS;
/** How long a message may wait for its first delivery (a stalled or disabled consumer) on top of its retry window. */
export const SOURCE_BACKLOG_ALLOWANCE_SECONDS = 4 * DAY_SECONDS;
/** The dedup record lifetime when the catalogue names none: a round figure above the minimum for RocketMQ's schedule (18.4 days). */
export const DEFAULT_RECORD_TTL_SECONDS = 30 * DAY_SECONDS;

/** What the source queue and its DLQ are configured with. */
export interface QueueLifetimes {
  /** Receives before SQS's redrive policy moves a message to the DLQ. */
  readonly maxReceiveCount: number;
  readonly sourceRetentionSeconds: number;
  readonly deadLetterRetentionSeconds: number;
}

/** Two settings that must agree do not: thrown at synth and at cold start, naming both. */
export class IncoherentLifetimesError extends Error {
  override readonly name = 'IncoherentLifetimesError';
}

/** A retry schedule and the queues it runs on, checked to agree. */
export class DeliveryLifetimes {
  /** The queue settings the schedule implies: what the CDK app and the local emulator create. */
  static derive(schedule: RetrySchedule): DeliveryLifetimes {
    return new DeliveryLifetimes(schedule, {
      maxReceiveCount: schedule.maxDeliveries,
      sourceRetentionSeconds: SOURCE_BACKLOG_ALLOWANCE_SECONDS + schedule.totalDelaySeconds,
      deadLetterRetentionSeconds: DEAD_LETTER_RETENTION_SECONDS,
    });
  }

  constructor(
    readonly schedule: RetrySchedule,
    readonly queues: QueueLifetimes,
  ) {
    const { maxReceiveCount, sourceRetentionSeconds, deadLetterRetentionSeconds } = queues;
    const spans = `the retry schedule (${schedule.retries} retries, ${schedule.maxDeliveries} deliveries over ${schedule.totalDelaySeconds}s)`;
    if (!(maxReceiveCount >= schedule.maxDeliveries)) {
      throw new IncoherentLifetimesError(
        `the source queue's maxReceiveCount is ${maxReceiveCount} but ${spans} needs at least ${schedule.maxDeliveries}: ` +
          'SQS would dead-letter messages without a reason before their retries are spent',
      );
    }
    if (!(sourceRetentionSeconds >= schedule.totalDelaySeconds + DAY_SECONDS)) {
      throw new IncoherentLifetimesError(
        `the source queue keeps messages ${sourceRetentionSeconds}s but ${spans} needs at least ${schedule.totalDelaySeconds + DAY_SECONDS}s ` +
          '(the schedule plus a day): messages would expire neither applied nor dead-lettered',
      );
    }
    // A redrive-policy move keeps the message's first enqueue time, so the DLQ must keep it longer than the source did.
    if (!(deadLetterRetentionSeconds > sourceRetentionSeconds)) {
      throw new IncoherentLifetimesError(
        `the DLQ keeps messages ${deadLetterRetentionSeconds}s, not longer than the source queue's ${sourceRetentionSeconds}s ` +
          `(needed by ${spans}): letters moved by the redrive policy would expire on arrival`,
      );
    }
    if (sourceRetentionSeconds > SQS_MAX_RETENTION_SECONDS || deadLetterRetentionSeconds > SQS_MAX_RETENTION_SECONDS) {
      throw new IncoherentLifetimesError(`${spans} needs queues that keep messages longer than SQS's ${SQS_MAX_RETENTION_SECONDS}s`);
    }
  }

  /**
   * The shortest dedup record lifetime that outlives every copy: the source queue (first
   * delivery and retries), then the DLQ, then a redrive's fresh retry window.
   */
  get minimumRecordTtlSeconds(): number {
    return this.queues.sourceRetentionSeconds + this.queues.deadLetterRetentionSeconds + this.schedule.totalDelaySeconds;
  }

  /** The catalogue's default: 30 days, or the minimum rounded up to whole days when the schedule needs more. */
  get defaultRecordTtlSeconds(): number {
    return Math.max(DEFAULT_RECORD_TTL_SECONDS, Math.ceil(this.minimumRecordTtlSeconds / DAY_SECONDS) * DAY_SECONDS);
  }

  /** Refuses a record lifetime shorter than any copy can live (NaN, from a typo, is refused too). */
  assertRecordTtl(ttlSeconds: number): void {
    if (ttlSeconds >= this.minimumRecordTtlSeconds) return;
    throw new IncoherentLifetimesError(
      `idempotency records live ${ttlSeconds}s but a copy of a message can come back for ${this.minimumRecordTtlSeconds}s ` +
        `(source retention ${this.queues.sourceRetentionSeconds}s + DLQ retention ${this.queues.deadLetterRetentionSeconds}s + ` +
        `a redrive's retry window ${this.schedule.totalDelaySeconds}s): a late copy would apply its effect again`,
    );
  }

  /**
   * How old a letter's first delivery may be for a redrive to be safe: its record must
   * still exist when the redriven copy's fresh retry window ends.
   */
  redriveHorizonSeconds(ttlSeconds: number): number {
    return ttlSeconds - this.schedule.totalDelaySeconds;
  }
}

/** What a catalogue entry states about its lifetimes; everything else is derived. */
export interface LifetimeSettings {
  /** RocketMQ's schedule when absent. */
  readonly retryDelaysSeconds?: readonly number[];
  /** `defaultRecordTtlSeconds` when absent. */
  readonly idempotencyTtlSeconds?: number;
}

/** A group's schedule, queue lifetimes and record TTL, derived from its catalogue entry and refused if incoherent. */
export function lifetimesOf(settings: LifetimeSettings & { readonly group?: string }): { lifetimes: DeliveryLifetimes; recordTtlSeconds: number } {
  try {
    const schedule = settings.retryDelaysSeconds ? new RetrySchedule(settings.retryDelaysSeconds) : new RetrySchedule();
    const lifetimes = DeliveryLifetimes.derive(schedule);
    const recordTtlSeconds = settings.idempotencyTtlSeconds ?? lifetimes.defaultRecordTtlSeconds;
    lifetimes.assertRecordTtl(recordTtlSeconds);
    return { lifetimes, recordTtlSeconds };
  } catch (error) {
    if (!settings.group || !(error instanceof IncoherentLifetimesError || error instanceof InvalidRetryScheduleError)) throw error;
    throw new IncoherentLifetimesError(`consumer group ${settings.group}: ${error.message}`, { cause: error });
  }
}
