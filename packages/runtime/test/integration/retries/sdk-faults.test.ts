import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { pointsFixture as basePointsFixture, orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { awsError, injectFault } from './sdk-faults.ts';

const ORDER = { orderNo: 'SO202007051422310088', userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' };

/**
 * What DynamoDB answers when another transaction holds one of the items (moto never does): the award's
 * transaction is [dedup record, ledger entry, balance, outbox item], and the balance is the hot item.
 */
const transactionConflict = () =>
  new TransactionCanceledException({
    message:
      'Transaction cancelled, please refer cancellation reasons for specific reasons [None, None, TransactionConflict, None]',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: [
      { Code: 'None' },
      { Code: 'None' },
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
      { Code: 'None' },
    ],
  });

const TRANSACTION = 'TransactWriteItemsCommand';

const MODES = [
  { mode: 'per-record', packing: false },
  { mode: 'packed', packing: true },
] as const;

/**
 * Faults DynamoDB raises and the emulator never does, injected at the SDK client inside its
 * retry loop (`packages/tools/src/instrumentation/fault-injection.ts`). Every case first proves its fault fired, and
 * how many requests the client sent, so a case can never pass because nothing was injected.
 */
describe.each(MODES)(
  'faults the emulator cannot produce, injected at the SDK client (points consumer, $mode)',
  ({ packing }) => {
    const pointsFixture = () => basePointsFixture({ packing });

    it('retries a TransactionConflict inside the invocation and awards once', async () => {
      // Prepare
      const f = await pointsFixture();
      const fault = injectFault(f.dynamoDb, { command: TRANSACTION, times: 1, error: transactionConflict });
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess: the SDK does not retry a cancellation; the consumer did, in the same invocation
      expect(fault).toMatchObject({ injected: 1, calls: 2 });
      expect(response.batchItemFailures).toEqual([]);
      expect(f.reports.map((r) => [r.settlement.outcome, r.disposition.action])).toEqual([['processed', 'ack']]);
      expect(await f.ledger('88372')).toHaveLength(1);
      expect(await f.balance('88372')).toBe(300);
    });

    it('hands a conflict that outlasts the in-invocation retries to the schedule, then awards once', async () => {
      // Prepare: four conflicts in a row (the first try and the 3 in-invocation retries)
      const f = await pointsFixture();
      const fault = injectFault(f.dynamoDb, { command: TRANSACTION, times: 4, error: transactionConflict });
      // Act
      await f.send(orderEnvelope(ORDER));
      await f.drain();
      // Assess: four cancelled tries in the first delivery, one successful in the second
      expect(fault).toMatchObject({ injected: 4, calls: 5 });
      expect(f.reports.map((r) => [r.attempt, r.settlement.outcome, r.disposition.action])).toEqual([
        [1, 'failed', 'retry'],
        [2, 'processed', 'ack'],
      ]);
      expect(f.reports[0]!.settlement).toMatchObject({
        error: { code: 'TransactionConflict', classification: 'transient' },
      });
      expect(await f.balance('88372')).toBe(300);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('rides out throttling of the transaction with the SDK’s retries', async () => {
      // Prepare
      const f = await pointsFixture();
      const fault = injectFault(f.dynamoDb, {
        command: TRANSACTION,
        times: 2,
        error: () => awsError('ThrottlingException', 'Throughput exceeds the current capacity.'),
      });
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess
      expect(fault).toMatchObject({ injected: 2, calls: 3 });
      expect(response.batchItemFailures).toEqual([]);
      expect(f.outcomes()).toEqual(['processed']);
      expect(await f.balance('88372')).toBe(300);
    });

    it('never awards twice when a committed transaction’s answer is lost and the SDK retries it (unknown outcome)', async () => {
      // Prepare: the transaction commits, its answer is lost, the SDK sends it again. Guarded by
      // the dedup record's conditional put: without it the retry would award twice.
      const f = await pointsFixture();
      const fault = injectFault(f.dynamoDb, { command: TRANSACTION, times: 1, fault: 'unknownOutcome' });
      const body = orderEnvelope(ORDER);
      const msgId = JSON.parse(body).data.msgId;
      // Act
      const response = await f.invoke([body]);
      // Assess: the retry meets its own dedup record: a duplicate, not a second award
      expect(fault).toMatchObject({ injected: 1, calls: 2 });
      expect(response.batchItemFailures).toEqual([]);
      expect(f.reports[0]!.settlement).toMatchObject({
        outcome: 'duplicate',
        reason: 'dedup-record-exists',
        winnerMsgId: msgId,
      });
      expect(await f.ledger('88372')).toHaveLength(1);
      expect(await f.balance('88372')).toBe(300);
    });

    it('applies once a request lost before it reached DynamoDB, retried by the SDK', async () => {
      // Prepare: the connection resets before the request is sent
      const f = await pointsFixture();
      const fault = injectFault(f.dynamoDb, { command: TRANSACTION, times: 1, fault: 'lostRequest' });
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess: the second request is the first DynamoDB saw, so the record is processed, not a duplicate
      expect(fault).toMatchObject({ injected: 1, calls: 2 });
      expect(response.batchItemFailures).toEqual([]);
      expect(f.outcomes()).toEqual(['processed']);
      expect(await f.ledger('88372')).toHaveLength(1);
      expect(await f.balance('88372')).toBe(300);
    });
  },
);

describe('faults beyond the SDK’s attempts (points consumer, per-record)', () => {
  it('fails a record throttled on every SDK attempt transiently; the next delivery applies it once', async () => {
    // Prepare: per-record mode (packed mode adds its own split-and-retry rounds before failing a record)
    const f = await basePointsFixture({ packing: false });
    const fault = injectFault(f.dynamoDb, { command: TRANSACTION, times: 3, fault: 'throttle' });
    // Act
    await f.send(orderEnvelope(ORDER));
    await f.drain();
    // Assess: the SDK's three attempts all throttled, then one scheduled retry that commits
    expect(fault).toMatchObject({ injected: 3, calls: 4 });
    expect(f.reports.map((r) => [r.attempt, r.settlement.outcome, r.disposition.action])).toEqual([
      [1, 'failed', 'retry'],
      [2, 'processed', 'ack'],
    ]);
    expect(f.reports[0]!.settlement).toMatchObject({
      error: { code: 'ProvisionedThroughputExceededException', classification: 'transient' },
    });
    expect(await f.ledger('88372')).toHaveLength(1);
    expect(await f.balance('88372')).toBe(300);
  });
});
