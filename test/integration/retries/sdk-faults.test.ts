import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { orderEnvelope, pointsFixture } from '../../support/points-fixture.ts';
import { awsError, injectFault } from './sdk-faults.ts';

const ORDER = { orderNo: 'SO202007051422310088', userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' };

/** What DynamoDB answers when another transaction holds one of the items (moto never does). */
const transactionConflict = () =>
  new TransactionCanceledException({
    message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, None, TransactionConflict]',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: [{ Code: 'None' }, { Code: 'None' }, { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }],
  });

const isTransaction = (name: string) => name === 'TransactWriteItemsCommand';

describe('faults the emulator cannot produce, injected at the SDK client (points consumer)', () => {
  it('retries a TransactionConflict inside the invocation and awards once', async () => {
    // Prepare
    const f = await pointsFixture();
    const fault = injectFault(f.dynamoDb, { command: isTransaction, times: 1, error: transactionConflict });
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess: the SDK does not retry a cancellation; the middleware did, in the same invocation
    expect(fault).toMatchObject({ injected: 1, calls: 2 });
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports.map((r) => [r.settlement.outcome, r.disposition.action])).toEqual([['processed', 'ack']]);
    expect(await f.ledger('88372')).toHaveLength(1);
    expect(await f.balance('88372')).toBe(300);
  });

  it('hands a conflict that outlasts the in-invocation retries to the schedule, then awards once', async () => {
    // Prepare: four conflicts in a row (the first try and the middleware's 3 retries)
    const f = await pointsFixture();
    const fault = injectFault(f.dynamoDb, { command: isTransaction, times: 4, error: transactionConflict });
    // Act
    await f.send(orderEnvelope(ORDER));
    await f.drain();
    // Assess
    expect(fault.injected).toBe(4);
    expect(f.reports.map((r) => [r.attempt, r.settlement.outcome, r.disposition.action])).toEqual([
      [1, 'failed', 'retry'],
      [2, 'processed', 'ack'],
    ]);
    expect(f.reports[0]!.settlement).toMatchObject({ error: { code: 'TransactionConflict', classification: 'transient' } });
    expect(await f.balance('88372')).toBe(300);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('rides out throttling of the transaction with the SDK’s retries', async () => {
    // Prepare
    const f = await pointsFixture();
    const fault = injectFault(f.dynamoDb, { command: isTransaction, times: 2, error: () => awsError('ThrottlingException', 'Throughput exceeds the current capacity.') });
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(fault).toMatchObject({ injected: 2, calls: 3 });
    expect(response.batchItemFailures).toEqual([]);
    expect(await f.balance('88372')).toBe(300);
  });

  it('never awards twice when a committed transaction’s answer is lost and retried', async () => {
    // Prepare: the transaction commits, its answer times out, the SDK sends it again
    const f = await pointsFixture();
    injectFault(f.dynamoDb, { command: isTransaction, times: 1, when: 'after-send', error: () => awsError('TimeoutError', 'socket timed out') });
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess: the retry meets its own dedup record: a duplicate, not a second award
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'duplicate', reason: 'dedup-record-exists' });
    expect(await f.ledger('88372')).toHaveLength(1);
    expect(await f.balance('88372')).toBe(300);
  });
});
