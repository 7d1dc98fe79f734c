import { describe, expect, it } from 'vitest';
import {
  DeliveryLifetimes,
  IncoherentLifetimesError,
  lifetimesOf,
  minimumReceiveCount,
  ORDERLY_MAX_ATTEMPTS,
  ORDERLY_RETRY_INTERVAL_SECONDS,
  orderlySchedule,
} from '../../../src/config/delivery-lifetimes.ts';
import {
  assertOrderingFits,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  deadLetterQueueName,
  queueName,
} from '../../../src/config/resources.ts';
import { RetrySchedule } from '../../../src/rocketmq/index.ts';

describe('an orderly group’s retry policy, derived from one statement', () => {
  it('defaults to RocketMQ 5 FIFO: a fixed 3 s interval, 17 deliveries (16 retries), and a redrive after 171 receives', () => {
    // Act
    const { lifetimes } = lifetimesOf({ ordering: 'orderly' });
    // Assess
    expect([ORDERLY_RETRY_INTERVAL_SECONDS, ORDERLY_MAX_ATTEMPTS]).toEqual([3, 17]);
    expect(lifetimes.schedule.delaysSeconds).toEqual(Array.from({ length: 16 }, () => 3));
    expect(lifetimes.ordering).toBe('orderly');
    expect(lifetimes.queues.maxReceiveCount).toBe(10 * 17 + 1);
    expect(lifetimes.queues.sourceRetentionSeconds).toBe(4 * 86_400 + 48);
    expect(lifetimes.failureCountTtlSeconds).toBe(lifetimes.queues.sourceRetentionSeconds);
  });

  it('takes a configured interval and maximum', () => {
    const { lifetimes } = lifetimesOf({ ordering: 'orderly', orderlyRetry: { intervalSeconds: 10, maxAttempts: 4 } });
    expect(lifetimes.schedule.delaysSeconds).toEqual([10, 10, 10]);
    expect(lifetimes.queues.maxReceiveCount).toBe(41);
  });

  it('alarms on a blocked group once its head is older than every attempt and interval it can take', () => {
    // 17 deliveries of up to 30 s each, and 16 intervals of 3 s
    expect(lifetimesOf({ ordering: 'orderly' }).lifetimes.blockedGroupAgeSeconds(30)).toBe(17 * 30 + 16 * 3);
  });

  it('keeps the concurrent derivation unchanged: the redrive count is the schedule’s deliveries', () => {
    expect(minimumReceiveCount(new RetrySchedule(), 'concurrent')).toBe(17);
    expect(lifetimesOf({}).lifetimes.queues.maxReceiveCount).toBe(17);
  });

  it.each([
    [
      'growing delays on an orderly group',
      { ordering: 'orderly' as const, retryDelaysSeconds: [10, 30] },
      "consumer group g: retryDelaysSeconds is set but ordering is 'orderly'",
    ],
    [
      'an orderly policy on a concurrent group',
      { orderlyRetry: { intervalSeconds: 1 } },
      "consumer group g: orderlyRetry is set but ordering is not 'orderly'",
    ],
    [
      'a maximum of one attempt',
      { ordering: 'orderly' as const, orderlyRetry: { maxAttempts: 1 } },
      'consumer group g: orderlyRetry.maxAttempts is 1 but must be a whole number of at least 2',
    ],
  ])('refuses %s, naming both settings', (_, settings, message) => {
    expect(() => lifetimesOf({ group: 'g', ...settings })).toThrow(IncoherentLifetimesError);
    expect(() => lifetimesOf({ group: 'g', ...settings })).toThrow(message);
  });

  it('refuses queues that would let SQS dead-letter a held-back message before its own count', () => {
    const schedule = orderlySchedule();
    const queues = {
      maxReceiveCount: 170,
      sourceRetentionSeconds: 4 * 86_400,
      deadLetterRetentionSeconds: 14 * 86_400,
    };
    expect(() => new DeliveryLifetimes(schedule, queues, 'orderly')).toThrow(
      /maxReceiveCount is 170 but an orderly group .* needs at least 171/,
    );
    expect(() => new DeliveryLifetimes(schedule, { ...queues, maxReceiveCount: 171 }, 'orderly')).not.toThrow();
  });
});

describe('what an orderly group’s event source and function cannot be', () => {
  it.each([
    [
      'packing',
      { packing: true, tables: ['idempotency'] as const },
      "consumer group g: packing is on (tuning.packing / CONSUMER_PACKING) but ordering is 'orderly'",
    ],
    [
      'a batch over 10',
      { batchSize: 11, tables: ['idempotency'] as const },
      "consumer group g: batchSize is 11 but ordering is 'orderly': Lambda reads at most 10 records a batch from a FIFO queue",
    ],
    [
      'a batching window',
      { maxBatchingWindowSeconds: 1 },
      "consumer group g: maxBatchingWindowSeconds is 1 but ordering is 'orderly': Lambda allows no batching window on a FIFO queue",
    ],
    [
      'no idempotency table for its counts',
      { tables: ['orders'] as const },
      "consumer group g: tables does not list 'idempotency' but ordering is 'orderly'",
    ],
  ])('refuses %s', (_, settings, message) => {
    expect(() => assertOrderingFits('g', 'orderly', settings)).toThrow(message);
    expect(() => assertOrderingFits('g', 'concurrent', settings)).not.toThrow();
  });

  it('refuses a message group source on a concurrent group, where nothing travels in message groups', () => {
    expect(() => assertOrderingFits('g', 'concurrent', { messageGroupFrom: { from: 'key' } })).toThrow(
      "consumer group g: messageGroupFrom is set but ordering is not 'orderly': only an orderly group's messages travel in message groups",
    );
    expect(() =>
      assertOrderingFits('g', 'orderly', { messageGroupFrom: { from: 'key' }, tables: ['idempotency'] }),
    ).not.toThrow();
  });

  it.each(CONSUMER_GROUPS as readonly ConsumerGroupDefinition[])(
    'accepts the catalogue entry $group as it stands',
    (def) => {
      expect(() =>
        assertOrderingFits(def.group, def.ordering, {
          ...def.tuning,
          tables: def.tables,
          messageGroupFrom: def.messageGroupFrom,
        }),
      ).not.toThrow();
      expect(() => lifetimesOf(def)).not.toThrow();
    },
  );

  it('names an orderly group’s queues with the .fifo suffix SQS requires', () => {
    expect(queueName('rmq-prod', 'order-status-consumer-group')).toBe('rmq-prod-order-status-consumer-group.fifo');
    expect(deadLetterQueueName('rmq-prod', 'order-status-consumer-group')).toBe(
      'rmq-prod-order-status-consumer-group-dlq.fifo',
    );
    expect(queueName('rmq-prod', 'point-consumer-group')).toBe('rmq-prod-point-consumer-group');
    expect(queueName('p', 'not-in-the-catalogue', 'orderly')).toBe('p-not-in-the-catalogue.fifo');
  });
});
