import { describe, expect, it } from 'vitest';
import { eventIdOf, type OutgoingMessage, type PublishedTopic } from '../../../../src/config/index.ts';
import {
  type ConsumptionError,
  PermanentFailureError,
  UndeclaredPublicationError,
} from '../../../../src/consumer/failures/errors.ts';
import {
  type OutboxOptions,
  outboxWrites,
  withOutboxWrites,
} from '../../../../src/consumer/idempotency/outbox-writes.ts';
import type { ConsumptionStrategy } from '../../../../src/consumer/idempotency/strategy.ts';
import type { TransactionalResult } from '../../../../src/consumer/idempotency/transactional.ts';
import type { ConsumerMessage, Settlement } from '../../../../src/consumer/settlement.ts';

const COMMITTED_AT = Date.parse('2026-12-05T10:00:00.123Z');
const TTL = 45 * 86_400;

const msg = (key: string, msgId = `MSG-${key}`): ConsumerMessage<unknown> => ({
  record: { messageId: 'm-1' } as ConsumerMessage<unknown>['record'],
  message: {
    msgId,
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
  fingerprint: 'fp',
  attempt: 1,
});

const PUBLISHES: PublishedTopic[] = [
  { topic: 'POINTS_TOPIC', tags: ['POINTS_AWARDED', 'POINTS_REVERSED'], target: 'sqs' },
  { topic: 'AUDIT_TOPIC', tags: ['AWARD'], target: 'rocketmq' },
];
const options: OutboxOptions = {
  group: 'point-consumer-group',
  publishes: PUBLISHES,
  tableName: 'rmq-test-point-consumer-group-outbox',
  ttlSeconds: TTL,
  now: () => COMMITTED_AT,
};
const awarded: OutgoingMessage = {
  topic: 'POINTS_TOPIC',
  tag: 'POINTS_AWARDED',
  keys: ['SO1'],
  body: { orderNo: 'SO1', userId: '88372', points: 300 },
};

describe('outboxWrites: what a business publishes, as conditional puts of outbox items', () => {
  it('puts one PENDING item per message, keyed by the event id of (group, business key, index)', () => {
    // Act
    const writes = outboxWrites(
      msg('SO1'),
      [awarded, { topic: 'AUDIT_TOPIC', tag: 'AWARD', body: 'text as is' }],
      options,
    );
    // Assess
    expect(Array.isArray(writes)).toBe(true);
    const [first, second] = writes as Exclude<typeof writes, ConsumptionError>;
    const eventId = eventIdOf('point-consumer-group', 'SO1', 0);
    expect(first).toEqual({
      item: {
        Put: {
          TableName: 'rmq-test-point-consumer-group-outbox',
          ConditionExpression: 'attribute_not_exists(eventId)',
          Item: {
            eventId,
            group: 'point-consumer-group',
            businessKey: 'SO1',
            index: 0,
            sourceMsgId: 'MSG-SO1',
            topic: 'POINTS_TOPIC',
            tag: 'POINTS_AWARDED',
            keys: [eventId, 'SO1'],
            body: '{"orderNo":"SO1","userId":"88372","points":300}',
            userProperties: { OUTBOX_EVENT_ID: eventId },
            target: 'sqs',
            status: 'PENDING',
            committedAt: COMMITTED_AT,
            expiresAt: Math.floor(COMMITTED_AT / 1000) + TTL,
          },
        },
      },
      conditionFailureMeansDone: true,
    });
    expect(second!.item.Put!.Item).toMatchObject({
      eventId: eventIdOf('point-consumer-group', 'SO1', 1),
      index: 1,
      body: 'text as is',
      target: 'rocketmq',
      keys: [eventIdOf('point-consumer-group', 'SO1', 1)],
    });
  });

  it('derives the same event id for a re-send with a new msgId, another for another order', () => {
    const idOf = (m: ConsumerMessage<unknown>) =>
      (outboxWrites(m, [awarded], options) as { item: { Put?: { Item?: Record<string, unknown> } } }[])[0]!.item.Put!
        .Item!.eventId;
    expect(idOf(msg('SO1', 'MSG-A'))).toBe(idOf(msg('SO1', 'MSG-B')));
    expect(idOf(msg('SO1'))).not.toBe(idOf(msg('SO2')));
  });

  it("keeps the business's properties and message group, and adds its own event id property", () => {
    const writes = outboxWrites(
      msg('SO1'),
      [{ ...awarded, userProperties: { region: 'cn-hz', OUTBOX_EVENT_ID: 'forged' }, messageGroup: 'u-88372' }],
      options,
    ) as { item: { Put?: { Item?: Record<string, unknown> } } }[];
    const item = writes[0]!.item.Put!.Item!;
    expect(item.userProperties).toEqual({ region: 'cn-hz', OUTBOX_EVENT_ID: item.eventId });
    expect(item.messageGroup).toBe('u-88372');
  });

  it('refuses every message of a record when one is outside the declarations, naming why', () => {
    const undeclaredTopic = outboxWrites(msg('SO1'), [awarded, { ...awarded, topic: 'COUPON_TOPIC' }], options);
    expect(undeclaredTopic).toBeInstanceOf(UndeclaredPublicationError);
    expect((undeclaredTopic as UndeclaredPublicationError).code).toBe('UNDECLARED_PUBLICATION');
    expect((undeclaredTopic as UndeclaredPublicationError).classification).toBe('permanent');
    expect((undeclaredTopic as Error).message).toBe(
      "consumer group point-consumer-group: outgoing message 1 (COUPON_TOPIC POINTS_AWARDED) is refused: topic COUPON_TOPIC is not among the group's publishes",
    );
    const undeclaredTag = outboxWrites(msg('SO1'), [{ ...awarded, tag: 'POINTS_EXPIRED' }], options);
    expect((undeclaredTag as Error).message).toMatch(
      /tag POINTS_EXPIRED is not among the tags declared for POINTS_TOPIC \(POINTS_AWARDED, POINTS_REVERSED\)$/,
    );
    expect(outboxWrites(msg('SO1'), [awarded], { ...options, publishes: undefined })).toBeInstanceOf(
      UndeclaredPublicationError,
    );
  });

  it('refuses a body with no JSON text, and writes nothing for nothing published', () => {
    const refused = outboxWrites(msg('SO1'), [{ ...awarded, body: undefined }], options);
    expect(refused).toBeInstanceOf(PermanentFailureError);
    expect((refused as PermanentFailureError).code).toBe('INVALID_PUBLICATION');
    expect(outboxWrites(msg('SO1'), [], { ...options, tableName: undefined })).toEqual([]);
  });
});

describe('withOutboxWrites: the strategy commits the outbox puts with the effect, or nothing', () => {
  /** A strategy that records what it was asked to commit, settling everything as processed. */
  function recording() {
    const committed: { key: string; writes: number }[] = [];
    const strategy: ConsumptionStrategy<TransactionalResult> = {
      recordTtlSeconds: 1,
      begin: async () => ({ proceed: true }),
      abort: async () => {},
      commit: async (m, r) => {
        committed.push({ key: m.key, writes: r.writes.length });
        return { outcome: 'processed' };
      },
      commitBatch: async (ms, rs) =>
        ms.map((m, i) => {
          committed.push({ key: m.key, writes: rs[i]!.writes.length });
          return { outcome: 'processed' } satisfies Settlement;
        }),
    };
    return { committed, strategy: withOutboxWrites(strategy, options) };
  }
  const effect = { writes: [{ item: { Put: { TableName: 'ledger', Item: { id: 'x' } } } }] };

  it('appends the puts after the business writes, so cancellation reasons keep their places', async () => {
    const { committed, strategy } = recording();
    expect(await strategy.commit(msg('SO1'), { ...effect, publishes: [awarded] })).toEqual({ outcome: 'processed' });
    expect(committed).toEqual([{ key: 'SO1', writes: 2 }]);
  });

  it('fails an undeclared record alone in a batch, and commits its batch-mates in their order', async () => {
    const { committed, strategy } = recording();
    const settlements = await strategy.commitBatch!(
      [msg('SO1'), msg('SO2'), msg('SO3')],
      [{ ...effect, publishes: [awarded] }, { ...effect, publishes: [{ ...awarded, tag: 'NOT_DECLARED' }] }, effect],
    );
    expect(settlements.map((s) => s.outcome)).toEqual(['processed', 'failed', 'processed']);
    expect(settlements[1]).toMatchObject({ error: { code: 'UNDECLARED_PUBLICATION' } });
    expect(committed).toEqual([
      { key: 'SO1', writes: 2 },
      { key: 'SO3', writes: 1 },
    ]);
  });

  it('commits nothing when every record of a batch is refused', async () => {
    const { committed, strategy } = recording();
    const refused = { ...effect, publishes: [{ ...awarded, topic: 'ELSEWHERE' }] };
    expect((await strategy.commitBatch!([msg('SO1')], [refused])).map((s) => s.outcome)).toEqual(['failed']);
    expect(await strategy.commit(msg('SO2'), refused)).toMatchObject({ outcome: 'failed' });
    expect(committed).toEqual([]);
  });
});
