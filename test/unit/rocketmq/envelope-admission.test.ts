import { describe, expect, it } from 'vitest';
import { topicRefusal } from '../../../lib/rocketmq/envelope-admission.ts';

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
