import { messageGroupOf, parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it } from 'vitest';
import { envelopeOf, serializeEnvelope } from '../src/received-envelope.ts';
import { shardingKeyOf, userPropertiesOf } from '../src/remoting-route-consumer.ts';
import { receivedMessage } from './support/received-messages.ts';

/**
 * The properties of one message as a RocketMQ 4.7.1 Java producer stores it: what the client sets
 * itself (UNIQ_KEY, WAIT, KEYS, TAGS), and what the application set with `putUserProperty`,
 * which 4.7.1 allows for every name outside `MessageConst.STRING_HASH_SET`.
 */
const CLIENT_SET = { UNIQ_KEY: '7F00000120A318B4AAC2000012340001', WAIT: 'true', KEYS: 'SO-9 u-9', TAGS: 'PAID' };
const APPLICATION_SET = {
  traceId: 'abc',
  __STARTDELIVERTIME: '1767225600000',
  __SHARDINGKEY: 'SO-9',
  __SHARDING_KEY: 'SO-9-ons',
  CHECK_IMMUNITY_TIME_IN_SECONDS: '60',
  TRANSACTION_CHECK_TIMES: '2',
  TRAN_PREPARED_QUEUE_OFFSET: '17',
};

describe('RocketMQ 4 properties, as the 4.7.1 client classifies them', () => {
  it('keeps every property the application set, the six that 4.7.1 classes as user properties included', () => {
    // Act
    const user = userPropertiesOf({ ...CLIENT_SET, ...APPLICATION_SET, '': '' });
    // Assess
    expect(user).toEqual(APPLICATION_SET);
  });

  it('takes the Java sharding key as message group, loses neither when both are set, and a route finds either', () => {
    // Prepare
    const properties = { ...CLIENT_SET, ...APPLICATION_SET };
    const message = receivedMessage({
      keys: ['SO-9', 'u-9'],
      messageGroup: shardingKeyOf(properties),
      userProperties: userPropertiesOf(properties),
    });

    // Act
    const envelope = parseEnvelope(serializeEnvelope(envelopeOf(message, 'prod-4')));

    // Assess
    expect(shardingKeyOf(properties)).toBe('SO-9');
    expect(shardingKeyOf({ __SHARDING_KEY: 'SO-9-ons' })).toBe('SO-9-ons');
    expect(shardingKeyOf({ TAGS: 'PAID' })).toBeUndefined();
    expect(envelope.userProperties).toEqual(APPLICATION_SET);
    expect(envelope.systemProperties).toEqual({
      UNIQ_KEY: message.msgId,
      KEYS: 'SO-9 u-9',
      TAGS: 'PAID',
      __SHARDINGKEY: 'SO-9',
    });
    // An orderly route's message group: by default the sharding key; by property, whichever name the producer used.
    expect(messageGroupOf(message)).toBe('SO-9');
    expect(messageGroupOf(message, { from: 'property', name: '__SHARDINGKEY' })).toBe('SO-9');
    expect(messageGroupOf(message, { from: 'property', name: '__SHARDING_KEY' })).toBe('SO-9-ons');
    expect(messageGroupOf(envelope, { from: 'property', name: '__SHARDING_KEY' })).toBe('SO-9-ons');
  });
});
