import type { MiddlewareObj } from '@middy/core';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { LocalSigningKey, PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEAD_LETTER_ATTRIBUTES, FailureRouter } from '../../../src/consumer/failures/failure-router.ts';
import {
  InvalidConsumerConfigError,
  InvalidPayloadError,
  type RecordReport,
  type Settlement,
  TransientFailureError,
} from '../../../src/consumer/index.ts';
import {
  ConsumerEngine,
  type ConsumerInternal,
  ContentionError,
  PayloadConflictError,
  rocketmqConsumer,
} from '../../../src/consumer/internal.ts';
import { MsgIdGenerator, RetrySchedule, writeEnvelope } from '../../../src/rocketmq/index.ts';
import {
  type Award,
  awardRecord,
  consumerUnderTest,
  DLQ_URL,
  GROUP,
  parseAward,
  rawRecord,
} from './consumer-under-test.ts';
import { inMemoryStrategy } from './in-memory-strategy.ts';
import { recordingSqs, serviceError } from './recording-sqs.ts';

/** What the business of these tests returns for the strategy to commit. */
interface Grant {
  readonly points: number;
}
const grant = (msg: { payload: Award }): Grant => ({ points: msg.payload.points });

const failureOf = (report: RecordReport | undefined) =>
  (report?.settlement as Extract<Settlement, { outcome: 'failed' }> | undefined)?.error;
const letterAttributes = (input: Record<string, unknown> | undefined) =>
  Object.fromEntries(
    Object.entries((input?.MessageAttributes ?? {}) as Record<string, { StringValue: string }>).map(([k, v]) => [
      k,
      v.StringValue,
    ]),
  );

afterEach(() => {
  vi.restoreAllMocks();
});

describe('rocketmqConsumer: reading a record before any effect', () => {
  it('acknowledges a message for another tag, or with no tag, as filtered without asking the strategy or the business', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const finished = awardRecord({ orderNo: 'SO1', points: 10 }, { envelope: { tags: 'FINISHED' } });
    const untagged = awardRecord({ orderNo: 'SO2', points: 10 }, { envelope: { tags: undefined } });
    // Act
    const response = await c.invoke([finished, untagged]);
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(c.reportOf(finished)).toMatchObject({
      group: GROUP,
      settlement: { outcome: 'filtered', tag: 'FINISHED' },
      disposition: { action: 'ack' },
      attempt: 1,
    });
    expect(c.reportOf(finished)?.msgId).toMatch(/^[0-9A-F]{32}$/);
    expect(c.reportOf(finished)?.key).toBeUndefined();
    expect(c.reportOf(untagged)?.settlement).toEqual({ outcome: 'filtered', tag: undefined });
    expect(store.calls).toEqual([]);
    expect(c.businessCalls).toEqual([]);
    expect(c.sent).toEqual([]);
  });

  it('dead-letters an unsigned, a wrongly signed and a changed envelope at once as UNAUTHENTICATED_MESSAGE, unread, and acts on the signed one', async () => {
    // Prepare: the consumer holds the process's generated key, as every consumer built directly does
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const ids = new MsgIdGenerator();
    const envelope = (orderNo: string) =>
      writeEnvelope({
        topic: 'ORDER_TOPIC',
        msgId: ids.next(),
        tags: 'PAID',
        body: JSON.stringify({ orderNo, points: 5 }),
      });
    const unsigned = rawRecord(envelope('SO-UNSIGNED'), { unsigned: true });
    const otherKey = rawRecord(new LocalSigningKey().sign(envelope('SO-OTHER-KEY')), { unsigned: true });
    const changed = rawRecord(
      PROCESS_SIGNING_KEY.sign(envelope('SO-CHANGED')).replace('\\"points\\":5', '\\"points\\":500000'),
      { unsigned: true },
    );
    const genuine = awardRecord({ orderNo: 'SO-GENUINE', points: 5 });
    // Act
    const response = await c.invoke([unsigned, otherKey, changed, genuine]);
    // Assess
    expect(changed.body).toContain('500000');
    expect(response).toEqual({ batchItemFailures: [] });
    expect(
      [unsigned, otherKey, changed].map((r) => [failureOf(c.reportOf(r))?.code, failureOf(c.reportOf(r))?.message]),
    ).toEqual([
      ['UNAUTHENTICATED_MESSAGE', 'the envelope is not signed'],
      ['UNAUTHENTICATED_MESSAGE', expect.stringMatching(/^the envelope names signing key [\w-]{16}, which is none/)],
      ['UNAUTHENTICATED_MESSAGE', "the envelope's signature matches none of the signing keys"],
    ]);
    // Nothing of an unauthenticated envelope is trusted, not even its msgId.
    expect([unsigned, otherKey, changed].map((r) => c.reportOf(r)?.msgId)).toEqual([undefined, undefined, undefined]);
    expect(c.businessCalls.map((m) => m.key)).toEqual(['SO-GENUINE']);
    expect(c.reportOf(genuine)?.settlement.outcome).toBe('processed');
  });

  it('dead-letters a body that is not an envelope at once as INVALID_ENVELOPE, on whatever delivery it arrives', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const garbage = rawRecord('hello', { receiveCount: 3 });
    // Act
    const response = await c.invoke([garbage]);
    // Assess: acknowledged (in the DLQ now), with the parser's reason; no msgId known
    expect(response.batchItemFailures).toEqual([]);
    expect(c.reportOf(garbage)).toMatchObject({
      attempt: 3,
      disposition: { action: 'dead-letter', code: 'INVALID_ENVELOPE' },
    });
    expect(c.reportOf(garbage)?.msgId).toBeUndefined();
    expect(failureOf(c.reportOf(garbage))).toMatchObject({
      classification: 'permanent',
      message: 'invalid RocketMQ envelope: body is not JSON',
    });
    const [letter] = c.inputsOf('SendMessageCommand');
    expect(letter).toMatchObject({ QueueUrl: DLQ_URL, MessageBody: 'hello' });
    expect(letterAttributes(letter)).toMatchObject({
      [DEAD_LETTER_ATTRIBUTES.code]: 'INVALID_ENVELOPE',
      [DEAD_LETTER_ATTRIBUTES.attempt]: '3',
    });
    expect(store.calls).toEqual([]);
  });

  it('dead-letters a payload the parser refuses as INVALID_PAYLOAD, naming the message but no key', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const bad = awardRecord({ orderNo: 'SO1', points: 'lots' });
    // Act
    await c.invoke([bad]);
    // Assess
    const report = c.reportOf(bad);
    expect(report).toMatchObject({ disposition: { action: 'dead-letter', code: 'INVALID_PAYLOAD' } });
    expect(report?.msgId).toMatch(/^[0-9A-F]{32}$/);
    expect(report?.key).toBeUndefined();
    expect(failureOf(report)?.message).toBe('points must be a positive integer');
    expect(store.calls).toEqual([]);
  });

  it('retries (does not dead-letter) a parser that crashes on something unexpected: the fault may be the code, not the message', async () => {
    // Prepare: a body that is not JSON inside a good envelope makes the parser's JSON.parse throw a SyntaxError
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const notJson = awardRecord({}, { envelope: { body: '{"orderNo":' } });
    // Act
    const response = await c.invoke([notJson]);
    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: notJson.messageId }]);
    expect(failureOf(c.reportOf(notJson))).toMatchObject({ classification: 'transient', code: 'UNEXPECTED_ERROR' });
    expect(c.reportOf(notJson)?.disposition).toEqual({ action: 'retry', delaySeconds: 10 });
  });

  it('passes the business the parsed message: payload, key, fingerprint and attempt', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const record = awardRecord({ orderNo: 'SO1', points: 10 }, { envelope: { keys: ['SO1'] } });
    // Act
    await c.invoke([record]);
    // Assess
    expect(c.businessCalls).toHaveLength(1);
    expect(c.businessCalls[0]).toMatchObject({
      record,
      payload: { orderNo: 'SO1', points: 10 },
      key: 'SO1',
      attempt: 1,
      message: { topic: 'ORDER_TOPIC', tags: 'PAID', keys: ['SO1'] },
    });
    expect(c.businessCalls[0]!.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(store.committed.get('SO1')).toMatchObject({ value: { points: 10 } });
    expect(c.reportOf(record)).toMatchObject({
      key: 'SO1',
      settlement: { outcome: 'processed' },
      disposition: { action: 'ack' },
    });
  });
});

describe('rocketmqConsumer: the attempt on RocketMQ’s schedule', () => {
  const failing = () => {
    throw new TransientFailureError('points service timed out');
  };

  it.each([
    {
      name: 'a first delivery',
      receiveCount: 1,
      reconsumeTimes: 0,
      redriveCount: undefined,
      attempt: 1,
      disposition: { action: 'retry', delaySeconds: 10 },
    },
    {
      name: 'SQS receives plus the retries RocketMQ made before the bridge',
      receiveCount: 2,
      reconsumeTimes: 3,
      redriveCount: undefined,
      attempt: 5,
      disposition: { action: 'retry', delaySeconds: 180 },
    },
    {
      name: 'a copy whose RocketMQ retries were spent before the bridge',
      receiveCount: 1,
      reconsumeTimes: 16,
      redriveCount: undefined,
      attempt: 17,
      disposition: { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' },
    },
    {
      name: 'a redriven letter: a fresh schedule, whatever its envelope says',
      receiveCount: 1,
      reconsumeTimes: 16,
      redriveCount: 1,
      attempt: 1,
      disposition: { action: 'retry', delaySeconds: 10 },
    },
    {
      name: 'a redrive count of 0: not redriven',
      receiveCount: 1,
      reconsumeTimes: 16,
      redriveCount: 0,
      attempt: 17,
      disposition: { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' },
    },
  ])(
    'counts $name as attempt $attempt',
    async ({ receiveCount, reconsumeTimes, redriveCount, attempt, disposition }) => {
      // Prepare
      const c = consumerUnderTest({ strategy: inMemoryStrategy<Grant>().strategy, business: failing });
      const record = awardRecord(
        { orderNo: 'SO1', points: 10 },
        { envelope: { reconsumeTimes }, receiveCount, ...(redriveCount === undefined ? {} : { redriveCount }) },
      );
      // Act
      await c.invoke([record]);
      // Assess
      expect(c.businessCalls[0]?.attempt).toBe(attempt);
      expect(c.reportOf(record)).toMatchObject({ attempt, disposition });
    },
  );

  it.each([
    ['no receive count at all', undefined],
    ['a receive count that is not a number', 'many'],
  ])('takes %s as the first receive', async (_name, count) => {
    // Prepare
    const c = consumerUnderTest({ strategy: inMemoryStrategy<Grant>().strategy, business: grant });
    const record = awardRecord({ orderNo: 'SO1', points: 10 }, { envelope: { reconsumeTimes: 2 } });
    const { attributes: _none, ...withoutAttributes } = record;
    // A local runner may hand over a record without the attributes Lambda always sets.
    const odd =
      count === undefined
        ? (withoutAttributes as SQSRecord)
        : { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: count } };
    // Act
    await c.invoke([odd]);
    // Assess
    expect(c.reportOf(odd)?.attempt).toBe(3);
  });
});

describe('rocketmqConsumer: copies of one key in one batch', () => {
  it('commits the first copy once and acknowledges the identical later copies as in-batch duplicates', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const [first, second, third] = [1, 2, 3].map(() => awardRecord({ orderNo: 'SO1', points: 10 }));
    // Act
    const response = await c.invoke([first!, second!, third!]);
    // Assess: one business call, one commit; the copies name the first copy's msgId as the winner
    expect(response.batchItemFailures).toEqual([]);
    expect(c.businessCalls).toHaveLength(1);
    expect(store.keysOf('commit')).toEqual(['SO1']);
    const winnerMsgId = c.reportOf(first!)?.msgId;
    expect(c.reportOf(first!)?.settlement).toEqual({ outcome: 'processed' });
    for (const copy of [second!, third!]) {
      expect(c.reportOf(copy)).toMatchObject({
        settlement: { outcome: 'duplicate', reason: 'in-batch-duplicate', winnerMsgId },
        disposition: { action: 'ack' },
      });
    }
  });

  it('dead-letters a later copy with other content as PAYLOAD_CONFLICT and keeps the first copy’s effect', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const first = awardRecord({ orderNo: 'SO1', points: 10 });
    const other = awardRecord({ orderNo: 'SO1', points: 1000 });
    // Act
    await c.invoke([first, other]);
    // Assess
    expect(store.committed.get('SO1')?.value).toEqual({ points: 10 });
    expect(c.reportOf(other)?.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    const conflict = failureOf(c.reportOf(other));
    expect(conflict).toBeInstanceOf(PayloadConflictError);
    expect(conflict).toMatchObject({
      key: 'SO1',
      existingMsgId: c.reportOf(first)?.msgId,
      existingFingerprint: c.businessCalls[0]!.fingerprint,
    });
  });

  it('tells duplicates from conflicts by the fingerprint fields only, when the consumer names them', async () => {
    // Prepare: the copies differ in a note the business ignores
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({
      strategy: store.strategy,
      business: grant,
      fingerprintFields: (a) => ({ orderNo: a.orderNo, points: a.points }),
    });
    const first = awardRecord({ orderNo: 'SO1', points: 10, note: 'first send' });
    const resent = awardRecord({ orderNo: 'SO1', points: 10, note: 'resent by the shop' });
    // Act
    await c.invoke([first, resent]);
    // Assess
    expect(c.reportOf(resent)?.settlement).toMatchObject({ outcome: 'duplicate', reason: 'in-batch-duplicate' });
  });

  it('sends later copies back (IN_BATCH_LEADER_FAILED) when the first copy failed, without running the business for them', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({
      strategy: store.strategy,
      business: () => {
        throw new TransientFailureError('ledger unavailable');
      },
    });
    const first = awardRecord({ orderNo: 'SO1', points: 10 });
    const copy = awardRecord({ orderNo: 'SO1', points: 10 });
    const conflicting = awardRecord({ orderNo: 'SO1', points: 99 });
    // Act
    const response = await c.invoke([first, copy, conflicting]);
    // Assess: all three come back; the copies are judged on their own next time
    expect(c.businessCalls).toHaveLength(1);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      [first, copy, conflicting].map((r) => r.messageId).sort(),
    );
    for (const later of [copy, conflicting]) {
      expect(failureOf(c.reportOf(later))).toMatchObject({
        code: 'IN_BATCH_LEADER_FAILED',
        classification: 'transient',
      });
    }
  });

  it('acknowledges later copies of a key whose first copy the strategy already knew as a duplicate', async () => {
    // Prepare: SO1 was committed by an earlier invocation
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    await c.invoke([awardRecord({ orderNo: 'SO1', points: 10 })]);
    const [again, copy] = [awardRecord({ orderNo: 'SO1', points: 10 }), awardRecord({ orderNo: 'SO1', points: 10 })];
    // Act
    await c.invoke([again!, copy!]);
    // Assess
    expect(c.reportOf(again!)?.settlement).toMatchObject({ outcome: 'duplicate', reason: 'dedup-record-exists' });
    expect(c.reportOf(copy!)?.settlement).toMatchObject({
      outcome: 'duplicate',
      reason: 'in-batch-duplicate',
      winnerMsgId: c.reportOf(again!)?.msgId,
    });
    expect(c.businessCalls).toHaveLength(1);
  });
});

describe('rocketmqConsumer: the strategy’s begin', () => {
  it('settles a record begin already knows (a committed duplicate) without running the business', async () => {
    // Prepare: the first delivery commits; the second is a redelivery of the same message
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const record = awardRecord({ orderNo: 'SO1', points: 10 });
    await c.invoke([record]);
    // Act
    const response = await c.invoke([{ ...record, messageId: 'm-redelivered' }]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(c.businessCalls).toHaveLength(1);
    expect(store.keysOf('commit')).toEqual(['SO1']);
    expect(c.reports.at(-1)).toMatchObject({
      sqsMessageId: 'm-redelivered',
      settlement: { outcome: 'duplicate', reason: 'dedup-record-exists' },
      disposition: { action: 'ack' },
    });
  });

  it('hands the lease token begin returned to the business and to commit', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({ begin: () => ({ proceed: true, leaseToken: 7 }) });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    // Act
    await c.invoke([awardRecord({ orderNo: 'SO1', points: 10 })]);
    // Assess
    expect(c.businessCalls[0]?.leaseToken).toBe(7);
    expect(store.calls.filter((call) => call.op === 'commit')).toEqual([{ op: 'commit', key: 'SO1', leaseToken: 7 }]);
  });

  it('fails a record whose begin throws, classified, and runs the business for the others', async () => {
    // Prepare: SO1's begin is throttled past the SDK's retries
    const store = inMemoryStrategy<Grant>({
      begin: (msg) =>
        msg.key === 'SO1' ? serviceError('ProvisionedThroughputExceededException', 'rate exceeded') : undefined,
    });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const [throttled, fine] = [
      awardRecord({ orderNo: 'SO1', points: 10 }),
      awardRecord({ orderNo: 'SO2', points: 20 }),
    ];
    // Act
    const response = await c.invoke([throttled!, fine!]);
    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: throttled!.messageId }]);
    expect(failureOf(c.reportOf(throttled!))).toMatchObject({
      code: 'ProvisionedThroughputExceededException',
      classification: 'transient',
    });
    expect(c.businessCalls.map((m) => m.key)).toEqual(['SO2']);
    expect(store.keysOf('abort')).toEqual([]);
  });

  it('gives begin the invocation’s deadline: now plus the time Lambda has left, or a minute when the context cannot tell', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, now: () => 1_000_000 });
    const timed: Context = { ...lambdaContext('consumer-under-test', 30_000), getRemainingTimeInMillis: () => 12_345 };
    const { getRemainingTimeInMillis: _untimed, ...untimed } = lambdaContext('consumer-under-test', 30_000);
    // Act
    await c.invoke([awardRecord({ orderNo: 'SO1', points: 10 })], timed);
    await c.invoke([awardRecord({ orderNo: 'SO2', points: 10 })], untimed as Context);
    // Assess
    expect(store.calls.filter((call) => call.op === 'begin')).toEqual([
      { op: 'begin', key: 'SO1', deadline: 1_012_345 },
      { op: 'begin', key: 'SO2', deadline: 1_060_000 },
    ]);
  });
});

describe('rocketmqConsumer: commit, per record', () => {
  it('aborts and retries a record whose commit fails transiently, and commits its batch-mates', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({
      commit: (msg) => (msg.key === 'SO1' ? serviceError('InternalServerError', 'DynamoDB 500') : undefined),
    });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const [failing, fine] = [awardRecord({ orderNo: 'SO1', points: 10 }), awardRecord({ orderNo: 'SO2', points: 20 })];
    // Act
    const response = await c.invoke([failing!, fine!]);
    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: failing!.messageId }]);
    expect(store.keysOf('abort')).toEqual(['SO1']);
    expect(store.calls.find((call) => call.op === 'abort')).toMatchObject({
      error: { code: 'InternalServerError', classification: 'transient' },
    });
    expect([...store.committed.keys()]).toEqual(['SO2']);
    expect(c.inputsOf('ChangeMessageVisibilityCommand')).toEqual([
      expect.objectContaining({ ReceiptHandle: failing!.receiptHandle, VisibilityTimeout: 10 }),
    ]);
  });

  it('retries a commit cancelled by TransactionConflict inside the invocation, then settles it', async () => {
    // Prepare: the first two commits meet another transaction on the same item
    const conflict = () =>
      new ContentionError('transaction cancelled: None, TransactionConflict', 'TransactionConflict');
    const store = inMemoryStrategy<Grant>({ commit: (_msg, _value, call) => (call <= 2 ? conflict() : undefined) });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const record = awardRecord({ orderNo: 'SO1', points: 10 });
    // Act
    const response = await c.invoke([record]);
    // Assess: three commits, no abort, processed
    expect(response.batchItemFailures).toEqual([]);
    expect(store.keysOf('commit')).toEqual(['SO1', 'SO1', 'SO1']);
    expect(store.keysOf('abort')).toEqual([]);
    expect(c.reportOf(record)?.settlement).toEqual({ outcome: 'processed' });
  });

  it('fails the record as TransactionConflict (retried on the schedule) once the in-invocation retries are spent', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({
      commit: () => new ContentionError('transaction cancelled: TransactionConflict', 'TransactionConflict'),
    });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, contentionRetries: 1 });
    const record = awardRecord({ orderNo: 'SO1', points: 10 });
    // Act
    const response = await c.invoke([record]);
    // Assess: the first commit plus one retry, then abort
    expect(store.keysOf('commit')).toEqual(['SO1', 'SO1']);
    expect(store.keysOf('abort')).toEqual(['SO1']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(failureOf(c.reportOf(record))?.code).toBe('TransactionConflict');
  });

  it('does not retry other failures inside the invocation', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({ commit: () => serviceError('ThrottlingException') });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    // Act
    await c.invoke([awardRecord({ orderNo: 'SO1', points: 10 })]);
    // Assess
    expect(store.keysOf('commit')).toEqual(['SO1']);
  });

  it('dead-letters a record whose commit finds a conflicting effect already there', async () => {
    // Prepare: SO1 was committed with other content by an earlier invocation
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    await c.invoke([awardRecord({ orderNo: 'SO1', points: 10 })]);
    const other = awardRecord({ orderNo: 'SO1', points: 500 });
    // Act
    await c.invoke([other]);
    // Assess
    expect(c.reportOf(other)?.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    expect(store.keysOf('abort')).toEqual(['SO1']);
    expect(store.committed.get('SO1')?.value).toEqual({ points: 10 });
  });

  it('aborts a record whose business threw, without committing it: retried when transient, dead-lettered when permanent', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest<Grant>({
      strategy: store.strategy,
      business: (msg) => {
        if (msg.key === 'SO1') throw new Error('points rate table unavailable');
        if (msg.key === 'SO2') throw new InvalidPayloadError('user is closed');
        return grant(msg);
      },
    });
    const [crashing, refused, fine] = [
      awardRecord({ orderNo: 'SO1', points: 1 }),
      awardRecord({ orderNo: 'SO2', points: 2 }),
      awardRecord({ orderNo: 'SO3', points: 3 }),
    ];
    // Act
    const response = await c.invoke([crashing!, refused!, fine!]);
    // Assess
    expect(store.keysOf('commit')).toEqual(['SO3']);
    expect(store.keysOf('abort').sort()).toEqual(['SO1', 'SO2']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: crashing!.messageId }]);
    expect(failureOf(c.reportOf(crashing!))).toMatchObject({
      code: 'UNEXPECTED_ERROR',
      message: 'Error: points rate table unavailable',
    });
    expect(c.reportOf(refused!)?.disposition).toEqual({ action: 'dead-letter', code: 'INVALID_PAYLOAD' });
  });

  it('reports a record whose dead letter cannot be sent as a batch item failure, so it is never lost', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({
      strategy: store.strategy,
      business: grant,
      sqsAnswer: ({ command }) => (command === 'SendMessageCommand' ? serviceError('ServiceUnavailable') : undefined),
    });
    const bad = awardRecord({ orderNo: 'SO1', points: -1 });
    // Act
    const response = await c.invoke([bad]);
    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);
    expect(c.reportOf(bad)?.disposition).toEqual({ action: 'retry-dead-letter' });
  });
});

describe('rocketmqConsumer: commit, packed', () => {
  it('commits the successful records of a batch together and settles each from the strategy’s answer', async () => {
    // Prepare: SO1's business fails; the packer settles SO3 as a duplicate and fails SO4
    const store = inMemoryStrategy<Grant>({
      commitBatch: (msgs) =>
        msgs.map((m): Settlement => {
          if (m.key === 'SO3') return { outcome: 'duplicate', reason: 'effect-already-present' };
          if (m.key === 'SO4')
            return { outcome: 'failed', error: new TransientFailureError('contended', 'TransactionConflict') };
          return { outcome: 'processed' };
        }),
    });
    const c = consumerUnderTest<Grant>({
      strategy: store.strategy,
      business: (msg) => {
        if (msg.key === 'SO1') throw new TransientFailureError('ledger unavailable');
        return grant(msg);
      },
    });
    const records = ['SO1', 'SO2', 'SO3', 'SO4'].map((orderNo) => awardRecord({ orderNo, points: 5 }));
    const copyOfSo2 = awardRecord({ orderNo: 'SO2', points: 5 });
    // Act
    const response = await c.invoke([...records, copyOfSo2]);
    // Assess: one batch commit of the three that succeeded, never a per-record commit
    expect(store.calls.filter((call) => call.op === 'commitBatch')).toEqual([
      { op: 'commitBatch', keys: ['SO2', 'SO3', 'SO4'] },
    ]);
    expect(store.keysOf('commit')).toEqual([]);
    expect(store.keysOf('abort')).toEqual(['SO1', 'SO4']);
    expect(c.reportOf(records[1]!)?.settlement).toEqual({ outcome: 'processed' });
    expect(c.reportOf(records[2]!)?.settlement).toEqual({ outcome: 'duplicate', reason: 'effect-already-present' });
    expect(c.reportOf(copyOfSo2)?.settlement).toMatchObject({ outcome: 'duplicate', reason: 'in-batch-duplicate' });
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      [records[0]!.messageId, records[3]!.messageId].sort(),
    );
  });

  it('fails and aborts every record of the pack when the batch commit throws', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({
      commitBatch: () => serviceError('RequestLimitExceeded', 'account throughput exceeded'),
    });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const records = ['SO1', 'SO2'].map((orderNo) => awardRecord({ orderNo, points: 5 }));
    // Act
    const response = await c.invoke(records);
    // Assess
    expect(store.keysOf('abort')).toEqual(['SO1', 'SO2']);
    expect(response.batchItemFailures).toHaveLength(2);
    for (const r of records)
      expect(failureOf(c.reportOf(r))).toMatchObject({ code: 'RequestLimitExceeded', classification: 'transient' });
  });

  it('does not call the batch commit when no business succeeded', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({ commitBatch: () => undefined });
    const c = consumerUnderTest({
      strategy: store.strategy,
      business: () => {
        throw new InvalidPayloadError('user is closed');
      },
    });
    // Act
    await c.invoke([awardRecord({ orderNo: 'SO1', points: 5 })]);
    // Assess
    expect(store.keysOf('commitBatch')).toEqual([]);
    expect(store.keysOf('abort')).toEqual(['SO1']);
  });
});

describe('rocketmqConsumer: a handler that throws (onError)', () => {
  it('keeps the settlement of a record settled before the crash, and fails only the rest', async () => {
    // Prepare: one record at a time; SO2's commit fails and so does its abort, which throws out of the middleware
    const store = inMemoryStrategy<Grant>({
      commit: (msg) => (msg.key === 'SO2' ? serviceError('InternalServerError') : undefined),
      abort: (_msg, _error, call) => (call === 1 ? new Error('abort lost its connection') : undefined),
    });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, concurrency: 1 });
    const [committed, crashed] = [
      awardRecord({ orderNo: 'SO1', points: 1 }),
      awardRecord({ orderNo: 'SO2', points: 2 }),
    ];
    // Act
    const response = await c.invoke([committed!, crashed!]);
    // Assess: SO1 stays processed; SO2 is aborted again and retried as HANDLER_CRASHED
    expect(c.reportOf(committed!)?.settlement).toEqual({ outcome: 'processed' });
    expect(failureOf(c.reportOf(crashed!))).toMatchObject({
      code: 'HANDLER_CRASHED',
      message: 'handler failed: abort lost its connection',
    });
    expect(store.keysOf('abort')).toEqual(['SO2', 'SO2']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: crashed!.messageId }]);
  });

  it('lets the error through when it happened before the middleware read a record (Lambda retries the batch)', async () => {
    // Prepare: a middleware used before the consumer's fails in its before
    const store = inMemoryStrategy<Grant>();
    const failingSecrets: MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal> = {
      before: async () => {
        throw new Error('secret unavailable');
      },
    };
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, before: [failingSecrets] });
    // Act
    const invocation = c.invoke([awardRecord({ orderNo: 'SO1', points: 1 })]);
    // Assess
    await expect(invocation).rejects.toThrow('secret unavailable');
    expect(store.calls).toEqual([]);
    expect(c.reports).toEqual([]);
    expect(c.sent).toEqual([]);
  });
});

describe('rocketmqConsumer: a batch is routed once', () => {
  it('reports every record and answers as routed when an observer throws, without routing anything twice', async () => {
    // Prepare: the observer throws on the first report; the batch holds one award and one letter
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const store = inMemoryStrategy<Grant>();
    const observed: string[] = [];
    const c = consumerUnderTest<Grant>({
      strategy: store.strategy,
      business: (msg) => {
        if (msg.key === 'SO2') throw new TransientFailureError('ledger unavailable');
        return grant(msg);
      },
      onReport: (r) => {
        observed.push(r.sqsMessageId);
        if (observed.length === 1) throw new Error('metrics buffer full');
      },
    });
    const [award, retried, bad] = [
      awardRecord({ orderNo: 'SO1', points: 1 }),
      awardRecord({ orderNo: 'SO2', points: 2 }),
      awardRecord({ orderNo: 'SO3', points: -3 }),
    ];
    // Act
    const response = await c.invoke([award!, retried!, bad!]);
    // Assess: every record observed once; one letter, one visibility change; the routed answer stands
    expect(observed.sort()).toEqual([award!, retried!, bad!].map((r) => r.messageId).sort());
    expect(c.inputsOf('SendMessageCommand')).toHaveLength(1);
    expect(c.inputsOf('ChangeMessageVisibilityCommand')).toHaveLength(1);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: retried!.messageId }] });
    expect(store.keysOf('abort')).toEqual(['SO2']);
    expect(log).toHaveBeenCalledOnce();
    expect(JSON.parse(String(log.mock.calls[0]![0]))).toMatchObject({
      message: 'consumer batch settled, then failed after routing',
      group: GROUP,
      error: 'Error: metrics buffer full',
    });
  });

  it('answers the same when the packed path’s observer throws', async () => {
    // Prepare
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const store = inMemoryStrategy<Grant>({ commitBatch: () => undefined });
    const c = consumerUnderTest({
      strategy: store.strategy,
      business: grant,
      onReport: () => {
        throw new Error('log sink closed');
      },
    });
    // Act
    const response = await c.invoke([awardRecord({ orderNo: 'SO1', points: 1 })]);
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(store.committed.has('SO1')).toBe(true);
  });

  it('works without an observer', async () => {
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, onReport: undefined });
    expect(await c.invoke([awardRecord({ orderNo: 'SO1', points: 1 })])).toEqual({ batchItemFailures: [] });
    expect(c.reports).toEqual([]);
  });
});

describe('rocketmqConsumer: configuration refused at start-up', () => {
  const failures = () => new FailureRouter({ sqs: recordingSqs().sqs, group: GROUP, deadLetterQueueUrl: DLQ_URL });
  const options = {
    group: GROUP,
    tagExpression: 'PAID',
    parsePayload: parseAward,
    keyOf: (a: Award) => a.orderNo,
    business: grant,
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
  };

  it('refuses dedup records that expire while a copy of a message can still come back', () => {
    const build = () =>
      rocketmqConsumer(
        new ConsumerEngine({
          ...options,
          strategy: inMemoryStrategy<Grant>({ recordTtlSeconds: 7 * 86_400 }).strategy,
          failures: failures(),
        }),
      );
    expect(build).toThrow(InvalidConsumerConfigError);
    expect(build).toThrow(/consumer group points-consumer-group: idempotency records live 604800s/);
  });

  it('refuses queues that cannot carry the schedule, and accepts queues that can', () => {
    const strategy = inMemoryStrategy<Grant>({ recordTtlSeconds: Number.POSITIVE_INFINITY }).strategy;
    const queues = { maxReceiveCount: 17, sourceRetentionSeconds: 9 * 86_400, deadLetterRetentionSeconds: 14 * 86_400 };
    expect(() =>
      rocketmqConsumer(
        new ConsumerEngine({ ...options, strategy, failures: failures(), queues: { ...queues, maxReceiveCount: 5 } }),
      ),
    ).toThrow(/maxReceiveCount is 5/);
    expect(() =>
      rocketmqConsumer(new ConsumerEngine({ ...options, strategy, failures: failures(), queues })),
    ).not.toThrow();
  });

  it('lets an error that is not about lifetimes through unchanged', () => {
    // Prepare: a router whose schedule is missing (a hand-built stand-in)
    const broken = Object.assign(Object.create(FailureRouter.prototype) as FailureRouter, { schedule: undefined });
    // Act / Assess
    expect(() =>
      rocketmqConsumer(
        new ConsumerEngine({ ...options, strategy: inMemoryStrategy<Grant>().strategy, failures: broken }),
      ),
    ).toThrow(TypeError);
  });

  it('refuses an invalid tag expression', () => {
    expect(() =>
      rocketmqConsumer(
        new ConsumerEngine({
          ...options,
          tagExpression: '||',
          strategy: inMemoryStrategy<Grant>().strategy,
          failures: failures(),
        }),
      ),
    ).toThrow(/invalid tag expression/);
  });
});

describe('RetrySchedule on the consumer: a short configured schedule', () => {
  it('dead-letters a record on the delivery after its last configured retry', async () => {
    // Prepare: two retries; deliveries 2 and 3 fail
    const c = consumerUnderTest<Grant>({
      strategy: inMemoryStrategy<Grant>({ recordTtlSeconds: Number.POSITIVE_INFINITY }).strategy,
      business: () => {
        throw new TransientFailureError('still down');
      },
      schedule: new RetrySchedule([1, 2]),
    });
    const [second, third] = [
      awardRecord({ orderNo: 'SO1', points: 1 }, { receiveCount: 2 }),
      awardRecord({ orderNo: 'SO2', points: 1 }, { receiveCount: 3 }),
    ];
    // Act
    await c.invoke([second!, third!]);
    // Assess
    expect(c.reportOf(second!)?.disposition).toEqual({ action: 'retry', delaySeconds: 2 });
    expect(c.reportOf(third!)?.disposition).toEqual({ action: 'dead-letter', code: 'RETRIES_EXHAUSTED' });
  });
});
