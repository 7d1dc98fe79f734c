import { type CancellationReason, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { packedTransactionalStrategy } from '../../../../src/consumer/idempotency/packed-transactional.ts';
import { type TransactionalResult, transactionalStrategy } from '../../../../src/consumer/idempotency/transactional.ts';
import type { ConsumerMessage } from '../../../../src/consumer/settlement.ts';
import { commitRetryingContention } from '../../../../src/consumer/steps/contention.ts';
import { type DynamoDbAnswer, recordingDynamoDb } from '../recording-dynamodb.ts';

/**
 * The packed strategy's reading of cancellations the emulator never sends: reasons without
 * a code, and a cancellation that blames no action at all, retried as the runtime retries
 * contention (`commitRetryingContention`). Its packing, merging, splitting
 * and settling against real cancellations run against the emulator in `packages/runtime/test/integration/packing`.
 */
const message = (key: string): ConsumerMessage<unknown> => ({
  record: { messageId: `m-${key}` } as ConsumerMessage<unknown>['record'],
  message: {
    msgId: `MSG-${key}`,
    topic: 'ORDER_TOPIC',
    tags: 'PAID',
    keys: [key],
    body: '{}',
    reconsumeTimes: 0,
    systemProperties: {},
    userProperties: {},
  },
  payload: {},
  key,
  fingerprint: `fp-${key}`,
  attempt: 1,
});
const ledgerEntry = (key: string): TransactionalResult => ({
  writes: [{ item: { Put: { TableName: 'ledger', Item: { userId: 'u1', entryId: key } } } }],
});
const cancelled = (reasons: CancellationReason[]) =>
  new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: reasons });

function packedAnswering(answer: DynamoDbAnswer, contentionRetries: number) {
  const dynamoDb = recordingDynamoDb(answer);
  const sleeps: number[] = [];
  const strategy = packedTransactionalStrategy({
    client: dynamoDb.client,
    tableName: 'dedup',
    group: 'points-consumer-group',
    recordIdPrefix: 'points-consumer-group#',
  });
  const policy = { retries: contentionRetries, backoffMs: 25, sleep: async (ms: number) => void sleeps.push(ms) };
  /** The strategy's batch commit, its contention retried where the runtime retries it. */
  const commitBatch = (msgs: ConsumerMessage<unknown>[], values: TransactionalResult[]) =>
    commitRetryingContention(
      msgs.map((msg, i) => ({ msg, value: values[i]! })),
      (items) =>
        strategy.commitBatch!(
          items.map((i) => i.msg),
          items.map((i) => i.value),
        ),
      policy,
    );
  /** The keys whose dedup records each transaction carried, in the order they were sent. */
  const transactions = () =>
    dynamoDb
      .inputsOf('TransactWriteItemsCommand')
      .map((input) =>
        (input.TransactItems as Array<{ Put?: { TableName: string; Item: Record<string, unknown> } }>)
          .filter((a) => a.Put?.TableName === 'dedup')
          .map((a) => a.Put!.Item.key),
      );
  return { commitBatch, sleeps, transactions };
}

const batch = [message('SO1'), message('SO2')];
const results = batch.map((m) => ledgerEntry(m.key));

describe('packedTransactionalStrategy: cancellations the emulator never sends', () => {
  it('retries a cancellation that blames no action as contention, halved after a backoff, and commits', async () => {
    // Prepare: the first transaction is cancelled with four reasons that carry no code
    const { commitBatch, sleeps, transactions } = packedAnswering(
      (_sent, before) => (before === 0 ? cancelled([{}, {}, {}, {}]) : undefined),
      3,
    );
    // Act
    const settlements = await commitBatch(batch, results);
    // Assess
    expect(settlements).toEqual([{ outcome: 'processed' }, { outcome: 'processed' }]);
    expect(transactions()).toEqual([['SO1', 'SO2'], ['SO1'], ['SO2']]);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(12.5);
    expect(sleeps[0]).toBeLessThan(37.5);
  });

  it('fails the records as transient once such cancellations outlast the retries', async () => {
    // Prepare
    const { commitBatch, transactions } = packedAnswering(
      () => cancelled([{ Code: 'None' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }]),
      1,
    );
    // Act
    const settlements = await commitBatch(batch, results);
    // Assess: the batch, then its halves once each, then no more
    expect(transactions()).toEqual([['SO1', 'SO2'], ['SO1'], ['SO2']]);
    for (const s of settlements) expect(s).toMatchObject({ outcome: 'failed', error: { classification: 'transient' } });
  });

  it('commits the records a cancellation does not blame, and fails a contended one as TransactionConflict, reading a missing code as None', async () => {
    // Prepare: SO2's dedup put met a conflicting transaction; the other reasons carry no code; no retries left
    const { commitBatch, transactions } = packedAnswering(
      (_sent, before) => (before === 0 ? cancelled([{}, {}, { Code: 'TransactionConflict' }, {}]) : undefined),
      0,
    );
    // Act
    const [so1, so2] = await commitBatch(batch, results);
    // Assess
    expect(so1).toEqual({ outcome: 'processed' });
    expect(so2).toMatchObject({
      outcome: 'failed',
      error: { code: 'TransactionConflict', message: 'transaction cancelled: None, None, TransactionConflict, None' },
    });
    expect(transactions()).toEqual([['SO1', 'SO2'], ['SO1']]);
  });
});

describe('transactionalStrategy: a cancellation without reasons', () => {
  it('fails the record as a transient TransactionCanceled', async () => {
    const { client } = recordingDynamoDb(
      () => new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {} }),
    );
    const strategy = transactionalStrategy({
      client,
      tableName: 'dedup',
      group: 'points-consumer-group',
      recordIdPrefix: 'points-consumer-group#',
    });
    expect(await strategy.commit(message('SO1'), ledgerEntry('SO1'))).toMatchObject({
      outcome: 'failed',
      error: { code: 'TransactionCanceled', classification: 'transient', message: 'transaction cancelled: ' },
    });
  });
});
