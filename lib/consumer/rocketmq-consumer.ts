import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  DeliveryLifetimes,
  IncoherentLifetimesError,
  type Ordering,
  type QueueLifetimes,
} from '../config/delivery-lifetimes.ts';
import { InvalidEnvelopeError, parseEnvelope, type RocketMQMessage } from '../rocketmq/envelope.ts';
import { type SigningKeyRing, signatureRefusals } from '../rocketmq/envelope-signature.ts';
import { TagExpression } from '../rocketmq/tag-expression.ts';
import { jitter, mapLimit, sleep } from './concurrency.ts';
import {
  classify,
  HeldBackError,
  InvalidConsumerConfigError,
  InvalidMessageError,
  PayloadConflictError,
  TransientFailureError,
  UnauthenticatedMessageError,
} from './failures/errors.ts';
import { FailureCounter } from './failures/failure-counter.ts';
import { type FailureRouter, REDRIVE_COUNT_ATTRIBUTE } from './failures/failure-router.ts';
import { fingerprintOf } from './idempotency/record.ts';
import type { ConsumptionStrategy } from './idempotency/strategy.ts';
import { consumeInOrder, messageGroupOf, messageGroups, type Turn } from './runners/message-groups.ts';
import type { ConsumerMessage, Disposition, RecordReport, Settlement } from './settlement.ts';

export interface RocketMQConsumerOptions<P, R> {
  /** RocketMQ consumer group: names the records, the metrics and the DLQ. */
  group: string;
  /** RocketMQ tag expression (`*`, `PAID || FINISHED`); non-matching messages are acknowledged as filtered. */
  tagExpression: string;
  /** Parses and validates the business body; throws `InvalidPayloadError` for bad content. */
  parsePayload: (body: string, message: RocketMQMessage) => P;
  /** The business idempotency key (an order number). Never the msgId: an application re-send has a new one. */
  keyOf: (payload: P) => string;
  /**
   * The business fields whose hash tells a duplicate (same) from a conflict (different). Default: the whole payload.
   */
  fingerprintFields?: (payload: P) => unknown;
  strategy: ConsumptionStrategy<R>;
  failures: FailureRouter;
  /**
   * `orderly` (RocketMQ's orderly listener, a FIFO queue): attempts are the message's own
   * failures, counted in `failureCounts`, not SQS's receive count. Default `concurrent`.
   * Whatever the ordering, a batch of FIFO records is consumed one record of a message group
   * at a time.
   */
  ordering?: Ordering;
  /** Orderly groups: the table holding each message's failure count (the idempotency table). */
  failureCounts?: { client: DynamoDBDocumentClient; tableName: string };
  /** The source queue and DLQ as deployed (default: what the schedule derives, as the CDK app creates them). */
  queues?: QueueLifetimes;
  /**
   * Records of one batch settled concurrently (distinct keys only; one key is always sequential); FIFO batches: message
   * groups at once.
   */
  concurrency?: number;
  /** In-invocation retries of a commit cancelled by `TransactionConflict` before the record is failed. */
  conflictRetries?: number;
  /**
   * When given, every envelope must carry the bridge's signature made with one of these keys;
   * anything else is dead-lettered at once as `UNAUTHENTICATED_MESSAGE` (lib/rocketmq/envelope-signature.ts).
   */
  envelopeKeys?: SigningKeyRing;
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
  /**
   * FIFO batches: `messages` is empty and the business is handed over here instead, because
   * a message may run only after the one before it in its group has committed (`forEachMessage`
   * does this).
   */
  readonly inOrder?: (business: (msg: ConsumerMessage<P>) => Promise<R> | R) => Promise<void>;
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
  /** Every record that parsed and passed the tag filter. */
  readonly prepared: ConsumerMessage<P>[];
  /** Attempts RocketMQ made before the message reached this queue (its `reconsumeTimes`, unless redriven). */
  readonly attemptOffsets: Map<SQSRecord, number>;
  readonly proceeding: ConsumerMessage<P>[];
  /** The first copy of each key in this batch. */
  readonly leaders: Map<string, ConsumerMessage<P>>;
  /** Later copies of a key already in this batch; settled after their leader. */
  readonly followers: Map<string, ConsumerMessage<P>[]>;
  /** Each failed record's fate, decided once (FIFO batches decide it in turn, to know whether the group goes on). */
  readonly dispositions: Map<SQSRecord, Promise<Disposition>>;
  readonly deadline: number;
  /** A FIFO batch: consumed by message group through `RocketMQBatch.inOrder`; true once that ran. */
  inOrder?: { consumed: boolean };
  /** Set by the first `finish`: a batch is routed (retried, dead-lettered) once, whatever throws after. */
  finished?: Promise<{ response: SQSBatchResponse; reports: RecordReport[] }>;
}

/**
 * The Middy middleware every RocketMQ consumer uses. Per SQS record: parse the bridge
 * envelope, apply the tag expression, parse the body, derive the business key and the
 * payload fingerprint, and let the strategy make the effect exactly-once. The business
 * handler only declares what to do (`forEachMessage`); the middleware commits it,
 * classifies failures, applies RocketMQ's retry schedule, dead-letters with a reason, and
 * answers with `batchItemFailures` naming only the records that must come back. A batch from a
 * FIFO queue is consumed one record of a message group at a time (`consumeInGroups`).
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
  const lifetimes = assertRecordsOutliveRetries(options);
  const counter = failureCounterOf(options, lifetimes);

  const prepare = (
    record: SQSRecord,
    state: BatchState<P>,
    refusal: string | undefined,
  ): ConsumerMessage<P> | undefined => {
    const receiveCount = receiveCountOf(record);
    if (refusal !== undefined) {
      // Nothing of an unauthenticated envelope is trusted, not even its msgId.
      state.reports.set(
        record,
        base(record, receiveCount, { outcome: 'failed', error: new UnauthenticatedMessageError(refusal) }),
      );
      return undefined;
    }
    let message: RocketMQMessage;
    try {
      message = parseEnvelope(record.body);
    } catch (error) {
      const reason = error instanceof InvalidEnvelopeError ? error.message : String(error);
      state.reports.set(
        record,
        base(record, receiveCount, { outcome: 'failed', error: new InvalidMessageError(reason) }),
      );
      return undefined;
    }
    const offset = attemptOffset(record, message.reconsumeTimes);
    state.attemptOffsets.set(record, offset);
    // Orderly: the first delivery until the failure count is read (`readAttempts`).
    const attempt = offset + (counter ? 1 : receiveCount);
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
    messageGroupId: messageGroupOf(record),
    sentAt: Number(record.attributes?.SentTimestamp) || undefined,
    attempt,
    settlement,
  });

  const settle = (state: BatchState<P>, msg: ConsumerMessage<P>, settlement: Settlement) => {
    state.reports.set(msg.record, {
      ...base(msg.record, msg.attempt, settlement),
      msgId: msg.message.msgId,
      key: msg.key,
    });
  };

  /**
   * Orderly: a redelivered message's attempt is its own failures so far plus one. The read only
   * names the attempt (a failure's fate comes from the count it writes), so a count that cannot
   * be read leaves the record running as its first attempt rather than holding its group.
   */
  const readAttempts = async (state: BatchState<P>, counted: FailureCounter) => {
    await mapLimit(state.prepared, concurrency, async (msg, i) => {
      if (receiveCountOf(msg.record) === 1) return;
      const failures = await counted.failures(msg.record).catch(() => 0);
      state.prepared[i] = { ...msg, attempt: msg.attempt + failures };
    });
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

  /**
   * A later copy of a key whose earlier copy committed (or was already done): same content is a duplicate, different
   * content a conflict.
   */
  const judgeCopy = (leader: ConsumerMessage<P>, copy: ConsumerMessage<P>): Settlement =>
    copy.fingerprint === leader.fingerprint
      ? { outcome: 'duplicate', reason: 'in-batch-duplicate', winnerMsgId: leader.message.msgId }
      : {
          outcome: 'failed',
          error: new PayloadConflictError(copy.key, leader.fingerprint, copy.fingerprint, leader.message.msgId),
        };

  const committed = (state: BatchState<P>, msg: ConsumerMessage<P>) => {
    const outcome = state.reports.get(msg.record)?.settlement.outcome;
    return outcome === 'processed' || outcome === 'duplicate';
  };

  /** Settles followers after their leader: same content is a duplicate, different content a conflict. */
  const settleFollowers = (state: BatchState<P>) => {
    for (const [key, followers] of state.followers) {
      const leader = state.leaders.get(key)!;
      for (const follower of followers) {
        if (committed(state, leader)) {
          settle(state, follower, judgeCopy(leader, follower));
        } else {
          // The leader did not commit: this copy comes back and is judged on its own then.
          settle(state, follower, {
            outcome: 'failed',
            error: new TransientFailureError(
              `an earlier copy of key ${key} in the same batch did not commit`,
              'IN_BATCH_LEADER_FAILED',
            ),
          });
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
    const heldBack: SQSRecord[] = [];
    await mapLimit([...state.reports.keys()], concurrency, async (record) => {
      const disposition: Disposition =
        state.reports.get(record)!.settlement.outcome === 'failed' ? await dispose(state, record) : { action: 'ack' };
      const report = state.reports.get(record)!;
      if (disposition.action === 'retry' || disposition.action === 'retry-dead-letter')
        failures.push({ itemIdentifier: record.messageId });
      if (report.settlement.outcome === 'failed' && report.settlement.error instanceof HeldBackError)
        heldBack.push(record);
      reports.push({ ...report, disposition });
    });
    await options.failures.release(heldBack);
    return { response: { batchItemFailures: failures }, reports };
  };

  /** A failed record's fate, decided once (a FIFO batch decides it in turn, `route` reuses it). */
  const dispose = (state: BatchState<P>, record: SQSRecord): Promise<Disposition> => {
    let disposition = state.dispositions.get(record);
    if (!disposition) {
      disposition = routeFailure(state, record);
      state.dispositions.set(record, disposition);
    }
    return disposition;
  };

  const routeFailure = async (state: BatchState<P>, record: SQSRecord): Promise<Disposition> => {
    const report = state.reports.get(record)!;
    const { error } = report.settlement as Extract<Settlement, { outcome: 'failed' }>;
    // Not attempted, so neither counted nor delayed: `route` makes it visible again at once.
    if (error instanceof HeldBackError) return { action: 'retry', delaySeconds: 0 };
    let attempt = report.attempt;
    if (counter && error.classification === 'transient') {
      try {
        attempt = state.attemptOffsets.get(record)! + (await counter.countFailure(record, report.msgId));
      } catch {
        // Uncounted, the failure is retried as the attempt it was read as; the queue's redrive
        // count (derived for orderly groups to come later than any count) remains the bound.
      }
      state.reports.set(record, { ...report, attempt });
    }
    return options.failures.route(record, error, { ...report, attempt });
  };

  /**
   * A FIFO batch: each message group in arrival order, one record at a time (begin, business,
   * commit), the groups concurrently. A record that fails and will be retried stops its group:
   * the group's later records are returned unprocessed, never run, never counted. A record
   * that is dead-lettered (permanent, or at its maximum) does not stop it: RocketMQ too
   * dead-letters an orderly message at its maximum and consumes the next one.
   */
  const consumeInGroups = async (state: BatchState<P>, business: (msg: ConsumerMessage<P>) => Promise<R> | R) => {
    state.inOrder!.consumed = true;
    const prepared = new Map(state.prepared.map((m) => [m.record, m]));
    // An earlier copy of a key in the same group has settled when a later one's turn comes.
    const firstCopies = new Map<string, ConsumerMessage<P>>();
    const take = async (msg: ConsumerMessage<P>): Promise<Settlement> => {
      const copyOf = `${messageGroupOf(msg.record)}\u0000${msg.key}`;
      const first = firstCopies.get(copyOf);
      if (first && committed(state, first)) return judgeCopy(first, msg);
      if (!first) firstCopies.set(copyOf, msg);
      try {
        const begun = await options.strategy.begin(msg, state.deadline);
        if (!begun.proceed) return begun.settlement;
        const held = { ...msg, leaseToken: begun.leaseToken };
        state.proceeding.push(held);
        let value: R;
        try {
          value = await business(held);
        } catch (error) {
          const failure = classify(error);
          await options.strategy.abort(held, failure);
          return { outcome: 'failed', error: failure };
        }
        return await commit(held, value);
      } catch (error) {
        return { outcome: 'failed', error: classify(error) };
      }
    };
    const turn = async (record: SQSRecord): Promise<Turn> => {
      const msg = prepared.get(record);
      if (msg) settle(state, msg, await take(msg));
      if (state.reports.get(record)!.settlement.outcome !== 'failed') return 'continue';
      return (await dispose(state, record)).action === 'dead-letter' ? 'continue' : 'block';
    };
    const holdBack = (record: SQSRecord, blockedBy: SQSRecord) => {
      const msg = prepared.get(record);
      const blocker = state.reports.get(blockedBy)!;
      const settlement: Settlement = {
        outcome: 'failed',
        error: new HeldBackError(messageGroupOf(record)!, blocker.msgId ?? blocker.sqsMessageId),
      };
      if (msg) settle(state, msg, settlement);
      else state.reports.set(record, { ...state.reports.get(record)!, settlement });
    };
    await consumeInOrder(messageGroups(state.event.Records, messageGroupOf), concurrency, turn, holdBack);
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
      const state: BatchState<P> = {
        event: request.event,
        reports: new Map(),
        prepared: [],
        attemptOffsets: new Map(),
        proceeding: [],
        leaders: new Map(),
        followers: new Map(),
        dispositions: new Map(),
        deadline: now() + (request.context.getRemainingTimeInMillis?.() ?? 60_000),
      };
      // Before the batch state exists: keys that cannot be read fail the whole batch, which Lambda retries.
      const refusals = options.envelopeKeys
        ? await signatureRefusals(
            request.event.Records.map((r) => r.body),
            options.envelopeKeys,
          )
        : undefined;
      request.internal.rocketmqBatch = state;
      for (const [i, record] of request.event.Records.entries()) {
        const msg = prepare(record, state, refusals?.get(i));
        if (msg) state.prepared.push(msg);
      }
      if (counter) await readAttempts(state, counter);
      if (request.event.Records.some((r) => messageGroupOf(r) !== undefined)) {
        state.inOrder = { consumed: false };
        request.context.rocketmq = { messages: [], inOrder: (business) => consumeInGroups(state, business) };
        return;
      }
      const candidates: ConsumerMessage<P>[] = [];
      for (const msg of state.prepared) {
        if (state.leaders.has(msg.key)) {
          // Two writes to one item in a transaction are rejected, and two leases on one
          // key would block each other: later copies wait for the first copy's result.
          state.followers.set(msg.key, [...(state.followers.get(msg.key) ?? []), msg]);
          continue;
        }
        state.leaders.set(msg.key, msg);
        candidates.push(msg);
      }
      await mapLimit(candidates, concurrency, async (msg) => {
        try {
          const begun = await options.strategy.begin(msg, state.deadline);
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
      if (state.inOrder) {
        if (!state.inOrder.consumed) {
          throw new InvalidConsumerConfigError(
            'a FIFO batch is consumed in order by the middleware: the business handler must hand it the business (use forEachMessage)',
          );
        }
        request.response = await finish(state);
        return;
      }
      const results = request.context.rocketmq?.results;
      if (!results || results.length !== state.proceeding.length) {
        throw new InvalidConsumerConfigError(
          'the business handler must set one result per message on context.rocketmq.results (use forEachMessage)',
        );
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
        console.error(
          JSON.stringify({
            message: 'consumer batch settled, then failed after routing',
            group: options.group,
            error: String(request.error),
          }),
        );
        request.response = (await state.finished).response;
        return;
      }
      const failure = new TransientFailureError(
        `handler failed: ${request.error?.message ?? 'unknown error'}`,
        'HANDLER_CRASHED',
        { cause: request.error },
      );
      for (const msg of state.inOrder ? state.prepared : state.proceeding) {
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
    if (batch.inOrder) {
      await batch.inOrder((msg) => business(msg, context));
      return { batchItemFailures: [] };
    }
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

const receiveCountOf = (record: SQSRecord): number => Number(record.attributes?.ApproximateReceiveCount ?? '1') || 1;

/**
 * Attempts made before this queue: the retries RocketMQ made before the bridge forwarded the
 * message. The 1-based attempt on the schedule is this plus the SQS receive count (concurrent)
 * or plus the message's own failures and one (orderly). A letter sent back by `ops dlq
 * redrive` starts a fresh schedule (its envelope still says `reconsumeTimes: 16`; counting that
 * would dead-letter it again on its first transient failure). Its redrive count keeps the history.
 */
function attemptOffset(record: SQSRecord, reconsumeTimes: number): number {
  const redriven = Number(record.messageAttributes?.[REDRIVE_COUNT_ATTRIBUTE]?.stringValue ?? 0) > 0;
  return redriven ? 0 : reconsumeTimes;
}

/**
 * Refused at start-up: a schedule the queues cannot carry (too few receives, too short a
 * retention), or dedup records that expire while a copy of a message can still come back.
 */
function assertRecordsOutliveRetries<P, R>(options: RocketMQConsumerOptions<P, R>): DeliveryLifetimes {
  const schedule = options.failures.schedule;
  try {
    const ordering = options.ordering ?? 'concurrent';
    const lifetimes = options.queues
      ? new DeliveryLifetimes(schedule, options.queues, ordering)
      : DeliveryLifetimes.derive(schedule, ordering);
    lifetimes.assertRecordTtl(options.strategy.recordTtlSeconds);
    return lifetimes;
  } catch (error) {
    if (!(error instanceof IncoherentLifetimesError)) throw error;
    throw new InvalidConsumerConfigError(`consumer group ${options.group}: ${error.message}`, { cause: error });
  }
}

/** Orderly groups count each message's failures; refused without a table to count in, or with packing. */
function failureCounterOf<P, R>(
  options: RocketMQConsumerOptions<P, R>,
  lifetimes: DeliveryLifetimes,
): FailureCounter | undefined {
  if (options.ordering !== 'orderly') return undefined;
  const refuse = (why: string) =>
    new InvalidConsumerConfigError(`consumer group ${options.group}: ordering is 'orderly' but ${why}`);
  if (!options.failureCounts)
    throw refuse("no failureCounts table is given: an orderly group's attempt is its message's own failure count");
  if (options.strategy.commitBatch) {
    throw refuse(
      "the strategy packs (tuning.packing / CONSUMER_PACKING): a packed commit writes a batch's records together, so it cannot stop at a message group's first failure",
    );
  }
  return new FailureCounter({
    ...options.failureCounts,
    group: options.group,
    ttlSeconds: lifetimes.failureCountTtlSeconds,
    now: options.now,
  });
}
