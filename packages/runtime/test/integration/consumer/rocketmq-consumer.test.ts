import { SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { awardWrites, balanceIncrement } from '@rocketmq-lambda/consumers/points/index.ts';
import { orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { recordIdPrefix } from '../../../src/config/index.ts';
import { type TransactionalResult, TransientFailureError } from '../../../src/consumer/index.ts';
import {
  type ConsumptionStrategy,
  packedTransactionalStrategy,
  transactionalStrategy,
} from '../../../src/consumer/internal.ts';
import { awsError, injectFault } from '../retries/sdk-faults.ts';
import { type Business, consumerFixture, type Deps } from './consumer-fixture.ts';

const award = (orderNo: string, userId: string, points: number) => orderEnvelope({ orderNo, userId, points });
/** A body the payload parser refuses: a permanent `INVALID_PAYLOAD`. */
const unreadable = (orderNo: string) => orderEnvelope({ orderNo, userId: 'u-bad', points: 'lots' });

const transactional = (d: Deps): ConsumptionStrategy<TransactionalResult> =>
  transactionalStrategy({
    client: d.dynamoDb,
    tableName: d.tables.idempotency,
    group: POINTS_GROUP,
    recordIdPrefix: recordIdPrefix(POINTS_GROUP),
  });
const packed = (d: Deps): ConsumptionStrategy<TransactionalResult> =>
  packedTransactionalStrategy({
    client: d.dynamoDb,
    tableName: d.tables.idempotency,
    group: POINTS_GROUP,
    recordIdPrefix: recordIdPrefix(POINTS_GROUP),
    keyAttributes: {
      [d.tables.idempotency]: ['id'],
      [d.tables.ledger]: ['userId', 'entryId'],
      [d.tables.accounts]: ['userId'],
    },
  });
/** The points business: a ledger entry and a balance increment, declared for the strategy to commit. */
const awardBusiness =
  (d: Deps): Business<TransactionalResult> =>
  (msg) => ({
    writes: awardWrites(msg.payload, { msgId: msg.message.msgId, fingerprint: msg.fingerprint }, d.tables, new Date()),
  });

const TRANSACTIONAL_MODES = [
  { mode: 'per-record', strategy: transactional },
  { mode: 'packed', strategy: packed },
] as const;

describe.each(TRANSACTIONAL_MODES)(
  'the consumer middleware: copies of one key in one batch ($mode, emulator)',
  ({ strategy }) => {
    it('retries (does not settle) the later copies of a key whose first copy failed, and settles them once it succeeds', async () => {
      // Prepare: SO-L's first copy fails in the business; a re-send of SO-L (new msgId) follows it in the batch
      const failing = new Set(['SO-L']);
      const f = await consumerFixture<TransactionalResult>({
        strategy,
        business: (d) => (msg, invocation) => {
          if (failing.has(msg.key))
            throw new TransientFailureError('account lookup timed out', 'ACCOUNT_LOOKUP_TIMEOUT');
          return awardBusiness(d)(msg, invocation);
        },
      });
      const [leader, other, follower] = [award('SO-L', 'u-l', 50), award('SO-O', 'u-o', 5), award('SO-L', 'u-l', 50)];
      const batch = [f.record(leader), f.record(other), f.record(follower)];
      // Act
      const response = await f.invoke(batch);
      // Assess: the leader and its follower come back; the follower was not acknowledged as a duplicate of nothing
      expect(response.batchItemFailures.map((x) => x.itemIdentifier).sort()).toEqual(
        [batch[0]!.messageId, batch[2]!.messageId].sort(),
      );
      const bySqsId = Object.fromEntries(f.reports.map((r) => [r.sqsMessageId, r]));
      expect(bySqsId[batch[0]!.messageId]).toMatchObject({
        settlement: { outcome: 'failed', error: { code: 'ACCOUNT_LOOKUP_TIMEOUT' } },
        disposition: { action: 'retry' },
      });
      expect(bySqsId[batch[2]!.messageId]).toMatchObject({
        key: 'SO-L',
        settlement: { outcome: 'failed', error: { code: 'IN_BATCH_LEADER_FAILED', classification: 'transient' } },
        disposition: { action: 'retry', delaySeconds: 0 },
      });
      expect(bySqsId[batch[1]!.messageId]).toMatchObject({
        settlement: { outcome: 'processed' },
        disposition: { action: 'ack' },
      });
      expect(await f.dedupRecord('SO-L')).toBeUndefined();
      expect(await f.ledgerOf('u-l')).toEqual([]);
      expect(await f.balance('u-o')).toBe(5);
      expect(await f.deadLetters()).toEqual([]);

      // Act: both copies come back (second receive); the business works now
      failing.clear();
      const again = await f.invoke([f.record(leader, 2), f.record(follower, 2)]);
      // Assess: one award; the follower is a duplicate of its leader
      expect(again.batchItemFailures).toEqual([]);
      expect(f.reports.slice(-2).map((r) => [r.attempt, r.settlement])).toEqual([
        [2, { outcome: 'processed' }],
        [2, { outcome: 'duplicate', reason: 'in-batch-duplicate', winnerMsgId: JSON.parse(leader).data.msgId }],
      ]);
      expect(await f.ledgerOf('u-l')).toHaveLength(1);
      expect(await f.balance('u-l')).toBe(50);
    });
  },
);

describe('the consumer middleware: a dead letter that cannot be sent (emulator)', () => {
  it('leaves the record in the source queue as a batch item failure, and dead-letters it on a later delivery', async () => {
    // Prepare: the DLQ refuses messages (its KMS key is not usable) until it is repaired; the
    // source queue's visibility timeout shortened so the record returns within a second
    const f = await consumerFixture<TransactionalResult>({ strategy: transactional, business: awardBusiness });
    let dlqDown = true;
    const fault = injectFault(f.routerSqs, {
      command: (name) => name === 'SendMessageCommand' && dlqDown,
      error: () =>
        awsError(
          'KmsAccessDenied',
          'The ciphertext refers to a customer master key that does not exist or that you are not authorized to access.',
        ),
    });
    await f.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: f.queue.source.url, Attributes: { VisibilityTimeout: '1' } }),
    );
    await f.send(unreadable('SO-DLQ-DOWN'));
    // Act
    const first = await f.poll();
    // Assess: the send failed, so the record was not acknowledged: it is still in the source queue
    expect(fault.injected).toBeGreaterThan(0);
    expect(first).toMatchObject({ received: 1, deleted: 0, failed: 1 });
    expect(f.reports[0]).toMatchObject({
      attempt: 1,
      settlement: { outcome: 'failed', error: { code: 'INVALID_PAYLOAD', classification: 'permanent' } },
      disposition: { action: 'retry-dead-letter' },
    });
    expect(await f.sourceDepth()).toEqual({ visible: 0, inFlight: 1 });
    expect(await f.deadLetters()).toEqual([]);

    // Act: the DLQ is repaired; the record comes back after the queue's visibility timeout
    dlqDown = false;
    let again = await f.poll();
    for (const giveUpAt = Date.now() + 15_000; again.received === 0 && Date.now() < giveUpAt; again = await f.poll())
      await new Promise((r) => setTimeout(r, 200));
    // Assess: dead-lettered with its reason on the second delivery, and gone from the source queue
    expect(again).toMatchObject({ received: 1, deleted: 1, failed: 0 });
    expect(f.reports[1]).toMatchObject({ attempt: 2, disposition: { action: 'dead-letter', code: 'INVALID_PAYLOAD' } });
    const letters = await f.deadLetters();
    expect(letters).toHaveLength(1);
    expect(letters[0]!.attributes).toMatchObject({
      'failure-code': 'INVALID_PAYLOAD',
      'failure-class': 'permanent',
      attempt: '2',
    });
    expect(await f.sourceDepth()).toEqual({ visible: 0, inFlight: 0 });
  });
});

describe.each(TRANSACTIONAL_MODES)(
  'the consumer middleware: a declared write refused by its own condition ($mode, emulator)',
  ({ strategy }) => {
    it('dead-letters the record as WRITE_REJECTED (permanent) with nothing of it applied, and commits its batch-mate', async () => {
      // Prepare: awards only to opened accounts, a condition that is not "already done"; u-open
      // has an account, u-closed has none
      const f = await consumerFixture<TransactionalResult>({
        strategy,
        business: (d) => (msg) => {
          const [ledger] = awardWrites(
            msg.payload,
            { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
            d.tables,
            new Date(),
          );
          const increment = balanceIncrement(d.tables.accounts, msg.payload.userId, msg.payload.points, new Date());
          return {
            writes: [
              ledger!,
              { item: { Update: { ...increment.Update!, ConditionExpression: 'attribute_exists(userId)' } } },
            ],
          };
        },
      });
      await f.dynamoDb.send(new PutCommand({ TableName: f.tables.accounts, Item: { userId: 'u-open', balance: 0 } }));
      // Act
      const response = await f.invoke([f.record(award('SO-R', 'u-closed', 7)), f.record(award('SO-K', 'u-open', 9))]);
      // Assess: acknowledged after dead-lettering: retrying cannot open the account
      expect(response.batchItemFailures).toEqual([]);
      const byKey = f.byKey();
      expect(byKey['SO-R']).toMatchObject({
        settlement: { outcome: 'failed', error: { code: 'WRITE_REJECTED', classification: 'permanent' } },
        disposition: { action: 'dead-letter', code: 'WRITE_REJECTED' },
      });
      expect(byKey['SO-K']).toMatchObject({ settlement: { outcome: 'processed' }, disposition: { action: 'ack' } });
      const letters = await f.deadLetters();
      expect(letters.map((l) => l.attributes)).toEqual([
        expect.objectContaining({
          'failure-code': 'WRITE_REJECTED',
          'failure-class': 'permanent',
          'idempotency-key': 'SO-R',
        }),
      ]);
      // Nothing of SO-R was written, its dedup record included, so a redrive after the account opens can apply it
      expect(await f.dedupRecord('SO-R')).toBeUndefined();
      expect(await f.ledgerOf('u-closed')).toEqual([]);
      expect(await f.ledgerOf('u-open')).toHaveLength(1);
      expect(await f.balance('u-open')).toBe(9);
    });
  },
);
