import { describe, expect, it } from 'vitest';
import {
  assertPublishes,
  CONSUMER_GROUPS,
  catalogue,
  DEFAULT_RECORD_TTL_SECONDS,
  declarationOf,
  eventIdOf,
  InvalidPublicationError,
  outboxItemTtlSeconds,
  outboxTtlOf,
  RELAY_MAX_RECORD_AGE_SECONDS,
  STREAM_RETENTION_SECONDS,
  subscribersOf,
} from '../../../src/config/index.ts';

describe('eventIdOf', () => {
  it('derives the same 32-hex id from the same group, key and index, whatever the msgId', () => {
    expect(eventIdOf('point-consumer-group', 'SO202007051422310088', 0)).toBe('393D6061314BC4BCD33C9DBA67A98CDA');
    expect(eventIdOf('point-consumer-group', 'SO202007051422310088', 0)).toMatch(/^[0-9A-F]{32}$/);
  });

  it('gives another id to another group, key or index', () => {
    const ids = new Set([
      eventIdOf('point-consumer-group', 'SO1', 0),
      eventIdOf('point-consumer-group', 'SO1', 1),
      eventIdOf('point-consumer-group', 'SO2', 0),
      eventIdOf('coupon-consumer-group', 'SO1', 0),
      // The separator keeps a key's characters from moving across the group boundary.
      eventIdOf('point-consumer-group#SO', '1', 0),
    ]);
    expect(ids.size).toBe(5);
  });

  it('refuses an index that is not a whole number', () => {
    expect(() => eventIdOf('g', 'k', -1)).toThrow(RangeError);
    expect(() => eventIdOf('g', 'k', 1.5)).toThrow(RangeError);
  });
});

describe('a group’s publishes', () => {
  const points = { topic: 'POINTS_TOPIC', tags: ['POINTS_AWARDED'], target: 'sqs' } as const;

  it('is taken from a transactional group, topic by topic', () => {
    expect(() => assertPublishes('g', 'transactional', [points])).not.toThrow();
    expect(declarationOf([points], { topic: 'POINTS_TOPIC', tag: 'POINTS_AWARDED' })).toBe(points);
  });

  it.each([
    ['a lease group', 'lease', [points], /strategy is 'lease'/],
    ['a topic RocketMQ would refuse', 'transactional', [{ ...points, topic: 'POINTS TOPIC' }], /not a RocketMQ topic/],
    ['one topic twice', 'transactional', [points, points], /POINTS_TOPIC twice/],
    ['a topic without tags', 'transactional', [{ ...points, tags: [] }], /with no tag/],
    ['a tag a filter cannot name', 'transactional', [{ ...points, tags: ['A || B'] }], /cannot name/],
    ['an unknown target', 'transactional', [{ ...points, target: 'kafka' }], /target 'kafka'/],
  ])('refuses %s, naming the group', (_, strategy, publishes, why) => {
    expect(() => assertPublishes('g', strategy, publishes as never)).toThrow(InvalidPublicationError);
    expect(() => assertPublishes('g', strategy, publishes as never)).toThrow(why);
    expect(() => assertPublishes('g', strategy, publishes as never)).toThrow(/consumer group g/);
  });

  it('names why an outgoing message falls outside the declaration', () => {
    expect(declarationOf([points], { topic: 'ORDER_TOPIC', tag: 'PAID' })).toMatch(/ORDER_TOPIC is not among/);
    expect(declarationOf([points], { topic: 'POINTS_TOPIC', tag: 'X' })).toMatch(/tag X is not among .*POINTS_AWARDED/);
    expect(declarationOf(undefined, { topic: 'POINTS_TOPIC', tag: 'X' })).toMatch(/not among/);
  });

  it('is refused by the catalogue itself, where the entry is defined', () => {
    const entry = { ...CONSUMER_GROUPS[1], publishes: [points] };
    expect(() => catalogue([entry])).toThrow(InvalidPublicationError);
  });
});

describe("the relay mapping's record age", () => {
  it('gives up an hour before the stream trims the record, so a stale PENDING item can still be found and touched', () => {
    expect(RELAY_MAX_RECORD_AGE_SECONDS).toBe(23 * 3_600);
    expect(STREAM_RETENTION_SECONDS - RELAY_MAX_RECORD_AGE_SECONDS).toBe(3_600);
    expect(RELAY_MAX_RECORD_AGE_SECONDS).toBeLessThan(outboxItemTtlSeconds([]));
  });
});

describe('the outbox item lifetime', () => {
  it('outlives the stream, the relay DLQ and the downstream record TTL', () => {
    expect(outboxItemTtlSeconds([])).toBe(STREAM_RETENTION_SECONDS + DEFAULT_RECORD_TTL_SECONDS);
    expect(outboxItemTtlSeconds([60 * 86_400])).toBe(STREAM_RETENTION_SECONDS + 60 * 86_400);
  });

  it('follows the record TTL of every group subscribed to what the group publishes', () => {
    const publisher = { ...CONSUMER_GROUPS[0], publishes: [{ topic: 'T', tags: ['A'], target: 'sqs' as const }] };
    const downstream = {
      ...CONSUMER_GROUPS[1],
      group: 'd',
      topic: 'T',
      tagExpression: 'A || B',
      idempotencyTtlSeconds: 50 * 86_400,
    };
    const elsewhere = { ...downstream, group: 'e', tagExpression: 'B', idempotencyTtlSeconds: 90 * 86_400 };
    expect(subscribersOf('T', 'A', [publisher, downstream, elsewhere]).map((g) => g.group)).toEqual(['d']);
    expect(outboxTtlOf(publisher, [publisher, downstream, elsewhere])).toBe(STREAM_RETENTION_SECONDS + 50 * 86_400);
  });
});
