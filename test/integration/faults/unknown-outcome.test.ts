import { describe, expect, it } from 'vitest';
import { faultsInOrder, injectFaults, type InjectedFault } from '../../../lib/aws/fault-injection.ts';
import { orderEnvelope, pointsFixture } from '../../support/points-fixture.ts';

const ORDER = { orderNo: 'SO202007051422310088', userId: 88372, points: 300 };

describe('faults the emulator cannot produce, injected at the SDK client', () => {
  it('unknown outcome: the transaction commits, the answer is lost, the SDK retry discovers it was done', async () => {
    // Prepare: guards the dedup record's conditional put: without it the retry would award twice
    const f = await pointsFixture();
    const faults: InjectedFault[] = [];
    injectFaults(f.dynamoDb, faultsInOrder('TransactWriteItemsCommand', ['unknownOutcome']), (x) => faults.push(x));
    const body = orderEnvelope(ORDER);
    const msgId = JSON.parse(body).data.msgId;
    // Act
    const response = await f.invoke([body]);
    // Assess
    expect(faults).toEqual([{ kind: 'unknownOutcome', command: 'TransactWriteItemsCommand' }]);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'duplicate', reason: 'dedup-record-exists', winnerMsgId: msgId });
    expect(await f.ledger('88372')).toHaveLength(1);
    expect(await f.balance('88372')).toBe(300);
  });

  it('a request lost before it reached DynamoDB is retried by the SDK and applied once', async () => {
    const f = await pointsFixture();
    injectFaults(f.dynamoDb, faultsInOrder('TransactWriteItemsCommand', ['lostRequest']));
    await f.invoke([orderEnvelope(ORDER)]);
    expect(f.outcomes()).toEqual(['processed']);
    expect(await f.balance('88372')).toBe(300);
  });

  it('throttling beyond the SDK’s attempts fails the record transiently; the next delivery applies it once', async () => {
    // Per-record mode: packed mode adds its own split-and-retry rounds before failing a record.
    const f = await pointsFixture({ packing: false });
    const faults: InjectedFault[] = [];
    injectFaults(f.dynamoDb, faultsInOrder('TransactWriteItemsCommand', Array(3).fill('throttle')), (x) => faults.push(x));
    await f.send(orderEnvelope(ORDER));
    await f.drain();
    expect(faults).toHaveLength(3); // the SDK's maxAttempts
    const outcomes = f.reports.map((r) => [r.settlement.outcome, r.disposition.action]);
    expect(outcomes[0]).toEqual(['failed', 'retry']);
    expect(outcomes.at(-1)).toEqual(['processed', 'ack']);
    expect(f.reports[0]!.settlement).toMatchObject({ error: { code: 'ProvisionedThroughputExceededException', classification: 'transient' } });
    expect(await f.ledger('88372')).toHaveLength(1);
    expect(await f.balance('88372')).toBe(300);
  });
});
