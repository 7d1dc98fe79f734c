import type { SQSRecord } from 'aws-lambda';
import {
  parseEnvelope,
  type RocketMQMessage,
  signatureRefusals,
  storeTimeRefusal,
  topicRefusal,
} from '../../rocketmq/index.ts';
import { mapLimit } from '../concurrency.ts';
import {
  type ConsumptionError,
  classify,
  invalidEnvelope,
  PastRedriveHorizonError,
  UnauthenticatedMessageError,
  UnsubscribedTopicError,
} from '../failures/errors.ts';
import { fingerprintOf } from '../idempotency/record.ts';
import type { ConsumerMessage, Invocation } from '../settlement.ts';
import { receiveCountOf, redriveCountOf } from '../sqs-attributes.ts';
import { BatchState } from './batch-state.ts';
import type { ConsumerSetup } from './consumer-setup.ts';
import { traceRecord } from './record-trace.ts';

type PrepareSetup<P> = Pick<
  ConsumerSetup<P, unknown>,
  | 'group'
  | 'tracer'
  | 'topic'
  | 'tags'
  | 'horizonSeconds'
  | 'parsePayload'
  | 'keyOf'
  | 'fingerprintFields'
  | 'envelopeKeys'
  | 'counter'
  | 'concurrency'
  | 'now'
>;

/**
 * The first step: every record read before anything is trusted or written. A record is refused
 * (unsigned, not an envelope, not admitted, an unusable payload) or filtered (another tag) and
 * settled here, or it becomes a message with its key, fingerprint and attempt, ready for a runner.
 */
export async function prepareBatch<P>(
  setup: PrepareSetup<P>,
  records: readonly SQSRecord[],
  invocation: Invocation,
): Promise<BatchState<P>> {
  // Before any record is read: keys that cannot be read fail the whole batch, which Lambda retries.
  const refusals = await signatureRefusals(
    records.map((r) => r.body),
    setup.envelopeKeys,
  );
  const batch = new BatchState<P>(records, invocation);
  for (const [i, record] of records.entries()) {
    const msg = prepareRecord(setup, batch, record, refusals.get(i));
    if (msg) batch.messages.push(msg);
  }
  if (setup.counter) await readAttempts(setup, batch);
  return batch;
}

/** One record: refused, filtered, or ready. Settles the record unless it is ready. */
export function prepareRecord<P>(
  setup: PrepareSetup<P>,
  batch: BatchState<P>,
  record: SQSRecord,
  refusal: string | undefined,
): ConsumerMessage<P> | undefined {
  const receiveCount = receiveCountOf(record);
  if (refusal !== undefined) {
    // Nothing of an unauthenticated envelope is trusted, not even its msgId.
    const error = new UnauthenticatedMessageError(refusal);
    batch.settleRecord(record, { attempt: receiveCount, settlement: { outcome: 'failed', error } });
    return undefined;
  }
  let message: RocketMQMessage;
  try {
    message = parseEnvelope(record.body);
  } catch (error) {
    const settlement = { outcome: 'failed' as const, error: invalidEnvelope(error) };
    batch.settleRecord(record, { attempt: receiveCount, settlement });
    return undefined;
  }
  const offset = attemptOffset(record, message.reconsumeTimes);
  batch.attemptOffsets.set(record, offset);
  // Orderly: the first delivery until the failure count is read (`readAttempts`).
  const attempt = offset + (setup.counter ? 1 : receiveCount);
  const msgId = message.msgId;
  // Only an authenticated envelope's context is trusted: the span and the log line follow it from here on.
  const traceId = traceRecord(setup.tracer, setup.group, batch, record, message, attempt);
  const notAdmitted = admissionRefusal(setup, message);
  if (notAdmitted) {
    batch.settleRecord(record, { msgId, traceId, attempt, settlement: { outcome: 'failed', error: notAdmitted } });
    return undefined;
  }
  if (!setup.tags.matches(message.tags)) {
    batch.settleRecord(record, { msgId, traceId, attempt, settlement: { outcome: 'filtered', tag: message.tags } });
    return undefined;
  }
  try {
    const payload = setup.parsePayload(message.body, message);
    const key = setup.keyOf(payload);
    const fingerprint = fingerprintOf(setup.fingerprintFields(payload));
    const span = batch.spans.get(record);
    return { record, message, payload, key, fingerprint, attempt, traceId, ...(span ? { span } : {}) };
  } catch (error) {
    batch.settleRecord(record, { msgId, traceId, attempt, settlement: { outcome: 'failed', error: classify(error) } });
    return undefined;
  }
}

/** Why the group does not act on this authenticated envelope at all (packages/runtime/src/rocketmq/envelope-admission.ts). */
function admissionRefusal<P>(setup: PrepareSetup<P>, message: RocketMQMessage): ConsumptionError | undefined {
  const topic = setup.topic === undefined ? undefined : topicRefusal(message, setup.topic);
  if (topic) return new UnsubscribedTopicError(topic);
  const age = storeTimeRefusal(message, setup.horizonSeconds, setup.now());
  if (age) return new PastRedriveHorizonError(age);
  return undefined;
}

/**
 * Orderly: a redelivered message's attempt is its own failures so far plus one. The read only
 * names the attempt (a failure's fate comes from the count it writes), so a count that cannot
 * be read leaves the record running as its first attempt rather than holding its group.
 */
async function readAttempts<P>(setup: PrepareSetup<P>, batch: BatchState<P>): Promise<void> {
  const counter = setup.counter!;
  await mapLimit(batch.messages, setup.concurrency, async (msg, i) => {
    if (receiveCountOf(msg.record) === 1) return;
    const failures = await counter.failures(msg.record).catch(() => 0);
    batch.messages[i] = { ...msg, attempt: msg.attempt + failures };
  });
}

/**
 * Attempts made before this queue: the retries RocketMQ made before the bridge forwarded the
 * message. The 1-based attempt on the schedule is this plus the SQS receive count (concurrent)
 * or plus the message's own failures and one (orderly). A letter sent back by `ops dlq
 * redrive` starts a fresh schedule (its envelope still says `reconsumeTimes: 16`; counting that
 * would dead-letter it again on its first transient failure). Its redrive count keeps the history.
 */
function attemptOffset(record: SQSRecord, reconsumeTimes: number): number {
  return redriveCountOf(record) > 0 ? 0 : reconsumeTimes;
}
