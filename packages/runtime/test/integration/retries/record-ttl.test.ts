import { COUPONS, consumer as couponConsumer } from '@rocketmq-lambda/consumers/functions/coupon-consumer/handler.ts';
import { consumer as orderStatusConsumer } from '@rocketmq-lambda/consumers/functions/order-status-consumer/handler.ts';
import { consumer as pointsConsumer } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { describe, expect, inject, it } from 'vitest';
import { emulatorConfig } from '../../../src/aws/index.ts';
import { InvalidConsumerConfigError } from '../../../src/consumer/index.ts';
import { consumerConfigFromEnv } from '../../../src/consumer/internal.ts';
import { RetrySchedule } from '../../../src/rocketmq/index.ts';

/** Enough configuration to build a consumer; nothing is called at build time. */
const deps = () => ({
  aws: emulatorConfig(inject('emulatorEndpoint')),
  tables: {
    idempotency: 'unused-idempotency',
    ledger: 'unused-ledger',
    accounts: 'unused-accounts',
    orders: 'unused-orders',
  },
  outboxTable: 'unused-outbox',
  deadLetterQueueUrl: 'http://127.0.0.1/queue/unused-dlq',
  schedule: new RetrySchedule(),
  services: { 'coupon-service': 'http://127.0.0.1:9/' },
  envelopeKeys: PROCESS_SIGNING_KEY.ring,
});

const RETRY_WINDOW_SECONDS = 17_140; // 4h45m40s

describe('idempotency records outlive every copy of a message (checked at start-up)', () => {
  it('accepts the default: 30-day records against RocketMQ’s 4h45m40s schedule and a 14-day DLQ', () => {
    expect(new RetrySchedule().totalDelaySeconds).toBe(RETRY_WINDOW_SECONDS);
    expect(() => couponConsumer.create(deps())).not.toThrow();
    expect(() => pointsConsumer.create(deps())).not.toThrow();
  });

  it.each([
    ['one hour', 3_600],
    ['exactly the retry window (no redrive time)', RETRY_WINDOW_SECONDS],
    ['7 days, shorter than the DLQ keeps a letter', 7 * 86_400],
    ['not a number', Number.NaN],
  ])('refuses records that live %s', (_, ttlSeconds) => {
    expect(() => couponConsumer.create({ ...deps(), ttlSeconds })).toThrow(InvalidConsumerConfigError);
    expect(() => pointsConsumer.create({ ...deps(), ttlSeconds })).toThrow(
      /a copy of a message can come back for 2557020s/,
    );
  });

  it('refuses a schedule longer than the default 30-day records can cover', () => {
    const twelveHours = new RetrySchedule(Array.from({ length: 16 }, () => 12 * 3600)); // 8 days
    expect(() => couponConsumer.create({ ...deps(), schedule: twelveHours })).toThrow(InvalidConsumerConfigError);
    expect(() => couponConsumer.create({ ...deps(), schedule: twelveHours })).toThrow(
      /idempotency records live 2592000s but a copy of a message can come back for 4579200s/,
    );
  });

  it('refuses the misconfiguration read from the environment before any message is touched', async () => {
    // Prepare
    const env = {
      IDEMPOTENCY_TABLE: 'unused',
      DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1/queue/unused-dlq',
      IDEMPOTENCY_TTL_SECONDS: '3600',
      COUPON_SERVICE_URL: 'http://127.0.0.1:9/',
      ENVELOPE_SIGNING_SECRET: 'rmq-test/envelope-signing-key',
    };
    // Act + Assess
    expect(() =>
      couponConsumer.create({
        ...consumerConfigFromEnv(COUPONS, env),
        services: { 'coupon-service': env.COUPON_SERVICE_URL },
      }),
    ).toThrow(/idempotency records live 3600s but a copy of a message can come back/);
    expect(() =>
      couponConsumer.create({
        ...consumerConfigFromEnv(COUPONS, { ...env, IDEMPOTENCY_TTL_SECONDS: 'seven days' }),
        services: { 'coupon-service': env.COUPON_SERVICE_URL },
      }),
    ).toThrow(InvalidConsumerConfigError);
  });

  it('refuses a coupon consumer without a usable coupon service URL', () => {
    expect(() => couponConsumer.create({ ...deps(), services: { 'coupon-service': '' } })).toThrow(
      /COUPON_SERVICE_URL must be an http\(s\) URL/,
    );
    expect(() => couponConsumer.create({ ...deps(), services: { 'coupon-service': 'ftp://coupons' } })).toThrow(
      InvalidConsumerConfigError,
    );
  });

  it('puts no limit on the state-transition consumer, which keeps no records', () => {
    const twelveHours = new RetrySchedule(Array.from({ length: 16 }, () => 12 * 3600));
    expect(() => orderStatusConsumer.create({ ...deps(), schedule: twelveHours })).not.toThrow();
  });
});
