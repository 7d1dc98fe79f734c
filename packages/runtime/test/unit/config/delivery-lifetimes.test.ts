import {
  ORDER_STATUS,
  consumer as orderStatusConsumer,
} from '@rocketmq-lambda/consumers/functions/order-status-consumer/handler.ts';
import { POINTS, consumer as pointsConsumer } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { describe, expect, it } from 'vitest';
import { lifetimeEnvironment } from '../../../src/config/consumer-environment.ts';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  DeliveryLifetimes,
  IncoherentLifetimesError,
  type LifetimeSettings,
  lifetimesOf,
} from '../../../src/config/delivery-lifetimes.ts';
import { TABLE_ENV } from '../../../src/config/resources.ts';
import { InvalidConsumerConfigError } from '../../../src/consumer/index.ts';
import { consumerConfigFromEnv } from '../../../src/consumer/internal.ts';
import { RetrySchedule, storeTimeRefusal } from '../../../src/rocketmq/index.ts';

/**
 * The environment the CDK app gives a function of `settings` (a points function by default), then `overrides` as if
 * edited by hand.
 */
function deployedEnvironment(overrides: Record<string, string>, settings: LifetimeSettings = {}): NodeJS.ProcessEnv {
  const { lifetimes, recordTtlSeconds } = lifetimesOf(settings);
  return {
    [TABLE_ENV.idempotency]: 'idempotency',
    [TABLE_ENV.ledger]: 'ledger',
    [TABLE_ENV.accounts]: 'accounts',
    [TABLE_ENV.orders]: 'orders',
    OUTBOX_TABLE: 'outbox',
    DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:1/000000000000/dlq',
    AWS_REGION: 'us-east-1',
    ENVELOPE_SIGNING_SECRET:
      'arn:aws:secretsmanager:ap-northeast-1:222222222222:secret:rmq-test/envelope-signing-key-AbCdEf',
    ...lifetimeEnvironment(lifetimes, recordTtlSeconds),
    ...overrides,
  };
}

describe('DeliveryLifetimes', () => {
  it("derives, for RocketMQ's schedule, 17 receives, 4 days + 4h45m40s of source retention and a 29.6-day minimum TTL", () => {
    const { lifetimes, recordTtlSeconds } = lifetimesOf({});
    expect(lifetimes.queues).toEqual({
      maxReceiveCount: 17,
      sourceRetentionSeconds: 4 * 86_400 + 17_140,
      deadLetterRetentionSeconds: 14 * 86_400,
    });
    // The bus archive's week, the first life, the DLQ, a redriven copy's own life: 29.4 days, then a retry window.
    expect(lifetimes.copyLifetimeSeconds).toBe(7 * 86_400 + 2 * (4 * 86_400 + 17_140) + 14 * 86_400);
    expect(lifetimes.minimumRecordTtlSeconds).toBe(lifetimes.copyLifetimeSeconds + 17_140);
    expect(lifetimes.signingKeyRetentionSeconds).toBe(lifetimes.copyLifetimeSeconds);
    expect(recordTtlSeconds).toBe(DEFAULT_RECORD_TTL_SECONDS);
    expect(lifetimes.redriveHorizonSeconds(recordTtlSeconds)).toBe(30 * 86_400 - 17_140);
    expect(lifetimes.letterRedriveHorizonSeconds(recordTtlSeconds)).toBe(30 * 86_400 - 17_140 - (4 * 86_400 + 17_140));
  });

  it('defaults the TTL to the minimum rounded up to days when a long schedule needs more than 30 days', () => {
    // Two 6 h retries (12 h): 7 + 2 × 4.5 + 14 + 0.5 = 30.5 days
    expect(lifetimesOf({ retryDelaysSeconds: [21_600, 21_600] }).recordTtlSeconds).toBe(31 * 86_400);
    const lifetimes = new DeliveryLifetimes(new RetrySchedule(Array.from({ length: 12 }, () => 43_200)), {
      maxReceiveCount: 13,
      sourceRetentionSeconds: 13 * 86_400,
      deadLetterRetentionSeconds: 14 * 86_400,
    });
    // 7 + 13 + 14 + 13 + 6 days
    expect(lifetimes.minimumRecordTtlSeconds).toBe(53 * 86_400);
    expect(lifetimes.defaultRecordTtlSeconds).toBe(53 * 86_400);
  });

  it('an orderly group is fed by no bus rule, so no archive replay reaches it: 22 days', () => {
    const { lifetimes, recordTtlSeconds } = lifetimesOf({ ordering: 'orderly' });
    expect(lifetimes.copyLifetimeSeconds).toBe(2 * (4 * 86_400 + 48) + 14 * 86_400);
    expect(lifetimes.minimumRecordTtlSeconds).toBe(lifetimes.copyLifetimeSeconds + 48);
    expect(recordTtlSeconds).toBe(30 * 86_400);
  });

  it.each([
    [
      'too few receives',
      { maxReceiveCount: 17 },
      21,
      /maxReceiveCount is 17 but the retry schedule \(20 retries, 21 deliveries over 24340s\) needs at least 21/,
    ],
    [
      'too short a source retention',
      { sourceRetentionSeconds: 86_400 },
      17,
      /source queue keeps messages 86400s but the retry schedule \(16 retries, 17 deliveries over 17140s\) needs at least 103540s/,
    ],
    [
      'a DLQ that keeps less than the source',
      { deadLetterRetentionSeconds: 3 * 86_400 },
      17,
      /DLQ keeps messages 259200s, not longer than the source queue's 362740s/,
    ],
  ])('refuses %s, naming both numbers', (_, queues, deliveries, message) => {
    const schedule = new RetrySchedule(
      deliveries === 21
        ? [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200, 1800, 1800, 1800, 1800]
        : undefined,
    );
    const base = {
      maxReceiveCount: deliveries,
      sourceRetentionSeconds: 4 * 86_400 + schedule.totalDelaySeconds,
      deadLetterRetentionSeconds: 14 * 86_400,
    };
    expect(() => new DeliveryLifetimes(schedule, { ...base, ...queues })).toThrow(IncoherentLifetimesError);
    expect(() => new DeliveryLifetimes(schedule, { ...base, ...queues })).toThrow(message);
  });

  it('refuses a TTL that is not a number', () => {
    expect(() => lifetimesOf({ idempotencyTtlSeconds: Number.NaN })).toThrow(/idempotency records live NaNs/);
  });
});

describe('at the minimum record TTL, a redriven copy that waits out the backlog allowance (the boundary)', () => {
  const DAY_MS = 86_400_000;
  it.each([
    ['concurrent', {}],
    ['orderly', { ordering: 'orderly' as const }],
  ])('%s: is still admitted at its last delivery, and finds its twin’s record', (_, settings) => {
    // Prepare: records that live exactly the minimum; a message stored at t0, its twin applied at once
    const { lifetimes } = lifetimesOf(settings);
    const ttl = lifetimes.minimumRecordTtlSeconds;
    const { sourceRetentionSeconds: source, deadLetterRetentionSeconds: dlq } = lifetimes.queues;
    const t0 = Date.UTC(2026, 0, 1);
    const twinRecordExpiresAt = t0 + ttl * 1000;
    // Act: the copy's last delivery: [archive replay], the source queue, the DLQ, then redriven and
    // left to wait out the backlog allowance and its fresh retry window in the source queue
    const lastDelivery = t0 + lifetimes.copyLifetimeSeconds * 1000;
    const redrivenAt = lastDelivery - source * 1000;
    // Assess
    expect(lastDelivery - redrivenAt).toBe((4 * 86_400 + lifetimes.schedule.totalDelaySeconds) * 1000);
    expect(
      storeTimeRefusal({ storeTimestamp: t0 }, lifetimes.redriveHorizonSeconds(ttl), lastDelivery),
    ).toBeUndefined();
    expect(lastDelivery).toBeLessThan(twinRecordExpiresAt);
    // ops sends the letter back up to the end of its DLQ life, and no later than the guard allows
    const letterAge = redrivenAt - t0;
    expect(letterAge).toBe(lifetimes.copyLifetimeSeconds * 1000 - source * 1000);
    expect(letterAge - (lifetimes.ordering === 'orderly' ? 0 : 7 * DAY_MS)).toBe((source + dlq) * 1000);
    expect(letterAge).toBeLessThanOrEqual(lifetimes.letterRedriveHorizonSeconds(ttl) * 1000);
  });

  it('refuses a TTL one second shorter, and the earlier minimum (source + DLQ + a retry window), which that copy outlived', () => {
    const { lifetimes } = lifetimesOf({});
    const { sourceRetentionSeconds: source, deadLetterRetentionSeconds: dlq } = lifetimes.queues;
    const earlierMinimum = source + dlq + lifetimes.schedule.totalDelaySeconds;
    // Under the earlier minimum the copy's last delivery came after its twin's record had expired.
    expect(lifetimes.copyLifetimeSeconds).toBeGreaterThan(earlierMinimum);
    for (const ttl of [lifetimes.minimumRecordTtlSeconds - 1, earlierMinimum]) {
      expect(() => lifetimes.assertRecordTtl(ttl)).toThrow(IncoherentLifetimesError);
      expect(() => lifetimes.assertRecordTtl(ttl)).toThrow("a redriven copy's source retention 362740s");
    }
    expect(() => lifetimes.assertRecordTtl(lifetimes.minimumRecordTtlSeconds)).not.toThrow();
  });
});

describe('the cold start refuses settings that disagree with each other', () => {
  it('starts with the environment the CDK app derives', () => {
    expect(() => pointsConsumer.create(consumerConfigFromEnv(POINTS, deployedEnvironment({})))).not.toThrow();
  });

  it('refuses a 20-retry schedule on a queue that redrives after 17 receives', () => {
    const env = deployedEnvironment({
      RETRY_DELAYS_SECONDS: '10,30,60,120,180,240,300,360,420,480,540,600,1200,1800,3600,7200,1800,1800,1800,1800',
      SOURCE_RETENTION_SECONDS: String(6 * 86_400),
    });
    const build = () => pointsConsumer.create(consumerConfigFromEnv(POINTS, env));
    expect(build).toThrow(InvalidConsumerConfigError);
    expect(build).toThrow(
      "consumer group point-consumer-group: the source queue's maxReceiveCount is 17 but the retry schedule (20 retries, 21 deliveries over 24340s) needs at least 21: " +
        'SQS would dead-letter messages without a reason before their retries are spent',
    );
  });

  it('refuses a schedule longer than the source queue keeps messages', () => {
    const env = deployedEnvironment({ SOURCE_RETENTION_SECONDS: String(4 * 3600) });
    expect(() => pointsConsumer.create(consumerConfigFromEnv(POINTS, env))).toThrow(
      /source queue keeps messages 14400s but the retry schedule .* needs at least 103540s/,
    );
  });

  it('starts the orderly order-status group with the environment the CDK app derives for it', () => {
    const env = deployedEnvironment({}, ORDER_STATUS);
    expect(env).toMatchObject({
      RETRY_DELAYS_SECONDS: Array.from({ length: 16 }, () => '3').join(','),
      SOURCE_MAX_RECEIVE_COUNT: '171',
    });
    expect(() => orderStatusConsumer.create(consumerConfigFromEnv(ORDER_STATUS, env))).not.toThrow();
  });

  it("refuses an orderly group on a queue that redrives after its schedule's deliveries, before a held-back message's own retries are spent", () => {
    const env = deployedEnvironment({ SOURCE_MAX_RECEIVE_COUNT: '17' }, ORDER_STATUS);
    expect(() => orderStatusConsumer.create(consumerConfigFromEnv(ORDER_STATUS, env))).toThrow(
      "consumer group order-status-consumer-group: the source queue's maxReceiveCount is 17 but an orderly group under the retry schedule " +
        '(16 retries, 17 deliveries over 48s) needs at least 171 (10 messages a FIFO batch × 17 deliveries + 1)',
    );
  });

  it('refuses packing switched on by hand for an orderly group, naming both settings', () => {
    const env = deployedEnvironment({ CONSUMER_PACKING: 'on' }, ORDER_STATUS);
    expect(() => consumerConfigFromEnv(ORDER_STATUS, env)).toThrow(InvalidConsumerConfigError);
    expect(() => consumerConfigFromEnv(ORDER_STATUS, env)).toThrow(
      /order-status-consumer-group: packing is on \(tuning.packing \/ CONSUMER_PACKING\) but ordering is 'orderly'/,
    );
  });

  it('refuses a 7-day record TTL (the old default) against a 14-day DLQ', () => {
    const env = deployedEnvironment({ IDEMPOTENCY_TTL_SECONDS: String(7 * 86_400) });
    expect(() => pointsConsumer.create(consumerConfigFromEnv(POINTS, env))).toThrow(
      /idempotency records live 604800s but a copy of a message can come back for 2557020s/,
    );
  });
});
