import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { orderlySchedule } from '../../../src/config/index.ts';
import { FailureCounter } from '../../../src/consumer/failures/failure-counter.ts';
import {
  InvalidConsumerConfigError,
  type RecordReport,
  type Settlement,
  TransientFailureError,
} from '../../../src/consumer/index.ts';
import { HeldBackError, WriteRejectedError } from '../../../src/consumer/internal.ts';
import { type Award, awardRecord, consumerUnderTest, rawRecord } from './consumer-under-test.ts';
import { inMemoryStrategy } from './in-memory-strategy.ts';
import { recordingDynamoDb } from './recording-dynamodb.ts';
import { serviceError } from './recording-sqs.ts';

interface Grant {
  readonly points: number;
}
const grant = (msg: { payload: Award }): Grant => ({ points: msg.payload.points });
const failureOf = (report: RecordReport | undefined) =>
  (report?.settlement as Extract<Settlement, { outcome: 'failed' }> | undefined)?.error;

/** The record as Lambda delivers it from a FIFO queue: its message group in the attributes. */
const inGroup = (group: string, record: SQSRecord): SQSRecord => ({
  ...record,
  attributes: { ...record.attributes, MessageGroupId: group },
});
const award = (group: string, orderNo: string, options: { points?: number; receiveCount?: number } = {}) =>
  inGroup(group, awardRecord({ orderNo, points: options.points ?? 10 }, { receiveCount: options.receiveCount }));

/**
 * The idempotency table as far as failure counts go: UpdateItem's ADD under the per-delivery
 * condition, GetItem of the count. `failures` seeds counts by SQS message id.
 */
function countTable(
  options: { failures?: Record<string, number>; fail?: 'GetItemCommand' | 'UpdateItemCommand' } = {},
) {
  const items = new Map<string, { failures: number; lastDelivery?: string }>(
    Object.entries(options.failures ?? {}).map(([messageId, failures]) => [
      `points-consumer-group#failures#${messageId}`,
      { failures },
    ]),
  );
  const db = recordingDynamoDb((sent) => {
    if (sent.command === options.fail) return serviceError('ThrottlingException');
    const id = (sent.input.Key as { id: string }).id;
    const item = items.get(id);
    if (sent.command === 'GetItemCommand') return item ? { Item: { failures: item.failures } } : {};
    const values = sent.input.ExpressionAttributeValues as Record<string, unknown>;
    if (item?.lastDelivery === values[':delivery']) {
      return new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
        Item: marshall(item),
      });
    }
    const next = { failures: (item?.failures ?? 0) + 1, lastDelivery: values[':delivery'] as string };
    items.set(id, next);
    return { Attributes: { failures: next.failures } };
  });
  return {
    ...db,
    countOf: (record: SQSRecord) => items.get(`points-consumer-group#failures#${record.messageId}`)?.failures ?? 0,
  };
}

/** An orderly consumer on RocketMQ 5 FIFO's policy (3 s, 17 deliveries) over an in-memory strategy and count table. */
function orderlyConsumer(
  options: {
    business?: (msg: { payload: Award; key: string }) => Grant;
    store?: ReturnType<typeof inMemoryStrategy<Grant>>;
    counts?: ReturnType<typeof countTable>;
    sqsAnswer?: Parameters<typeof consumerUnderTest>[0]['sqsAnswer'];
  } = {},
) {
  const store = options.store ?? inMemoryStrategy<Grant>();
  const counts = options.counts ?? countTable();
  const c = consumerUnderTest<Grant>({
    strategy: store.strategy,
    business: options.business ?? grant,
    schedule: orderlySchedule(),
    ordering: 'orderly',
    failureCounts: { client: counts.client, tableName: 'idempotency', recordIdPrefix: 'points-consumer-group#' },
    sqsAnswer: options.sqsAnswer,
  });
  return { ...c, store, counts };
}

const failingOn =
  (...orderNos: string[]) =>
  (msg: { payload: Award }) => {
    if (orderNos.includes(msg.payload.orderNo)) throw new TransientFailureError(`${msg.payload.orderNo} is not ready`);
    return grant(msg);
  };

describe('orderly consumption: one record of a message group at a time', () => {
  it('the second of three in a group fails: the third is held back unprocessed and uncounted, another group commits meanwhile', async () => {
    // Prepare
    const c = orderlyConsumer({ business: failingOn('SO-A2') });
    const [a1, a2, a3, b1] = [award('A', 'SO-A1'), award('A', 'SO-A2'), award('A', 'SO-A3'), award('B', 'SO-B1')];
    // Act
    const response = await c.invoke([a1!, a2!, b1!, a3!]);
    // Assess: a2 retried after the fixed interval, a3 returned without being run or counted
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      [a2!.messageId, a3!.messageId].sort(),
    );
    expect([...c.store.committed.keys()].sort()).toEqual(['SO-A1', 'SO-B1']);
    expect(c.businessCalls.map((m) => m.key)).not.toContain('SO-A3');
    expect(c.reportOf(a2!)).toMatchObject({ attempt: 1, disposition: { action: 'retry', delaySeconds: 3 } });
    expect(c.reportOf(a3!)).toMatchObject({ attempt: 1, disposition: { action: 'retry', delaySeconds: 0 } });
    expect(failureOf(c.reportOf(a3!))).toBeInstanceOf(HeldBackError);
    expect(failureOf(c.reportOf(a3!))?.message).toBe(
      `message group A waits for its earlier message ${c.reportOf(a2!)!.msgId}, which failed and is retried first`,
    );
    expect(c.inputsOf('ChangeMessageVisibilityCommand')).toEqual([
      expect.objectContaining({ ReceiptHandle: a2!.receiptHandle, VisibilityTimeout: 3 }),
    ]);
    expect(c.inputsOf('ChangeMessageVisibilityBatchCommand')).toEqual([
      expect.objectContaining({ Entries: [{ Id: '0', ReceiptHandle: a3!.receiptHandle, VisibilityTimeout: 0 }] }),
    ]);
    expect([c.counts.countOf(a2!), c.counts.countOf(a3!)]).toEqual([1, 0]);
  });

  it('begins the next record of a group only after the previous one committed', async () => {
    // Prepare
    const c = orderlyConsumer();
    // Act
    await c.invoke([award('A', 'SO-A1'), award('A', 'SO-A2'), award('A', 'SO-A3')]);
    // Assess
    expect(c.store.calls.map((call) => `${call.op} ${'key' in call ? call.key : ''}`)).toEqual([
      'begin SO-A1',
      'commit SO-A1',
      'begin SO-A2',
      'commit SO-A2',
      'begin SO-A3',
      'commit SO-A3',
    ]);
  });

  it('does not let a dead-lettered record block its group: a permanent error goes to the DLQ and the next record is applied', async () => {
    // Prepare: the second award has invalid points
    const c = orderlyConsumer();
    const [a1, bad, a3] = [award('A', 'SO-A1'), award('A', 'SO-BAD', { points: -5 }), award('A', 'SO-A3')];
    // Act
    const response = await c.invoke([a1!, bad!, a3!]);
    // Assess: dead-lettered into the FIFO DLQ with its group and a deduplication id, then the group went on
    expect(response.batchItemFailures).toEqual([]);
    expect(c.reportOf(bad!)?.disposition).toEqual({ action: 'dead-letter', code: 'INVALID_PAYLOAD' });
    expect([...c.store.committed.keys()]).toEqual(['SO-A1', 'SO-A3']);
    expect(c.inputsOf('SendMessageCommand')).toEqual([
      expect.objectContaining({ MessageGroupId: 'A', MessageDeduplicationId: bad!.messageId }),
    ]);
    expect(c.counts.countOf(bad!)).toBe(0);
  });

  it('holds back a later record whatever it is: one for another tag, or one that is not an envelope', async () => {
    // Prepare
    const c = orderlyConsumer({ business: failingOn('SO-A1') });
    const [a1, other, garbage] = [
      award('A', 'SO-A1'),
      inGroup('A', awardRecord({ orderNo: 'SO-X', points: 1 }, { envelope: { tags: 'FINISHED' } })),
      inGroup('A', rawRecord('hello')),
    ];
    // Act
    const response = await c.invoke([a1!, other, garbage]);
    // Assess: nothing after the failure is acknowledged or dead-lettered out of turn
    expect(response.batchItemFailures).toHaveLength(3);
    expect(failureOf(c.reportOf(other))).toBeInstanceOf(HeldBackError);
    expect(failureOf(c.reportOf(garbage))).toBeInstanceOf(HeldBackError);
    expect(c.inputsOf('SendMessageCommand')).toEqual([]);
  });

  it('keeps in-batch copies working inside a group: an identical later copy is a duplicate, one with other content a conflict', async () => {
    // Prepare
    const c = orderlyConsumer();
    const [first, copy, conflicting, next] = [
      award('A', 'SO-A1'),
      award('A', 'SO-A1'),
      award('A', 'SO-A1', { points: 99 }),
      award('A', 'SO-A2'),
    ];
    // Act
    const response = await c.invoke([first!, copy!, conflicting!, next!]);
    // Assess: the conflict is dead-lettered and does not block SO-A2
    expect(response.batchItemFailures).toEqual([]);
    expect(c.reportOf(copy!)?.settlement).toMatchObject({
      outcome: 'duplicate',
      reason: 'in-batch-duplicate',
      winnerMsgId: c.reportOf(first!)!.msgId,
    });
    expect(c.reportOf(conflicting!)?.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    expect(c.store.keysOf('commit')).toEqual(['SO-A1', 'SO-A2']);
  });

  it('runs a later copy on its own when the first copy was dead-lettered', async () => {
    // Prepare: the first copy's commit is refused permanently
    const store = inMemoryStrategy<Grant>({
      commit: (_msg, _value, call) => (call === 1 ? new WriteRejectedError('the ledger refused it') : undefined),
    });
    const c = orderlyConsumer({ store });
    const [first, copy] = [award('A', 'SO-A1'), award('A', 'SO-A1')];
    // Act
    const response = await c.invoke([first!, copy!]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(c.reportOf(first!)?.disposition).toEqual({ action: 'dead-letter', code: 'WRITE_REJECTED' });
    expect(c.reportOf(copy!)?.settlement).toEqual({ outcome: 'processed' });
    expect(store.keysOf('commit')).toEqual(['SO-A1', 'SO-A1']);
  });

  it('fails and aborts a record whose begin throws, and holds its group back', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({
      begin: (msg) => (msg.key === 'SO-A1' ? new TransientFailureError('lease table throttled') : undefined),
    });
    const c = orderlyConsumer({ store });
    const [a1, a2] = [award('A', 'SO-A1'), award('A', 'SO-A2')];
    // Act
    await c.invoke([a1!, a2!]);
    // Assess
    expect(c.reportOf(a1!)?.disposition).toEqual({ action: 'retry', delaySeconds: 3 });
    expect(failureOf(c.reportOf(a2!))).toBeInstanceOf(HeldBackError);
    expect(store.keysOf('begin')).toEqual(['SO-A1']);
  });

  it('settles a record begin already knows without running the business', async () => {
    const store = inMemoryStrategy<Grant>({
      begin: () => ({ proceed: false, settlement: { outcome: 'duplicate', reason: 'lease-completed' } }),
    });
    const c = orderlyConsumer({ store });
    await c.invoke([award('A', 'SO-A1')]);
    expect(c.businessCalls).toEqual([]);
    expect(c.reports[0]?.settlement).toEqual({ outcome: 'duplicate', reason: 'lease-completed' });
  });
});

describe('orderly consumption: the attempt is the message’s own failure count', () => {
  it('names a redelivered record’s attempt from its count, not from its receive count', async () => {
    // Prepare: received 40 times (held back behind others), failed twice itself
    const record = award('A', 'SO-A1', { receiveCount: 40 });
    const c = orderlyConsumer({ counts: countTable({ failures: { [record.messageId]: 2 } }) });
    // Act
    await c.invoke([record]);
    // Assess
    expect(c.reportOf(record)).toMatchObject({ attempt: 3, settlement: { outcome: 'processed' } });
    expect(c.businessCalls[0]!.attempt).toBe(3);
  });

  it('reads no count on a first delivery, and writes none on success', async () => {
    const c = orderlyConsumer();
    await c.invoke([award('A', 'SO-A1')]);
    expect(c.counts.sent).toEqual([]);
  });

  it('counts each failure, retries at the fixed interval, and dead-letters at the maximum, then the group goes on', async () => {
    // Prepare: 16 failures counted already
    const [head, next] = [award('A', 'SO-A1', { receiveCount: 90 }), award('A', 'SO-A2', { receiveCount: 90 })];
    const counts = countTable({ failures: { [head!.messageId]: 16 } });
    const c = orderlyConsumer({ business: failingOn('SO-A1'), counts });
    // Act
    const response = await c.invoke([head!, next!]);
    // Assess: the 17th failure is the last; SO-A2 is applied in the same invocation
    expect(c.reportOf(head!)).toMatchObject({
      attempt: 17,
      disposition: { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' },
    });
    expect(response.batchItemFailures).toEqual([]);
    expect([...c.store.committed.keys()]).toEqual(['SO-A2']);
    expect(counts.countOf(head!)).toBe(17);
  });

  it('adds the retries RocketMQ made before the bridge forwarded the message', async () => {
    const record = inGroup('A', awardRecord({ orderNo: 'SO-A1', points: 1 }, { envelope: { reconsumeTimes: 16 } }));
    const c = orderlyConsumer({ business: failingOn('SO-A1') });
    await c.invoke([record]);
    expect(c.reportOf(record)).toMatchObject({
      attempt: 17,
      disposition: { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' },
    });
  });

  it('retries a failure it cannot count as the attempt it read, and runs a record whose count it cannot read', async () => {
    // Prepare: the table throttles every write
    const record = award('A', 'SO-A1');
    const c = orderlyConsumer({ business: failingOn('SO-A1'), counts: countTable({ fail: 'UpdateItemCommand' }) });
    const unread = award('B', 'SO-B1', { receiveCount: 5 });
    const reading = orderlyConsumer({ counts: countTable({ fail: 'GetItemCommand' }) });
    // Act
    await c.invoke([record]);
    await reading.invoke([unread!]);
    // Assess
    expect(c.reportOf(record)).toMatchObject({ attempt: 1, disposition: { action: 'retry', delaySeconds: 3 } });
    expect(reading.reportOf(unread!)).toMatchObject({ attempt: 1, settlement: { outcome: 'processed' } });
  });

  it('still returns held-back records when making them visible again fails', async () => {
    const c = orderlyConsumer({
      business: failingOn('SO-A1'),
      sqsAnswer: (sent) =>
        sent.command === 'ChangeMessageVisibilityBatchCommand' ? serviceError('ServiceUnavailable') : undefined,
    });
    const [a1, a2] = [award('A', 'SO-A1'), award('A', 'SO-A2')];
    const response = await c.invoke([a1!, a2!]);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([a1!.messageId, a2!.messageId]);
  });
});

describe('FailureCounter', () => {
  it('counts one delivery’s failure once, however often the request is sent, and the next delivery’s again', async () => {
    // Prepare
    const counts = countTable();
    const counter = new FailureCounter({
      client: counts.client,
      tableName: 'idempotency',
      group: 'points-consumer-group',
      recordIdPrefix: 'points-consumer-group#',
      ttlSeconds: 100,
      now: () => 1_000_000,
    });
    const delivery = award('A', 'SO-A1');
    // Act: the SDK resends the update (its answer was lost), then the message comes back under a new receipt handle
    const first = await counter.countFailure(delivery, 'MSG');
    const resent = await counter.countFailure(delivery, 'MSG');
    const next = await counter.countFailure({ ...delivery, receiptHandle: 'another-receive' }, 'MSG');
    // Assess
    expect([first, resent, next]).toEqual([1, 1, 2]);
    expect(counts.inputsOf('UpdateItemCommand')[0]).toMatchObject({
      Key: { id: `points-consumer-group#failures#${delivery.messageId}` },
      ConditionExpression: 'attribute_not_exists(lastDelivery) OR lastDelivery <> :delivery',
      ExpressionAttributeValues: expect.objectContaining({ ':msgId': 'MSG', ':expiresAt': 1000 + 100 }),
    });
  });

  it('lets other errors through', async () => {
    const counts = countTable({ fail: 'UpdateItemCommand' });
    const counter = new FailureCounter({
      client: counts.client,
      tableName: 'idempotency',
      group: 'g',
      recordIdPrefix: 'g#',
      ttlSeconds: 1,
    });
    await expect(counter.countFailure(award('A', 'SO-A1'), undefined)).rejects.toThrow('ThrottlingException');
  });
});

describe('orderly consumption: configuration refused at start-up', () => {
  it('refuses an orderly consumer without a table for its failure counts', () => {
    expect(() =>
      consumerUnderTest<Grant>({
        strategy: inMemoryStrategy<Grant>().strategy,
        schedule: orderlySchedule(),
        ordering: 'orderly',
      }),
    ).toThrow("consumer group points-consumer-group: ordering is 'orderly' but no failureCounts table is given");
  });

  it('refuses a packing strategy on an orderly group, naming both settings', () => {
    const packing = inMemoryStrategy<Grant>({ commitBatch: () => undefined });
    const { client } = countTable();
    expect(() =>
      consumerUnderTest<Grant>({
        strategy: packing.strategy,
        schedule: orderlySchedule(),
        ordering: 'orderly',
        failureCounts: { client, tableName: 't', recordIdPrefix: 'g#' },
      }),
    ).toThrow(/packing is on \(tuning.packing \/ CONSUMER_PACKING\) but ordering is 'orderly'/);
  });

  it('refuses a queue that redrives before a held-back message’s own retries are spent', () => {
    const { client } = countTable();
    const queues = { maxReceiveCount: 17, sourceRetentionSeconds: 4 * 86_400, deadLetterRetentionSeconds: 14 * 86_400 };
    expect(() =>
      consumerUnderTest<Grant>({
        strategy: inMemoryStrategy<Grant>().strategy,
        schedule: orderlySchedule(),
        ordering: 'orderly',
        failureCounts: { client, tableName: 't', recordIdPrefix: 'g#' },
        queues,
      }),
    ).toThrow(InvalidConsumerConfigError);
  });
});

describe('FIFO records on any consumer', () => {
  it('are consumed by message group on a concurrent consumer too, with the receive count as the attempt', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest<Grant>({ strategy: store.strategy, business: failingOn('SO-A1') });
    const [a1, a2] = [award('A', 'SO-A1', { receiveCount: 4 }), award('A', 'SO-A2')];
    // Act
    const response = await c.invoke([a1!, a2!]);
    // Assess
    expect(response.batchItemFailures).toHaveLength(2);
    expect(c.reportOf(a1!)).toMatchObject({ attempt: 4, disposition: { action: 'retry', delaySeconds: 120 } });
    expect(failureOf(c.reportOf(a2!))).toBeInstanceOf(HeldBackError);
  });
});
