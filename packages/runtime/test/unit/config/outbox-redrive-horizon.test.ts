import { describe, expect, it } from 'vitest';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  consumerGroup,
  lifetimesOf,
  outboxRedriveHorizonOf,
} from '../../../src/config/index.ts';

const POINTS = consumerGroup('point-consumer-group');
const NOTIFICATIONS = consumerGroup('notification-consumer-group');

describe('outboxRedriveHorizonOf: how old a FAILED outbox item may be to be redriven', () => {
  it("is the subscribing group's letter redrive horizon: record TTL − a retry window − the source retention", () => {
    const { lifetimes, recordTtlSeconds } = lifetimesOf(NOTIFICATIONS);
    expect(outboxRedriveHorizonOf(POINTS)).toBe(lifetimes.letterRedriveHorizonSeconds(recordTtlSeconds));
    expect(outboxRedriveHorizonOf(POINTS)).toBe(2_212_120);
  });

  it('takes the smallest horizon of the subscribers', () => {
    const shortLived: ConsumerGroupDefinition = {
      ...NOTIFICATIONS,
      group: 'short-lived-notification-group',
      functionName: 'short-lived',
      retryDelaysSeconds: [1, 1],
      idempotencyTtlSeconds: 40 * 86_400,
    };
    const longLived: ConsumerGroupDefinition = { ...shortLived, group: 'long', idempotencyTtlSeconds: 90 * 86_400 };
    const short = lifetimesOf(shortLived);
    const expected = short.lifetimes.letterRedriveHorizonSeconds(short.recordTtlSeconds);
    expect(outboxRedriveHorizonOf(POINTS, [POINTS, longLived, shortLived])).toBe(expected);
  });

  it('is undefined for a group no catalogue group subscribes to', () => {
    expect(outboxRedriveHorizonOf(POINTS, [POINTS])).toBeUndefined();
    expect(outboxRedriveHorizonOf(CONSUMER_GROUPS[1])).toBeUndefined();
  });
});
