import { ProvisionedThroughputExceededException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { awardEntryId } from '@rocketmq-lambda/consumers/points/index.ts';
import { interceptCommands } from '@rocketmq-lambda/tools/instrumentation/command-interceptor.ts';
import { type RoundTrip, RoundTripCounter } from '@rocketmq-lambda/tools/instrumentation/round-trip-counter.ts';
import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import type { MiddlewareStack } from '@smithy/types';
import { describe, expect, it } from 'vitest';

/** A packed points consumer on fresh resources, with every DynamoDB request it sends recorded. */
async function packedConsumer() {
  const f = await pointsFixture({ packing: true });
  const trips: RoundTrip[] = [];
  const counter = new RoundTripCounter().attach(f.dynamoDb).onRoundTrip((t) => trips.push(t));
  const transactions = () => trips.filter((t) => t.command === 'TransactWriteItemsCommand');
  const sizes = () => transactions().map((t) => (t.input.TransactItems as unknown[]).length);
  return {
    ...f,
    counter,
    trips,
    transactions,
    sizes,
    reset: () => {
      counter.reset();
      trips.length = 0;
      f.reports.length = 0;
    },
  };
}

const award = (orderNo: string, userId: string, points: number) => orderEnvelope({ orderNo, userId, points });
const outcomesByKey = (reports: { key?: string; settlement: { outcome: string } }[]) =>
  Object.fromEntries(reports.map((r) => [r.key, r.settlement.outcome]));

/**
 * Throws a cancellation with `TransactionConflict` on every action touching `userId`'s account,
 * for the first `times` transactions that touch it. Installed after the round-trip counter,
 * so each conflicted attempt is counted as the round trip it would be.
 */
function conflictOnAccount<I extends object, O extends object>(
  f: { dynamoDb: { middlewareStack: MiddlewareStack<I, O> } },
  userId: string,
  times: number,
) {
  let left = times;
  interceptCommands(
    f.dynamoDb,
    'conflictOnAccount',
    async ({ name, input }, send) => {
      const items = input.TransactItems as Array<{ Update?: { Key?: { userId?: { S?: string } } } }> | undefined;
      if (name === 'TransactWriteItemsCommand' && items && left > 0) {
        const reasons = items.map((i) =>
          i.Update?.Key?.userId?.S === userId
            ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
            : { Code: 'None' },
        );
        if (reasons.some((r) => r.Code === 'TransactionConflict')) {
          left--;
          throw new TransactionCanceledException({
            message: 'Transaction cancelled [TransactionConflict] (injected)',
            $metadata: { httpStatusCode: 400 },
            CancellationReasons: reasons,
          });
        }
      }
      return send();
    },
    { inside: 'roundTripCounter' },
  );
}

describe('batch packing: one transaction per batch, per-record outcomes (emulator)', () => {
  it('commits a batch of 10 awards in one transaction, merging one account’s increments', async () => {
    // Prepare
    const f = await packedConsumer();
    const batch = [
      ...Array.from({ length: 4 }, (_, i) => award(`SO-M-${i}`, 'u-merge', 10 + i)),
      ...Array.from({ length: 6 }, (_, i) => award(`SO-S-${i}`, `u-${i}`, 5)),
    ];
    // Act
    const response = await f.invoke(batch);
    // Assess: 10 dedup puts + 10 ledger puts + 7 balance updates (4 increments of u-merge merged into one)
    // + 10 outbox puts (one POINTS_AWARDED per award)
    expect(response.batchItemFailures).toEqual([]);
    expect(f.counter.total).toBe(1);
    expect(f.sizes()).toEqual([37]);
    expect(f.outcomes()).toEqual(Array(10).fill('processed'));
    expect(await f.balance('u-merge')).toBe(10 + 11 + 12 + 13);
    expect(await f.ledger('u-merge')).toHaveLength(4);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('settles a whole batch of redelivered duplicates from one cancellation, with no business write', async () => {
    const f = await packedConsumer();
    const batch = Array.from({ length: 10 }, (_, i) => award(`SO-D-${i}`, `u-${i % 3}`, 7));
    await f.invoke(batch);
    const balances = await Promise.all(['u-0', 'u-1', 'u-2'].map((u) => f.balance(u)));
    f.reset();
    const response = await f.invoke(batch);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.counter.total).toBe(1);
    expect(f.transactions()[0]!.error).toBe('TransactionCanceledException');
    expect(f.reports.map((r) => r.settlement)).toEqual(
      Array(10).fill(expect.objectContaining({ outcome: 'duplicate', reason: 'dedup-record-exists' })),
    );
    expect(await Promise.all(['u-0', 'u-1', 'u-2'].map((u) => f.balance(u)))).toEqual(balances);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('settles a duplicate in the middle of a packed batch and commits the rest in a follow-up', async () => {
    // Prepare: SO-B was consumed earlier
    const f = await packedConsumer();
    await f.invoke([award('SO-B', 'u-1', 20)]);
    f.reset();
    // Act
    const response = await f.invoke([award('SO-A', 'u-1', 10), award('SO-B', 'u-1', 20), award('SO-C', 'u-2', 30)]);
    // Assess: cancelled once (reasons name SO-B's dedup put), then one follow-up for A and C
    expect(response.batchItemFailures).toEqual([]);
    expect(f.transactions().map((t) => t.error ?? 'ok')).toEqual(['TransactionCanceledException', 'ok']);
    expect(f.sizes()).toEqual([11, 8]); // 3 and 2 awards: dedup, ledger, outbox each, and their balances
    expect(outcomesByKey(f.reports)).toEqual({ 'SO-A': 'processed', 'SO-B': 'duplicate', 'SO-C': 'processed' });
    expect(f.reports.find((r) => r.key === 'SO-B')!.settlement).toMatchObject({ reason: 'dedup-record-exists' });
    expect(await f.balance('u-1')).toBe(30);
    expect(await f.balance('u-2')).toBe(30);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('dead-letters a conflicting payload in a packed batch and commits its batch-mates', async () => {
    const f = await packedConsumer();
    await f.invoke([award('SO-B', 'u-1', 20)]);
    f.reset();
    const response = await f.invoke([award('SO-A', 'u-1', 10), award('SO-B', 'u-1', 2000), award('SO-C', 'u-2', 30)]);
    expect(response.batchItemFailures).toEqual([]);
    expect(outcomesByKey(f.reports)).toEqual({ 'SO-A': 'processed', 'SO-B': 'failed', 'SO-C': 'processed' });
    const conflict = f.reports.find((r) => r.key === 'SO-B')!;
    expect(conflict.settlement).toMatchObject({ outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } });
    expect(conflict.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    expect((await f.deadLetters()).map((d) => d.attributes['idempotency-key'])).toEqual(['SO-B']);
    expect(await f.balance('u-1')).toBe(30);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('treats a ledger entry that exists without its dedup record as already done', async () => {
    // Prepare: the award of SO-B is in the ledger and the balance, but its dedup record is gone (expired, deleted)
    const f = await packedConsumer();
    await f.dynamoDb.send(
      new PutCommand({
        TableName: f.resources.tables.ledger,
        Item: {
          userId: 'u-1',
          entryId: awardEntryId('SO-B'),
          kind: 'AWARD',
          orderNo: 'SO-B',
          points: 20,
          createdAt: new Date().toISOString(),
        },
      }),
    );
    await f.dynamoDb.send(
      new PutCommand({
        TableName: f.resources.tables.accounts,
        Item: { userId: 'u-1', balance: 20, updatedAt: new Date().toISOString() },
      }),
    );
    f.reset();
    // Act
    const response = await f.invoke([award('SO-A', 'u-1', 10), award('SO-B', 'u-1', 20), award('SO-C', 'u-1', 30)]);
    // Assess: SO-B's ledger put failed its condition; SO-A and SO-C commit with a merged increment of 40
    expect(response.batchItemFailures).toEqual([]);
    expect(f.transactions().map((t) => t.error ?? 'ok')).toEqual(['TransactionCanceledException', 'ok']);
    expect(f.reports.find((r) => r.key === 'SO-B')!.settlement).toEqual({
      outcome: 'duplicate',
      reason: 'effect-already-present',
    });
    expect(await f.balance('u-1')).toBe(60);
    expect(await f.ledger('u-1')).toHaveLength(3);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('splits and retries with backoff when a transaction is cancelled by TransactionConflict', async () => {
    // Prepare: the first two transactions that touch u-hot's balance lose a conflict
    const f = await packedConsumer();
    conflictOnAccount(f, 'u-hot', 2);
    const batch = [
      award('SO-1', 'u-hot', 1),
      award('SO-2', 'u-a', 2),
      award('SO-3', 'u-hot', 3),
      award('SO-4', 'u-b', 4),
    ];
    // Act
    const response = await f.invoke(batch);
    // Assess: u-a and u-b commit in the first follow-up; u-hot's records are retried until the conflict passes
    expect(response.batchItemFailures).toEqual([]);
    expect(f.outcomes()).toEqual(Array(4).fill('processed'));
    const cancelled = f.transactions().filter((t) => t.error === 'TransactionCanceledException');
    expect(cancelled).toHaveLength(2);
    expect(cancelled.every((t) => t.cancellationCodes!.includes('TransactionConflict'))).toBe(true);
    expect(f.sizes()[0]).toBe(15); // 4 dedup + 4 ledger + 3 balances (u-hot merged) + 4 outbox puts
    expect(await f.balance('u-hot')).toBe(4);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('halves and retries a batch throttled as a whole once the SDK has spent its own retries', async () => {
    // Prepare: the first 3 attempts (the SDK's whole budget) are throttled
    const f = await packedConsumer();
    let throttles = 3;
    f.dynamoDb.middlewareStack.addRelativeTo(
      ((next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => async (args: unknown) => {
        if (context.commandName === 'TransactWriteItemsCommand' && throttles-- > 0) {
          throw new ProvisionedThroughputExceededException({
            message: 'Rate of requests exceeds the allowed throughput (injected)',
            $metadata: { httpStatusCode: 400 },
          });
        }
        return next(args);
      }) as never,
      { relation: 'after', toMiddleware: 'roundTripCounter', name: 'throttleFirst' },
    );
    // Act
    const response = await f.invoke([
      award('SO-T-1', 'u-1', 1),
      award('SO-T-2', 'u-2', 2),
      award('SO-T-3', 'u-3', 3),
      award('SO-T-4', 'u-4', 4),
    ]);
    // Assess: 3 throttled attempts of the whole batch, then two halves
    expect(response.batchItemFailures).toEqual([]);
    expect(f.transactions().map((t) => t.error ?? 'ok')).toEqual([
      ...Array(3).fill('ProvisionedThroughputExceededException'),
      'ok',
      'ok',
    ]);
    expect(f.sizes().slice(3)).toEqual([8, 8]); // 2 awards each: dedup, ledger, balance, outbox
    expect(f.outcomes()).toEqual(Array(4).fill('processed'));
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('fails contended records as transient (they come back) once the conflict retries are spent', async () => {
    const f = await packedConsumer();
    conflictOnAccount(f, 'u-hot', 1_000);
    const response = await f.invoke([award('SO-1', 'u-hot', 1), award('SO-2', 'u-a', 2)]);
    expect(outcomesByKey(f.reports)).toEqual({ 'SO-1': 'failed', 'SO-2': 'processed' });
    expect(f.reports.find((r) => r.key === 'SO-1')!.settlement).toMatchObject({
      error: { code: 'TransactionConflict', classification: 'transient' },
    });
    expect(response.batchItemFailures).toHaveLength(1);
    expect(await f.balance('u-hot')).toBe(0);
    expect(await f.ledger('u-hot')).toEqual([]);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('splits a batch beyond 100 actions into several transactions, each within the limit', async () => {
    // Prepare: 40 awards to 40 accounts = 160 actions (dedup, ledger, balance, outbox item each)
    const f = await packedConsumer();
    const batch = Array.from({ length: 40 }, (_, i) => award(`SO-L-${i}`, `u-${i}`, 1));
    // Act
    const response = await f.invoke(batch);
    // Assess: a record never spans transactions, so 25 records (100 actions) then 15 (60)
    expect(response.batchItemFailures).toEqual([]);
    expect(f.sizes().sort((a, b) => b - a)).toEqual([100, 60]); // sent concurrently: answers come in any order
    expect(f.outcomes()).toEqual(Array(40).fill('processed'));
    expect(await f.ledgerMismatches()).toEqual([]);
  });
});
