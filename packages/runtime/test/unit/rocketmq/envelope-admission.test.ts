import { describe, expect, it } from 'vitest';
import { storeTimeRefusal, topicRefusal } from '../../../src/rocketmq/envelope-admission.ts';

describe('topicRefusal', () => {
  it('admits the subscribed topic, exactly', () => {
    expect(topicRefusal({ topic: 'ORDER_TOPIC' }, 'ORDER_TOPIC')).toBeUndefined();
  });

  it.each([
    ['another topic', 'REFUND_TOPIC', '"REFUND_TOPIC"'],
    ['another case', 'order_topic', '"order_topic"'],
    ['a retry topic', '%RETRY%point-consumer-group', '"%RETRY%point-consumer-group"'],
  ])('refuses %s, quoting it', (_, topic, quoted) => {
    expect(topicRefusal({ topic }, 'ORDER_TOPIC')).toBe(
      `the envelope's topic ${quoted} is not ORDER_TOPIC, the topic this consumer group subscribes to`,
    );
  });

  it('quotes at most 40 characters of a long topic', () => {
    expect(topicRefusal({ topic: 'T'.repeat(127) }, 'ORDER_TOPIC')).toContain(`"${'T'.repeat(40)}"… (127 characters)`);
  });
});

describe('storeTimeRefusal', () => {
  const HORIZON = 30 * 86_400 - 17_140;
  const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

  it('admits a message stored within the horizon, up to the horizon itself', () => {
    expect(storeTimeRefusal({ storeTimestamp: NOW }, HORIZON, NOW)).toBeUndefined();
    expect(storeTimeRefusal({ storeTimestamp: NOW - HORIZON * 1000 }, HORIZON, NOW)).toBeUndefined();
  });

  it('refuses one stored a millisecond before the horizon, saying how old it is and why that matters', () => {
    expect(storeTimeRefusal({ storeTimestamp: NOW - HORIZON * 1000 - 1 }, HORIZON, NOW)).toBe(
      "the message was stored 29d 19h 14m ago (2026-11-01T16:45:39.999Z), past this group's redrive horizon of 29d 19h 14m: " +
        'its dedup record may have expired, so acting on it could apply its effect twice',
    );
  });

  it('does not judge a message without a store time, or one stored after the consumer’s clock', () => {
    expect(storeTimeRefusal({ storeTimestamp: undefined }, HORIZON, NOW)).toBeUndefined();
    expect(storeTimeRefusal({ storeTimestamp: NOW + 60_000 }, HORIZON, NOW)).toBeUndefined();
  });
});
