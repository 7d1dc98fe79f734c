/**
 * How long a copy of a message can exist, and so how long everything that must outlive it
 * has to live. One retry schedule decides the rest:
 *
 *   (bus archive: a replay puts a week-old event on the queue as new)
 *   first enqueue ──(backlog allowance + retry window)──► source queue expiry
 *        │                     └─ 17th failed delivery ─► DLQ (a new message: its own DLQ retention)
 *        └─ dedup record ───────────────────────────────────────────────────────────────────────► TTL
 *      [archive] ─► source retention ─► DLQ retention ─► redrive: a new message, which may wait out the
 *                                                        backlog allowance and a fresh retry window again
 *
 * A dedup record that expires while a copy can still come back lets that copy apply the
 * effect again (the incident's double award, recreated by a redrive on day 8). A source
 * queue that drops a message before its schedule is spent loses it, neither applied nor
 * dead-lettered; a redrive count below the schedule's deliveries dead-letters it without a reason.
 * The same span keeps a retired envelope signing key: a copy signed with it can come back that long.
 */
import { InvalidRetryScheduleError, RetrySchedule } from '../rocketmq/index.ts';

/**
 * How a group consumes: `concurrent` (RocketMQ's MessageListenerConcurrently, a standard
 * queue, RocketMQ's growing retry delays) or `orderly` (a FIFO message group consumed one
 * message at a time, a fixed retry interval, dead-letter at the maximum and move on).
 */
export type Ordering = 'concurrent' | 'orderly';

/**
 * RocketMQ 5 FIFO consumer groups retry a failed message at a fixed interval, 3,000 ms by
 * default, up to the group's maximum retries, 16 by default, then dead-letter it and consume
 * the next message of its group. Sources: Apache RocketMQ 5.0 documentation, "Parameter
 * limits" (PushConsumer retry interval, ordered delivery: 3000 ms; consumption retries: 16) and
 * "Consumption retry" (ordered messages: a fixed interval); the proxy hands clients
 * `maxAttempts = retryMaxTimes + 1` (GrpcClientSettingsManager), so 17 deliveries.
 */
export const ORDERLY_RETRY_INTERVAL_SECONDS = 3;
export const ORDERLY_MAX_ATTEMPTS = 17;

/** Lambda's largest batch from a FIFO queue, which allows no batching window. */
export const FIFO_MAX_BATCH_SIZE = 10;

/** An orderly group's retry policy; RocketMQ 5 FIFO's defaults where absent. */
export interface OrderlyRetryPolicy {
  /** Seconds a failed message (and so its whole message group) waits before it is delivered again. */
  readonly intervalSeconds?: number;
  /** Deliveries before the message is dead-lettered and its group moves on: RocketMQ's maximum retries + 1. */
  readonly maxAttempts?: number;
}

/** The fixed-interval schedule of an orderly group. */
export function orderlySchedule(policy: OrderlyRetryPolicy = {}): RetrySchedule {
  const maxAttempts = policy.maxAttempts ?? ORDERLY_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 2) {
    throw new InvalidRetryScheduleError(
      `orderlyRetry.maxAttempts is ${maxAttempts} but must be a whole number of at least 2 (the delivery and one retry)`,
    );
  }
  return new RetrySchedule(
    Array.from({ length: maxAttempts - 1 }, () => policy.intervalSeconds ?? ORDERLY_RETRY_INTERVAL_SECONDS),
  );
}

/**
 * The fewest receives after which SQS's redrive policy may dead-letter a message without
 * taking it from the consumer's own count. Concurrent: the schedule's deliveries. Orderly: a
 * message returned unprocessed behind a failed predecessor is received again without an
 * attempt of its own. A FIFO receive hands out a group's messages in order, at most 10, so a
 * message is received with at most 9 predecessors ahead of it; each fails at most
 * `maxDeliveries` times before it is dead-lettered and acknowledged, and so does the message
 * itself: at most 10 × maxDeliveries receives without a crash, so one more.
 */
export function minimumReceiveCount(schedule: RetrySchedule, ordering: Ordering): number {
  return ordering === 'orderly' ? FIFO_MAX_BATCH_SIZE * schedule.maxDeliveries + 1 : schedule.maxDeliveries;
}

const DAY_SECONDS = 86_400;

/** SQS keeps a message at most 14 days. */
export const SQS_MAX_RETENTION_SECONDS = 14 * DAY_SECONDS;
/** Dead letters are kept as long as SQS allows, so a long weekend never loses one. */
export const DEAD_LETTER_RETENTION_SECONDS = SQS_MAX_RETENTION_SECONDS;
/** How long a message may wait for its first delivery (a stalled or disabled consumer) on top of its retry window. */
export const SOURCE_BACKLOG_ALLOWANCE_SECONDS = 4 * DAY_SECONDS;
/**
 * The bus archive keeps every bridged event a week (packages/infra/src/consumer-stack.ts); a replay puts an event on a concurrent
 * group's queue as a new message, up to that old. No rule feeds an orderly group, so no replay reaches one.
 */
export const BUS_ARCHIVE_RETENTION_SECONDS = 7 * DAY_SECONDS;
/**
 * The dedup record lifetime when the catalogue names none: a round figure above the minimum for RocketMQ's schedule
 * (18.4 days).
 */
export const DEFAULT_RECORD_TTL_SECONDS = 30 * DAY_SECONDS;

/** DynamoDB Streams keeps a change record 24 hours: the outbox relay may read, and retry, an item that long after its commit. */
export const STREAM_RETENTION_SECONDS = DAY_SECONDS;

/**
 * How long the relay's event source mapping retries a stream record (its `maxRecordAge`,
 * packages/infra/src/group-outbox.ts) before it gives up on it: an hour short of the stream's
 * retention, so its on-failure record (the batch's shard and sequence range, not the item) reaches
 * the relay DLQ while the item, still PENDING in the table, can be found and touched again. An item
 * whose last stream record (its commit, or its last redrive) is older than this is one the relay will
 * never see again unless it is written anew: `ops outbox redrive --stale`'s default threshold.
 */
export const RELAY_MAX_RECORD_AGE_SECONDS = STREAM_RETENTION_SECONDS - 3_600;

/**
 * How long a publishing group's outbox item is kept (its TTL), from the record TTLs of the groups
 * that consume what it publishes (docs/outbox.md):
 *
 *   commit ──(stream: read and retried up to 24 h)──► relayed ──(downstream dedup record: its TTL)──►
 *                       └─ FAILED, its notice in the relay DLQ (14 days) ─► ops outbox redrive ─► relayed
 *
 * The item outlives every place its message can still act from: the stream, the relay's DLQ (a
 * redrive reads the item back), and the downstream dedup record of its last relayed copy, so every
 * downstream effect can be traced back to its event (`ops trace`) while a copy of it can still come.
 * A downstream the catalogue does not hold (a RocketMQ consumer) is taken to keep the default record TTL.
 */
export function outboxItemTtlSeconds(downstreamRecordTtlSeconds: readonly number[]): number {
  const downstream = Math.max(DEFAULT_RECORD_TTL_SECONDS, ...downstreamRecordTtlSeconds);
  return STREAM_RETENTION_SECONDS + Math.max(DEAD_LETTER_RETENTION_SECONDS, downstream);
}

/** What the source queue and its DLQ are configured with. */
export interface QueueLifetimes {
  /** Receives before SQS's redrive policy moves a message to the DLQ. */
  readonly maxReceiveCount: number;
  readonly sourceRetentionSeconds: number;
  readonly deadLetterRetentionSeconds: number;
}

/** `DeliveryLifetimes.copyLifetimeSeconds` of queues as deployed, before they are checked against a schedule. */
export function copyLifetimeSeconds(queues: QueueLifetimes, ordering: Ordering): number {
  const archive = ordering === 'concurrent' ? BUS_ARCHIVE_RETENTION_SECONDS : 0;
  return archive + 2 * queues.sourceRetentionSeconds + queues.deadLetterRetentionSeconds;
}

/** Two settings that must agree do not: thrown at synth and at cold start, naming both. */
export class IncoherentLifetimesError extends Error {
  override readonly name = 'IncoherentLifetimesError';
}

/** A retry schedule and the queues it runs on, checked to agree. */
export class DeliveryLifetimes {
  /** The queue settings the schedule implies: what the CDK app and the local emulator create. */
  static derive(schedule: RetrySchedule, ordering: Ordering = 'concurrent'): DeliveryLifetimes {
    return new DeliveryLifetimes(
      schedule,
      {
        maxReceiveCount: minimumReceiveCount(schedule, ordering),
        sourceRetentionSeconds: SOURCE_BACKLOG_ALLOWANCE_SECONDS + schedule.totalDelaySeconds,
        deadLetterRetentionSeconds: DEAD_LETTER_RETENTION_SECONDS,
      },
      ordering,
    );
  }

  constructor(
    readonly schedule: RetrySchedule,
    readonly queues: QueueLifetimes,
    readonly ordering: Ordering = 'concurrent',
  ) {
    const { maxReceiveCount, sourceRetentionSeconds, deadLetterRetentionSeconds } = queues;
    const spans = `the retry schedule (${schedule.retries} retries, ${schedule.maxDeliveries} deliveries over ${schedule.totalDelaySeconds}s)`;
    const minimumReceives = minimumReceiveCount(schedule, ordering);
    if (!(maxReceiveCount >= minimumReceives)) {
      throw new IncoherentLifetimesError(
        ordering === 'orderly'
          ? `the source queue's maxReceiveCount is ${maxReceiveCount} but an orderly group under ${spans} needs at least ${minimumReceives} ` +
              `(${FIFO_MAX_BATCH_SIZE} messages a FIFO batch × ${schedule.maxDeliveries} deliveries + 1): SQS would dead-letter a message held back behind failing predecessors before its own retries are spent`
          : `the source queue's maxReceiveCount is ${maxReceiveCount} but ${spans} needs at least ${minimumReceives}: ` +
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
      throw new IncoherentLifetimesError(
        `${spans} needs queues that keep messages longer than SQS's ${SQS_MAX_RETENTION_SECONDS}s`,
      );
    }
  }

  /**
   * How long after its first enqueue a copy of a message can still be delivered: the source
   * queue (first delivery and retries), the DLQ, then a redriven copy, which is a new message of
   * the source queue and may wait out the backlog allowance and a fresh retry window like any
   * other; for a concurrent group, first put on its queue by a replay of the bus archive up to a
   * week late. A retired signing key is kept as long (`signingKeyRetentionSeconds`).
   */
  get copyLifetimeSeconds(): number {
    return copyLifetimeSeconds(this.queues, this.ordering);
  }

  /**
   * The shortest dedup record lifetime that outlives every copy, with a retry window to spare:
   * the consumer admits a copy up to the redrive horizon (TTL minus a retry window) after its
   * store time, so at this TTL the last copy is still admitted, and still finds its twin's record.
   */
  get minimumRecordTtlSeconds(): number {
    return this.copyLifetimeSeconds + this.schedule.totalDelaySeconds;
  }

  /** How long a retired envelope signing key still verifies: as long as a copy signed with it can come back. */
  get signingKeyRetentionSeconds(): number {
    return this.copyLifetimeSeconds;
  }

  /** The catalogue's default: 30 days, or the minimum rounded up to whole days when the schedule needs more. */
  get defaultRecordTtlSeconds(): number {
    return Math.max(DEFAULT_RECORD_TTL_SECONDS, Math.ceil(this.minimumRecordTtlSeconds / DAY_SECONDS) * DAY_SECONDS);
  }

  /** Refuses a record lifetime shorter than any copy can live (NaN, from a typo, is refused too). */
  assertRecordTtl(ttlSeconds: number): void {
    if (ttlSeconds >= this.minimumRecordTtlSeconds) return;
    const { sourceRetentionSeconds: source, deadLetterRetentionSeconds: dlq } = this.queues;
    const archive = this.ordering === 'concurrent' ? `bus archive ${BUS_ARCHIVE_RETENTION_SECONDS}s + ` : '';
    throw new IncoherentLifetimesError(
      `idempotency records live ${ttlSeconds}s but a copy of a message can come back for ${this.minimumRecordTtlSeconds}s ` +
        `(${archive}source retention ${source}s + DLQ retention ${dlq}s + a redriven copy's source retention ${source}s, ` +
        `and a retry window ${this.schedule.totalDelaySeconds}s to spare): a late copy would apply its effect again`,
    );
  }

  /**
   * How long an orderly group's failure count of one message is kept: as long as the source
   * queue can hold that message. A redriven letter is a new SQS message with a count of its own.
   */
  get failureCountTtlSeconds(): number {
    return this.queues.sourceRetentionSeconds;
  }

  /**
   * The longest the head of an orderly group takes to succeed or be dead-lettered: every
   * delivery running up to the function timeout, and the interval after each failed one.
   * A message older than this is not being retried but stuck (or waits behind such a group).
   */
  blockedGroupAgeSeconds(functionTimeoutSeconds: number): number {
    return this.schedule.maxDeliveries * functionTimeoutSeconds + this.schedule.totalDelaySeconds;
  }

  /**
   * How long after its store time a copy may still act: the consumer dead-letters an older
   * envelope (PAST_REDRIVE_HORIZON), because its dedup record may be gone. A copy admitted up to
   * here commits while the record its first delivery wrote (stored no earlier) still lives.
   */
  redriveHorizonSeconds(ttlSeconds: number): number {
    return ttlSeconds - this.schedule.totalDelaySeconds;
  }

  /**
   * How old a letter's first delivery may be for `ops dlq redrive` to send it back: the redriven
   * copy is a new message of the source queue, so it may be delivered a source retention later
   * still, and must be within the redrive horizon then.
   */
  letterRedriveHorizonSeconds(ttlSeconds: number): number {
    return this.redriveHorizonSeconds(ttlSeconds) - this.queues.sourceRetentionSeconds;
  }
}

/** What a catalogue entry states about its lifetimes; everything else is derived. */
export interface LifetimeSettings {
  /** `concurrent` when absent. */
  readonly ordering?: Ordering;
  /** Concurrent groups: RocketMQ's schedule when absent. */
  readonly retryDelaysSeconds?: readonly number[];
  /** Orderly groups: RocketMQ 5 FIFO's fixed interval and maximum when absent. */
  readonly orderlyRetry?: OrderlyRetryPolicy;
  /** `defaultRecordTtlSeconds` when absent. */
  readonly idempotencyTtlSeconds?: number;
}

function scheduleOf(settings: LifetimeSettings): RetrySchedule {
  if (settings.ordering === 'orderly') {
    if (settings.retryDelaysSeconds) {
      throw new IncoherentLifetimesError(
        "retryDelaysSeconds is set but ordering is 'orderly': an orderly group retries at one fixed interval (orderlyRetry), as RocketMQ 5 FIFO groups do",
      );
    }
    return orderlySchedule(settings.orderlyRetry);
  }
  if (settings.orderlyRetry)
    throw new IncoherentLifetimesError(
      "orderlyRetry is set but ordering is not 'orderly': a concurrent group retries on retryDelaysSeconds",
    );
  return settings.retryDelaysSeconds ? new RetrySchedule(settings.retryDelaysSeconds) : new RetrySchedule();
}

/** A group's schedule, queue lifetimes and record TTL, derived from its catalogue entry and refused if incoherent. */
export function lifetimesOf(settings: LifetimeSettings & { readonly group?: string }): {
  lifetimes: DeliveryLifetimes;
  recordTtlSeconds: number;
} {
  try {
    const lifetimes = DeliveryLifetimes.derive(scheduleOf(settings), settings.ordering);
    const recordTtlSeconds = settings.idempotencyTtlSeconds ?? lifetimes.defaultRecordTtlSeconds;
    lifetimes.assertRecordTtl(recordTtlSeconds);
    return { lifetimes, recordTtlSeconds };
  } catch (error) {
    if (!settings.group || !(error instanceof IncoherentLifetimesError || error instanceof InvalidRetryScheduleError))
      throw error;
    throw new IncoherentLifetimesError(`consumer group ${settings.group}: ${error.message}`, { cause: error });
  }
}

/**
 * The legacy side of a move (a RocketMQ 4.x consumer group taken over by the bridge, its dedup
 * state imported by `ops migrate import`): how long after the legacy consumer processed a message
 * a copy of it can still reach this project's consumer, and so how long the imported record must
 * suppress it.
 *
 *   legacy award ──(retries: maxReconsumeTimes over messageDelayLevel)──► %DLQ%<group>
 *        │                                                     └─ kept fileReservedTime, re-sent by an operator
 *        └─ imported record ───────────────────────────────────────────────────────────────────────► expiry
 *                                      the re-sent copy: a new message here, with the group's own record TTL
 *
 * (A copy in flight at the cutover, uncommitted offsets, `%RETRY%` and a producer's re-send, arrives
 * inside that span.)
 */
export const ROCKETMQ_4_DELAY_LEVELS = '1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h';
export const ROCKETMQ_4_MAX_RECONSUME_TIMES = 16;
/** The 4.x broker's `fileReservedTime`: commit-log files, and so `%DLQ%` letters, are deleted after 72 hours. */
export const ROCKETMQ_4_FILE_RESERVED_HOURS = 72;

/** What the legacy group and its broker are configured with (RocketMQ 4.x defaults where absent). */
export interface LegacyLifetimeSettings {
  /** The legacy consumer group's `maxReconsumeTimes`. */
  readonly maxReconsumeTimes?: number;
  /** The legacy broker's `messageDelayLevel`, e.g. `1s 5s 10s 30s 1m …`. */
  readonly messageDelayLevel?: string;
  /** The legacy broker's `fileReservedTime`, in hours. */
  readonly fileReservedTimeHours?: number;
  /** A legacy dedup store that expires its keys (the article's Redis `EX 86400`): their lifetime. */
  readonly dedupKeyTtlSeconds?: number;
}

const DELAY_UNITS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;

/** `1s 5s 10s 30s 1m …` as seconds; refused when a level cannot be read. */
export function delayLevelsOf(messageDelayLevel: string): number[] {
  const levels = messageDelayLevel.trim().split(/\s+/);
  return levels.map((level) => {
    const m = /^(\d+)([smhd])$/.exec(level);
    if (!m)
      throw new IncoherentLifetimesError(
        `messageDelayLevel "${messageDelayLevel}": "${level}" is not like 10s, 1m, 2h`,
      );
    return Number(m[1]) * DELAY_UNITS[m[2] as keyof typeof DELAY_UNITS];
  });
}

/** The legacy group's retry window and dead-letter retention, derived from its settings. */
export class LegacyLifetimes {
  readonly maxReconsumeTimes: number;
  readonly fileReservedTimeHours: number;
  /** Seconds from the first delivery to the last retry if every delivery fails. */
  readonly retryWindowSeconds: number;

  constructor(readonly settings: LegacyLifetimeSettings = {}) {
    this.maxReconsumeTimes = settings.maxReconsumeTimes ?? ROCKETMQ_4_MAX_RECONSUME_TIMES;
    this.fileReservedTimeHours = settings.fileReservedTimeHours ?? ROCKETMQ_4_FILE_RESERVED_HOURS;
    if (!Number.isInteger(this.maxReconsumeTimes) || this.maxReconsumeTimes < 0)
      throw new IncoherentLifetimesError(`legacy maxReconsumeTimes is ${this.maxReconsumeTimes}: a whole number ≥ 0`);
    if (!(this.fileReservedTimeHours > 0))
      throw new IncoherentLifetimesError(`legacy fileReservedTime is ${this.fileReservedTimeHours} h: more than 0`);
    const levels = delayLevelsOf(settings.messageDelayLevel ?? ROCKETMQ_4_DELAY_LEVELS);
    // The broker sends retry n (0-based) at delay level 3 + n, and caps the level at its last one.
    this.retryWindowSeconds = Array.from(
      { length: this.maxReconsumeTimes },
      (_, n) => levels[Math.min(3 + n, levels.length) - 1]!,
    ).reduce((a, b) => a + b, 0);
  }

  get deadLetterRetentionSeconds(): number {
    return this.fileReservedTimeHours * 3_600;
  }

  /**
   * How long after the legacy consumer processed a message a copy of it can still be sent to the
   * topic: its retries, then its `%DLQ%` letter re-sent on the last day the broker keeps it.
   */
  get copyLifetimeSeconds(): number {
    return this.retryWindowSeconds + this.deadLetterRetentionSeconds;
  }

  describe(): string {
    return (
      `retry window ${this.retryWindowSeconds}s (maxReconsumeTimes ${this.maxReconsumeTimes}) + ` +
      `%DLQ% retention ${this.deadLetterRetentionSeconds}s (fileReservedTime ${this.fileReservedTimeHours} h)`
    );
  }
}

/** How long a record imported for a legacy award lives, and from what. */
export interface LegacyHorizon {
  readonly legacy: LegacyLifetimes;
  /** The group's own record TTL: a re-sent copy is a new message here. */
  readonly recordTtlSeconds: number;
  /** After the legacy award: the legacy copy lifetime, then the group's record TTL. */
  readonly importedRecordLifetimeSeconds: number;
}

/**
 * One derivation for the lifetime of imported records: the legacy copy lifetime plus the group's
 * record TTL (itself checked against the group's schedule and queues). Refused, naming both, when
 * the legacy dedup store forgot its keys before a copy could stop arriving: those keys cannot be
 * imported, and their late copies would be awarded again (the article's 24 h Redis keys against
 * 72 h of %DLQ% retention), unless `acceptExpiredKeys` says the gap is known.
 */
export function legacyHorizonOf(
  group: LifetimeSettings & { readonly group?: string },
  settings: LegacyLifetimeSettings,
  options: { acceptExpiredKeys?: boolean } = {},
): LegacyHorizon {
  const legacy = new LegacyLifetimes(settings);
  const { recordTtlSeconds } = lifetimesOf(group);
  const keyTtl = settings.dedupKeyTtlSeconds;
  if (keyTtl !== undefined && keyTtl < legacy.copyLifetimeSeconds && !options.acceptExpiredKeys) {
    throw new IncoherentLifetimesError(
      `the legacy dedup keys expire after ${keyTtl}s (their TTL) but a copy of a message the legacy consumer ` +
        `processed can come back for ${legacy.copyLifetimeSeconds}s (${legacy.describe()}): keys already expired ` +
        'cannot be imported, and late copies of their orders would be awarded again. Import from a store that ' +
        'keeps them (the award table), or accept the gap explicitly (--accept-expired-keys) and audit afterwards',
    );
  }
  return { legacy, recordTtlSeconds, importedRecordLifetimeSeconds: legacy.copyLifetimeSeconds + recordTtlSeconds };
}
