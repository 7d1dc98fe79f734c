import { parseEnvelope, signatureRefusal, signEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it } from 'vitest';
import { envelopeOf, serializeEnvelope } from '../src/received-envelope.ts';
import { delayOf } from '../src/remoting-route-consumer.ts';
import { receivedMessage } from './support/received-messages.ts';

describe('envelope writer', () => {
  it('writes the CloudEvents envelope with every broker fact, and the project parser reads it back', () => {
    // Prepare
    const message = receivedMessage({
      keys: ['SO1001', 'u-7'],
      userProperties: { traceId: 'abc' },
      queueId: 3,
      queueOffset: 1234,
      bornTimestamp: 1593930151117,
      storeTimestamp: 1593930151120,
      reconsumeTimes: 2,
    });

    // Act
    const envelope = envelopeOf(message, 'prod-cluster');
    const parsed = parseEnvelope(serializeEnvelope(envelope));

    // Assess
    expect(envelope).toMatchObject({
      specversion: '1.0',
      id: message.msgId,
      source: 'rocketmq://prod-cluster',
      type: 'mq:Topic:SendMessage',
      subject: 'ORDER_TOPIC',
      time: '2020-07-05T06:22:31.120Z',
      datacontenttype: 'application/json',
      data: {
        topic: 'ORDER_TOPIC',
        msgId: message.msgId,
        tags: 'PAID',
        keys: ['SO1001', 'u-7'],
        queueId: 3,
        queueOffset: 1234,
        brokerName: 'broker-a',
        bornHost: '10.0.0.1',
        storeHost: '127.0.0.1:10911',
        reconsumeTimes: 2,
        systemProperties: { UNIQ_KEY: message.msgId, KEYS: 'SO1001 u-7', TAGS: 'PAID' },
        userProperties: { traceId: 'abc' },
        bodyEncoding: 'utf8',
      },
    });
    expect(parsed).toMatchObject({
      msgId: message.msgId,
      topic: 'ORDER_TOPIC',
      tags: 'PAID',
      keys: ['SO1001', 'u-7'],
      reconsumeTimes: 2,
      queueId: 3,
      queueOffset: 1234,
      bornTimestamp: 1593930151117,
      storeTimestamp: 1593930151120,
      body: message.body.toString(),
    });
  });

  it('keeps a body that is not UTF-8 byte for byte as base64', () => {
    const body = Buffer.from([0xff, 0x00, 0xc3, 0x28]);
    const envelope = envelopeOf(receivedMessage({ body }), 'c');
    expect(envelope.data.bodyEncoding).toBe('base64');
    expect(Buffer.from(envelope.data.body, 'base64')).toEqual(body);
  });

  it('records the FIFO message group as the RocketMQ 4 sharding key and omits an absent tag', () => {
    const envelope = envelopeOf(receivedMessage({ messageGroup: 'user-7', tag: undefined, keys: [] }), 'c');
    expect(envelope.data.systemProperties).toEqual({ UNIQ_KEY: envelope.id, __SHARDINGKEY: 'user-7' });
    expect(envelope.data).not.toHaveProperty('tags');
    expect(parseEnvelope(serializeEnvelope(envelope)).tags).toBeUndefined();
  });
});

describe('a delayed message', () => {
  const key = new Uint8Array(32).fill(7);

  it('carries its delivery timestamp and delay level into the envelope, and the parser keeps both', () => {
    // Prepare: a 5.x delay message, and a 4.x message held back on delay level 3
    const v5 = receivedMessage({ deliveryTimestamp: 1767225600000 });
    const v4 = receivedMessage({ msgId: '7F00000120A318B4AAC2000012340001', delayTimeLevel: 3 });

    // Act
    const fromV5 = parseEnvelope(serializeEnvelope(envelopeOf(v5, 'prod-5')));
    const fromV4 = parseEnvelope(serializeEnvelope(envelopeOf(v4, 'prod-4')));
    const atOnce = envelopeOf(receivedMessage(), 'prod-5');

    // Assess
    expect(fromV5.deliveryTimestamp).toBe(1767225600000);
    expect(fromV4.delayTimeLevel).toBe(3);
    expect(fromV4).not.toHaveProperty('deliveryTimestamp');
    expect(atOnce.data).not.toHaveProperty('deliveryTimestamp');
    expect(atOnce.data).not.toHaveProperty('delayTimeLevel');
  });

  it('is covered by the signature: an envelope whose delivery timestamp or delay level was changed is refused', () => {
    // Prepare
    const signed = signEnvelope(
      envelopeOf(receivedMessage({ deliveryTimestamp: 1767225600000, delayTimeLevel: 3 }), 'prod'),
      key,
    );
    const later = { ...signed, data: { ...signed.data, deliveryTimestamp: 1767225600001 } };
    const lower = { ...signed, data: { ...signed.data, delayTimeLevel: 2 } };
    const dropped = { ...signed, data: { ...signed.data, deliveryTimestamp: undefined } };

    // Act
    const refusals = [signed, later, lower, dropped].map((e) => signatureRefusal(serializeEnvelope(e), [key]));

    // Assess
    expect(refusals).toEqual([
      undefined,
      "the envelope's signature matches none of the signing keys",
      "the envelope's signature matches none of the signing keys",
      "the envelope's signature matches none of the signing keys",
    ]);
  });

  it("reads a 4.x message's DELAY level and __STARTDELIVERTIME, and leaves out values that are not whole numbers", () => {
    expect(delayOf({ DELAY: '2', __STARTDELIVERTIME: '1767225600000' })).toEqual({
      delayTimeLevel: 2,
      deliveryTimestamp: 1767225600000,
    });
    expect(delayOf({ DELAY: '0', __STARTDELIVERTIME: 'tomorrow' })).toEqual({});
    expect(delayOf({ DELAY: '-1', __STARTDELIVERTIME: '1.5e12' })).toEqual({});
    expect(delayOf({ TAGS: 'PAID' })).toEqual({});
  });
});

describe('envelope serialization', () => {
  it('escapes the characters SQS refuses in a body, so the text survives unchanged', () => {
    const text = 'a\uFFFFb\uFFFEc\u0001d😀';
    const json = serializeEnvelope(envelopeOf(receivedMessage({ body: Buffer.from(text) }), 'c'));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for raw control characters in the JSON
    expect(json).not.toMatch(/[\uFFFE\uFFFF\u0000-\u0008]/);
    expect(parseEnvelope(json).body).toBe(text);
  });
  it('writes offsetMsgId only when the protocol delivered one (RocketMQ 4), and the parser keeps it', () => {
    // Prepare
    const fromV4 = receivedMessage({
      msgId: '7F00000120A318B4AAC2000012340001',
      offsetMsgId: '7F00000100002A9F0000000000001A2B',
    });
    const fromV5 = receivedMessage();

    // Act
    const v4 = envelopeOf(fromV4, 'prod-4');
    const v5 = envelopeOf(fromV5, 'prod-5');

    // Assess
    expect(v4.data.offsetMsgId).toBe('7F00000100002A9F0000000000001A2B');
    expect(parseEnvelope(serializeEnvelope(v4)).offsetMsgId).toBe('7F00000100002A9F0000000000001A2B');
    expect('offsetMsgId' in v5.data).toBe(false);
  });
});
