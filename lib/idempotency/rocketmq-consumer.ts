import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DeliveryLifetimes, IncoherentLifetimesError, type QueueLifetimes } from '../config/delivery-lifetimes.ts';
import { InvalidEnvelopeError, parseEnvelope, type RocketMQMessage } from '../rocketmq/envelope.ts';
import { TagExpression } from '../rocketmq/tag-expression.ts';
import { InvalidConsumerConfigError, InvalidMessageError, PayloadConflictError, TransientFailureError, classify } from './errors.ts';
import { REDRIVE_COUNT_ATTRIBUTE, type FailureRouter } from './failure-router.ts';
import { fingerprintOf } from './record.ts';
import type { ConsumerMessage, Disposition, RecordReport, Settlement } from './settlement.ts';
import type { ConsumptionStrategy } from './strategy.ts';
import { jitter, mapLimit, sleep } from './concurrency.ts';

export interface RocketMQConsumerOptions<P, R> {
  /** RocketMQ consumer group: names the records, the metrics and the DLQ. */
  group: string;
  /** RocketMQ tag expression (`*`, `PAID || FINISHED`); non-matching messages are acknowledged as filtered. */
  tagExpression: string;
  /** Parses and validates the business body; throws `InvalidPayloadError` for bad content. */
  parsePayload: (body: string, message: RocketMQMessage) => P;
  /** The business idempotency key (an order number). Never the msgId: an application re-send has a new one. */
  keyOf: (payload: P) => string;
  /** The business fields whose hash tells a duplicate (same) from a conflict (different). Default: the whole payload. */
  fingerprintFields?: (payload: P) => unknown;
  strategy: ConsumptionStrategy<R>;
  failures: FailureRouter;
  /** The source queue and DLQ as deployed (default: what the schedule derives, as the CDK app creates them). */
  queues?: QueueLifetimes;
  /** Records of one batch settled concurrently (distinct keys only; one key is always sequential). */
  concurrency?: number;
  /** In-invocation retries of a commit cancelled by `TransactionConflict` before the record is failed. */
  conflictRetries?: number;
  /** Receives one report per record: logs, metrics, the local run's account. */
  onReport?: (report: RecordReport) => void;
  now?: () => number;
}

/** What the business handler returns per message, aligned with `RocketMQBatch.messages`. */
export type BusinessResults<R> = ReadonlyArray<{ ok: true; value: R } | { ok: false; error: unknown }>;

/**
 * What the middleware puts on the Lambda context for the business handler (Middy's way of
 * handing a handler what a middleware prepared, as `@middy/secrets-manager` does with
 * `setToContext`): the messages to act on, and the slot for their results.
 */
export interface RocketMQBatch<P, R> {
  readonly messages: readonly ConsumerMessage<P>[];
  /** Set by the business handler, one result per message; the middleware commits and routes them. */
  results?: BusinessResults<R>;
}

/** The context a consumer's business handler sees. Optional so that Lambda's own context fits it. */
export type ConsumerContext<P, R> = Context & { rocketmq?: RocketMQBatch<P, R> };

/** Per-request state, kept where Middy keeps it (`request.internal`). */
export interface ConsumerInternal<P> extends Record<string, unknown> {
  rocketmqBatch?: BatchState<P>;
}

interface BatchState<P> {
  readonly event: SQSEvent;
  readonly reports: Map<SQSRecord, Omit<RecordReport, 'disposition'>>;
  readonly proceeding: ConsumerMessage<P>[];
  /** The first copy of each key in this batch. */
  readonly leaders: Map<string, ConsumerMessage<P>>;
  /** Later copies of a key already in this batch; settled after their leader. */
  readonly followers: Map<string, ConsumerMessage<P>[]>;
  /** Set by the first `finish`: a batch is routed (retried, dead-lettered) once, whatever throws after. */
  finished?: Promise<{ response: SQSBatchResponse; reports: RecordReport[] }>;
}

/**
 * The Middy middleware every RocketMQ consumer uses. Per SQS record: parse the bridge
 * envelope, apply the tag expression, parse the body, derive the business key and the
 * payload fingerprint, and let the strategy make the effect exactly-once. The business
 * handler only declares what to do (`forEachMessage`); the middleware commits it,
 * classifies failures, applies RocketMQ's retry schedule, dead-letters with a reason, and
 * answers with `batchItemFailures` naming only the records that must come back.
 */
export function rocketmqConsumer<P, R>(
  options: RocketMQConsumerOptions<P, R>,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, ConsumerContext<P, R>, ConsumerInternal<P>> {
  const tags = TagExpression.parse(options.tagExpression);
  const now = options.now ?? Date.now;
  // 10 = the largest SQS batch without a batching window: one wave of DynamoDB calls per batch.
  const concurrency = options.concurrency ?? 10;
  const conflictRetries = options.conflictRetries ?? 3;
  const fingerprintFields = options.fingerprintFields ?? ((p: P) => p);
  assertRecordsOutliveRetries(options);

  const prepare = (record: SQSRecord, state: BatchState<P>): ConsumerMessage<P> | undefined => {
    const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? '1') || 1;
    let message: RocketMQMessage;
    try {
      message = parseEnvelope(record.body);
    } catch (error) {
      const reason = error instanceof InvalidEnvelopeError ? error.message : String(error);
      state.reports.set(record, base(record, receiveCount, { outcome: 'failed', error: new InvalidMessageError(reason) }));
      return undefined;
    }
    const attempt = attemptOf(record, receiveCount, message.reconsumeTimes);
    const ids = { msgId: message.msgId };
    if (!tags.matches(message.tags)) {
      state.reports.set(record, { ...base(record, attempt, { outcome: 'filtered', tag: message.tags }), ...ids });
      return undefined;
    }
    try {
      const payload = options.parsePayload(message.body, message);
      const key = options.keyOf(payload);
      return { record, message, payload, key, fingerprint: fingerprintOf(fingerprintFields(payload)), attempt };
    } catch (error) {
      state.reports.set(record, { ...base(record, attempt, { outcome: 'failed', error: classify(error) }), ...ids });
      return undefined;
    }
  };

  const base = (record: SQSRecord, attempt: number, settlement: Settlement) => ({
    group: options.group,
    sqsMessageId: record.messageId,
    attempt,
    settlement,
  });

  const settle = (state: BatchState<P>, msg: ConsumerMessage<P>, settlement: Settlement) => {
    state.reports.set(msg.record, { ...base(msg.record, msg.attempt, settlement), msgId: msg.message.msgId, key: msg.key });
  };

  const commit = async (msg: ConsumerMessage<P>, value: R): Promise<Settlement> => {
    for (let retry = 0; ; retry++) {
      try {
        return await options.strategy.commit(msg, value);
      } catch (error) {
        const failure = classify(error);
        // TransactionConflict cancels without effect and the SDK does not retry cancellations.
        if (failure.code === 'TransactionConflict' && retry < conflictRetries) {
          await sleep(jitter(25 * 2 ** retry));
          continue;
        }
        await options.strategy.abort(msg, failure);
        return { outcome: 'failed', error: failure };
      }
    }
  };

  /**
   * Packing: the strategy commits the batch's successful records together (it retries
   * contention itself) and settles each one; followers are settled after, as in per-record mode.
   */
  const commitPacked = async (state: BatchState<P>, results: BusinessResults<R>) => {
    const ready: ConsumerMessage<P>[] = [];
    const values: R[] = [];
    for (const [i, msg] of state.proceeding.entries()) {
      const result = results[i]!;
      if (result.ok) {
        ready.push(msg);
        values.push(result.value);
        continue;
      }
      const failure = classify(result.error);
      await options.strategy.abort(msg, failure);
      settle(state, msg, { outcome: 'failed', error: failure });
    }
    if (ready.length === 0) return;
    let settlements: Settlement[];
    try {
      settlements = await options.strategy.commitBatch!(ready, values);
    } catch (error) {
      const failure = classify(error);
      settlements = ready.map(() => ({ outcome: 'failed', error: failure }));
    }
    for (const [i, msg] of ready.entries()) {
      const settlement = settlements[i]!;
      if (settlement.outcome === 'failed') await options.strategy.abort(msg, settlement.error);
      settle(state, msg, settlement);
    }
  };

  /** Settles followers after their leader: same content is a duplicate, different content a conflict. */
  const settleFollowers = (state: BatchState<P>) => {
    for (const [key, followers] of state.followers) {
      const leader = state.leaders.get(key)!;
      const leaderSettlement = state.reports.get(leader.record)?.settlement;
      for (const follower of followers) {
        if (leaderSettlement && (leaderSettlement.outcome === 'processed' || leaderSettlement.outcome === 'duplicate')) {
          if (follower.fingerprint === leader.fingerprint) {
            settle(state, follower, { outcome: 'duplicate', reason: 'in-batch-duplicate', winnerMsgId: leader.message.msgId });
          } else {
            settle(state, follower, {
              outcome: 'failed',
              error: new PayloadConflictError(key, leader.fingerprint, follower.fingerprint, leader.message.msgId),
            });
          }
        } else {
          // The leader did not commit: this copy comes back and is judged on its own then.
          settle(state, follower, { outcome: 'failed', error: new TransientFailureError(`an earlier copy of key ${key} in the same batch did not commit`, 'IN_BATCH_LEADER_FAILED') });
        }
      }
    }
  };

  /**
   * Routes every record once and answers with the records that must come back. Idempotent:
   * when something after routing throws (a failing `onReport`), Middy's `onError` calls it
   * again and gets the same answer: no record is routed, and no letter written, twice.
   */
  const finish = async (state: BatchState<P>): Promise<SQSBatchResponse> => {
    const first = state.finished === undefined;
    state.finished ??= route(state);
    const { response, reports } = await state.finished;
    if (first) report(reports);
    return response;
  };

  const route = async (state: BatchState<P>) => {
    settleFollowers(state);
    const failures: SQSBatchItemFailure[] = [];
    const reports: RecordReport[] = [];
    await mapLimit([...state.reports.values()], concurrency, async (report) => {
      const record = state.event.Records.find((r) => r.messageId === report.sqsMessageId)!;
      const disposition: Disposition =
        report.settlement.outcome === 'failed'
          ? await options.failures.route(record, report.settlement.error, report)
          : { action: 'ack' };
      if (disposition.action === 'retry' || disposition.action === 'retry-dead-letter') failures.push({ itemIdentifier: record.messageId });
      reports.push({ ...report, disposition });
    });
    return { response: { batchItemFailures: failures }, reports };
  };

  /** Every record gets its report even when an observer throws on one; the first error is raised after. */
  const report = (reports: readonly RecordReport[]) => {
    let failure: unknown;
    for (const r of reports) {
      try {
        options.onReport?.(r);
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  };

  return {
    before: async (request) => {
      const state: BatchState<P> = { event: request.event, reports: new Map(), proceeding: [], leaders: new Map(), followers: new Map() };
      request.internal.rocketmqBatch = state;
      const candidates: ConsumerMessage<P>[] = [];
      for (const record of request.event.Records) {
        const msg = prepare(record, state);
        if (!msg) continue;
        if (state.leaders.has(msg.key)) {
          // Two writes to one item in a transaction are rejected, and two leases on one
          // key would block each other: later copies wait for the first copy's result.
          state.followers.set(msg.key, [...(state.followers.get(msg.key) ?? []), msg]);
          continue;
        }
        state.leaders.set(msg.key, msg);
        candidates.push(msg);
      }
      const deadline = now() + (request.context.getRemainingTimeInMillis?.() ?? 60_000);
      await mapLimit(candidates, concurrency, async (msg) => {
        try {
          const begun = await options.strategy.begin(msg, deadline);
          if (!begun.proceed) return settle(state, msg, begun.settlement);
          state.proceeding.push({ ...msg, leaseToken: begun.leaseToken });
        } catch (error) {
          settle(state, msg, { outcome: 'failed', error: classify(error) });
        }
      });
      request.context.rocketmq = { messages: state.proceeding };
    },
    after: async (request) => {
      const state = request.internal.rocketmqBatch!;
      const results = request.context.rocketmq?.results;
      if (!results || results.length !== state.proceeding.length) {
        throw new InvalidConsumerConfigError('the business handler must set one result per message on context.rocketmq.results (use forEachMessage)');
      }
      if (options.strategy.commitBatch) {
        await commitPacked(state, results);
        request.response = await finish(state);
        return;
      }
      await mapLimit(state.proceeding, concurrency, async (msg, i) => {
        const result = results[i]!;
        if (result.ok) return settle(state, msg, await commit(msg, result.value));
        const failure = classify(result.error);
        await options.strategy.abort(msg, failure);
        settle(state, msg, { outcome: 'failed', error: failure });
      });
      request.response = await finish(state);
    },
    onError: async (request) => {
      const state = request.internal.rocketmqBatch;
      if (!state) return; // failed before any record was read: let Lambda retry the batch
      if (state.finished) {
        // The batch was routed and only what came after failed: answer as routed, never route again.
        console.error(JSON.stringify({ message: 'consumer batch settled, then failed after routing', group: options.group, error: String(request.error) }));
        request.response = (await state.finished).response;
        return;
      }
      const failure = new TransientFailureError(`handler failed: ${request.error?.message ?? 'unknown error'}`, 'HANDLER_CRASHED', { cause: request.error });
      for (const msg of state.proceeding) {
        if (state.reports.has(msg.record)) continue;
        await options.strategy.abort(msg, failure);
        settle(state, msg, { outcome: 'failed', error: failure });
      }
      // Set, not returned: a returned value would make Middy skip the onError of every
      // middleware used before this one (Powertools' metric flush, its logger's cleanup).
      request.response = await finish(state);
    },
  };
}

/**
 * The Middy handler for a consumer: runs the business once per prepared message and
 * records each result separately, so one failing message never fails its batch-mates. The
 * answer it returns stands only until the middleware's `after` replaces it with the routed one.
 */
export function forEachMessage<P, R>(business: (msg: ConsumerMessage<P>, context: Context) => Promise<R> | R) {
  return async (_event: SQSEvent, context: ConsumerContext<P, R>): Promise<SQSBatchResponse> => {
    const batch = context.rocketmq;
    if (!batch) throw new InvalidConsumerConfigError('forEachMessage runs behind the rocketmqConsumer middleware');
    batch.results = await Promise.all(
      batch.messages.map(async (msg) => {
        try {
          return { ok: true as const, value: await business(msg, context) };
        } catch (error) {
          return { ok: false as const, error };
        }
      }),
    );
    return { batchItemFailures: [] };
  };
}

/**
 * 1-based delivery attempt on the schedule: the SQS receive count plus the retries RocketMQ
 * already made before the bridge forwarded the message. A letter sent back by `ops dlq
 * redrive` starts a fresh schedule (its envelope still says `reconsumeTimes: 16`; counting
 * that would dead-letter it again on its first transient failure). Its redrive count keeps
 * the history.
 */
function attemptOf(record: SQSRecord, receiveCount: number, reconsumeTimes: number): number {
  const redriven = Number(record.messageAttributes?.[REDRIVE_COUNT_ATTRIBUTE]?.stringValue ?? 0) > 0;
  return redriven ? receiveCount : receiveCount + reconsumeTimes;
}

/**
 * Refused at start-up: a schedule the queues cannot carry (too few receives, too short a
 * retention), or dedup records that expire while a copy of a message can still come back.
 */
function assertRecordsOutliveRetries<P, R>(options: RocketMQConsumerOptions<P, R>) {
  const schedule = options.failures.schedule;
  try {
    const lifetimes = options.queues ? new DeliveryLifetimes(schedule, options.queues) : DeliveryLifetimes.derive(schedule);
    lifetimes.assertRecordTtl(options.strategy.recordTtlSeconds);
  } catch (error) {
    if (!(error instanceof IncoherentLifetimesError)) throw error;
    throw new InvalidConsumerConfigError(`consumer group ${options.group}: ${error.message}`, { cause: error });
  }
}
