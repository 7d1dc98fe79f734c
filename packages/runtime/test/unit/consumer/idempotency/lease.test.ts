import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { marshall, type NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { LeaseHeldError, PayloadConflictError } from '../../../../src/consumer/failures/errors.ts';
import { LeaseLostError, leaseStrategy } from '../../../../src/consumer/idempotency/lease.ts';
import type { BeginResult } from '../../../../src/consumer/idempotency/strategy.ts';
import type { ConsumerMessage, Settlement } from '../../../../src/consumer/settlement.ts';
import { type DynamoDbAnswer, recordingDynamoDb } from '../recording-dynamodb.ts';
import { serviceError } from '../recording-sqs.ts';

/**
 * The lease strategy's reading of DynamoDB answers the emulator does not give: its
 * conditions and takeovers run against the emulator in `packages/runtime/test/integration/strategies`.
 */
const msg = (leaseToken?: number): ConsumerMessage<unknown> => ({
  record: { messageId: 'm-1' } as ConsumerMessage<unknown>['record'],
  message: {
    msgId: 'MSG-NEW',
    topic: 'ORDER_TOPIC',
    tags: 'PAID',
    keys: ['SO1'],
    body: '{}',
    reconsumeTimes: 0,
    systemProperties: {},
    userProperties: {},
  },
  payload: {},
  key: 'SO1',
  fingerprint: 'fp-new',
  attempt: 1,
  ...(leaseToken === undefined ? {} : { leaseToken }),
});

const refused = (item?: Record<string, NativeAttributeValue>) =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    ...(item ? { Item: marshall(item) } : {}),
  });

function strategyAnswering(answer: DynamoDbAnswer) {
  const dynamoDb = recordingDynamoDb(answer);
  return {
    ...dynamoDb,
    strategy: leaseStrategy({
      client: dynamoDb.client,
      tableName: 'dedup',
      group: 'coupon-consumer-group',
      recordIdPrefix: 'coupon-consumer-group#',
      now: () => 1_000_000,
    }),
  };
}

/** The error of a failed settlement (a begin that settled the record as failed, or a failed commit). */
const failureOf = (settled: BeginResult | Settlement) => {
  const settlement = 'proceed' in settled ? (settled.proceed ? undefined : settled.settlement) : settled;
  return settlement?.outcome === 'failed' ? settlement.error : undefined;
};

/** The value the strategy sent for one placeholder, as native JavaScript. */
const sentValue = (input: Record<string, unknown> | undefined, placeholder: string) =>
  (input?.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[placeholder];

describe('leaseStrategy.begin: answers the emulator never gives', () => {
  it('proceeds with its own lease when the SDK retried an acquisition whose answer was lost', async () => {
    // Prepare: the retry is refused, and the record it finds is its own acquisition (same holder id)
    const { strategy } = strategyAnswering(({ input }) =>
      refused({
        id: 'g#SO1',
        status: 'IN_PROGRESS',
        holder: sentValue(input, ':holder'),
        token: 4,
        fingerprint: 'fp-new',
        leaseUntil: 2_000_000,
      }),
    );
    // Act / Assess
    expect(await strategy.begin(msg(), 1_500_000)).toEqual({ proceed: true, leaseToken: 4 });
  });

  it('waits for a live lease held by another acquisition, and for at least the schedule when the record names no end', async () => {
    const { strategy } = strategyAnswering(() =>
      refused({ id: 'g#SO1', status: 'IN_PROGRESS', holder: 'someone-else', token: 4, fingerprint: 'fp-new' }),
    );
    expect(failureOf(await strategy.begin(msg(), 1_500_000))).toBeInstanceOf(LeaseHeldError);
    expect(failureOf(await strategy.begin(msg(), 1_500_000))).toMatchObject({ leaseUntil: 0, retryNotBefore: 0 });
  });

  it('replays a completed record’s result, naming its first msgId when it records no completing one', async () => {
    const { strategy } = strategyAnswering(() =>
      refused({
        id: 'g#SO1',
        status: 'COMPLETED',
        token: 2,
        fingerprint: 'fp-new',
        firstMsgId: 'MSG-FIRST',
        result: { couponId: 'C-9' },
      }),
    );
    expect(await strategy.begin(msg(), 1_500_000)).toEqual({
      proceed: false,
      settlement: {
        outcome: 'duplicate',
        reason: 'lease-completed',
        winnerMsgId: 'MSG-FIRST',
        result: { couponId: 'C-9' },
      },
    });
  });

  it('settles a copy of an order the legacy consumer processed as a legacy duplicate, unverified when the key held no content', async () => {
    const imported = (fields: Record<string, NativeAttributeValue>) =>
      strategyAnswering(() =>
        refused({ id: 'g#SO1', status: 'COMPLETED', origin: 'legacy-import', firstMsgId: 'legacy:redis', ...fields }),
      ).strategy;
    expect(await imported({ fingerprint: 'fp-new' }).begin(msg(), 1_500_000)).toMatchObject({
      proceed: false,
      settlement: { outcome: 'duplicate', reason: 'legacy-record-exists', winnerMsgId: 'legacy:redis' },
    });
    expect(await imported({}).begin(msg(), 1_500_000)).toMatchObject({
      proceed: false,
      settlement: { outcome: 'duplicate', reason: 'legacy-record-unverified' },
    });
    expect(failureOf(await imported({ fingerprint: 'fp-other' }).begin(msg(), 1_500_000))).toBeInstanceOf(
      PayloadConflictError,
    );
  });

  it('never takes a refusal that carries no record for a duplicate it cannot prove: a conflict, for a person to judge', async () => {
    const { strategy } = strategyAnswering(() => refused());
    expect(failureOf(await strategy.begin(msg(), 1_500_000))).toBeInstanceOf(PayloadConflictError);
    expect(failureOf(await strategy.begin(msg(), 1_500_000))?.message).toBe(
      'key SO1 was first consumed with different content (msgId unknown)',
    );
  });

  it('lets any other failure through for the middleware to classify', async () => {
    const throttled = serviceError('ThrottlingException', 'rate exceeded');
    const { strategy } = strategyAnswering(() => throttled);
    await expect(strategy.begin(msg(), 1_500_000)).rejects.toBe(throttled);
  });

  it('asks for the lease until the deadline plus the margin, with a fresh holder id per acquisition', async () => {
    // Prepare
    const { strategy, inputsOf } = strategyAnswering(() => ({ Attributes: { token: 1 } }));
    // Act
    const begun = [await strategy.begin(msg(), 1_500_000), await strategy.begin(msg(), 1_500_000)];
    // Assess
    expect(begun).toEqual([
      { proceed: true, leaseToken: 1 },
      { proceed: true, leaseToken: 1 },
    ]);
    const [first, second] = inputsOf('UpdateItemCommand');
    expect(sentValue(first, ':leaseUntil')).toBe(1_505_000);
    expect(sentValue(first, ':holder')).not.toBe(sentValue(second, ':holder'));
  });
});

describe('leaseStrategy.commit and abort', () => {
  it('stores an absent result as null (DynamoDB has no undefined) and settles as processed', async () => {
    // Prepare
    const { strategy, inputsOf } = strategyAnswering(() => ({}));
    // Act
    const settlement = await strategy.commit(msg(3), undefined);
    // Assess
    expect(settlement).toEqual({ outcome: 'processed', result: undefined });
    expect(sentValue(inputsOf('UpdateItemCommand')[0], ':result')).toBeNull();
    expect(sentValue(inputsOf('UpdateItemCommand')[0], ':token')).toBe(3);
  });

  it('fails as LEASE_LOST when its token no longer holds the record, and lets other failures through', async () => {
    const lost = strategyAnswering(() => refused());
    expect(failureOf(await lost.strategy.commit(msg(3), { couponId: 'C-1' }))).toBeInstanceOf(LeaseLostError);
    const throttled = serviceError('ProvisionedThroughputExceededException');
    await expect(strategyAnswering(() => throttled).strategy.commit(msg(3), {})).rejects.toBe(throttled);
  });

  it('releases its lease as RETRYABLE on abort, writes nothing without a lease, and never throws', async () => {
    // Prepare
    const released = strategyAnswering(() => ({}));
    const unreleasable = strategyAnswering(() => serviceError('InternalServerError'));
    // Act
    await released.strategy.abort(msg(5), new Error('coupon service down'));
    await released.strategy.abort(msg(), new Error('begin never acquired'));
    const failedRelease = unreleasable.strategy.abort(msg(5), new Error('coupon service down'));
    // Assess
    expect(released.inputsOf('UpdateItemCommand')).toHaveLength(1);
    expect(sentValue(released.inputsOf('UpdateItemCommand')[0], ':retryable')).toBe('RETRYABLE');
    expect(sentValue(released.inputsOf('UpdateItemCommand')[0], ':token')).toBe(5);
    await expect(failedRelease).resolves.toBeUndefined();
    expect(unreleasable.inputsOf('UpdateItemCommand')).toHaveLength(1);
  });
});
