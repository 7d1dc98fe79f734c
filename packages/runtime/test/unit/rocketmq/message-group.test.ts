import { describe, expect, it } from 'vitest';
import { type MessageGroupFacts, messageGroupOf } from '../../../src/rocketmq/message-group.ts';

const message: MessageGroupFacts = {
  topic: 'ORDER_TOPIC',
  messageGroup: 'user-1',
  keys: ['SO202007051422310088', 'trace-7'],
  userProperties: { shop: 'shop-42' },
  brokerName: 'broker-a',
  queueId: 3,
};

describe("an orderly route's message group", () => {
  it.each([
    [{ from: 'messageGroup' } as const, 'user-1'],
    [{ from: 'key' } as const, 'SO202007051422310088'],
    [{ from: 'property', name: 'shop' } as const, 'shop-42'],
    [{ from: 'queue' } as const, 'ORDER_TOPIC@broker-a#3'],
  ])('from %o is %s', (source, expected) => {
    expect(messageGroupOf(message, source)).toBe(expected);
  });

  it('is the RocketMQ 5 message group by default', () => {
    expect(messageGroupOf(message)).toBe('user-1');
  });

  it('falls back to the queue, then the topic, when the message lacks what the source names: still in stored order', () => {
    const bare = { ...message, messageGroup: undefined, keys: [], userProperties: {} };
    expect(messageGroupOf(bare, { from: 'key' })).toBe('ORDER_TOPIC@broker-a#3');
    expect(messageGroupOf(bare, { from: 'property', name: 'shop' })).toBe('ORDER_TOPIC@broker-a#3');
    expect(messageGroupOf({ ...bare, messageGroup: '' })).toBe('ORDER_TOPIC@broker-a#3');
    expect(messageGroupOf({ ...bare, brokerName: undefined }, { from: 'queue' })).toBe('ORDER_TOPIC@#3');
    expect(messageGroupOf({ ...bare, queueId: undefined }, { from: 'key' })).toBe('ORDER_TOPIC');
  });

  it('hashes a value SQS refuses as a group id, so one key stays one group and the send cannot fail', () => {
    const chinese = messageGroupOf({ ...message, keys: ['订单-0001'] }, { from: 'key' });
    expect(chinese).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(messageGroupOf({ ...message, keys: ['订单-0001'] }, { from: 'key' })).toBe(chinese);
    expect(messageGroupOf({ ...message, keys: ['订单-0002'] }, { from: 'key' })).not.toBe(chinese);
    expect(messageGroupOf({ ...message, messageGroup: 'x'.repeat(129) })).toMatch(/^sha256:/);
    expect(messageGroupOf({ ...message, messageGroup: 'x'.repeat(128) })).toBe('x'.repeat(128));
  });
});
