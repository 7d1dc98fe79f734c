import { describe, expect, it } from 'vitest';
import { ENVELOPE_LIMITS, excerpt, InvalidEnvelopeError, parseEnvelope } from '../../../src/rocketmq/envelope.ts';
import { MsgIdGenerator, writeEnvelope } from '../../../src/rocketmq/envelope-writer.ts';

const data = {
  topic: 'ORDER_TOPIC',
  msgId: '0A1B2C3D00002A9F0000000000012E45',
  offsetMsgId: '0A1B2C4600002A9F0000000000012E45',
  tags: 'PAID',
  keys: ['SO202007051422310088'],
  queueId: 3,
  queueOffset: 1234,
  brokerName: 'broker-a',
  bornTimestamp: 1593930151117,
  storeTimestamp: 1593930151120,
  bornHost: '10.27.44.61:53211',
  storeHost: '10.27.44.70:10911',
  reconsumeTimes: 0,
  systemProperties: { UNIQ_KEY: '0A1B2C3D00002A9F0000000000012E45', KEYS: 'SO202007051422310088', TAGS: 'PAID' },
  userProperties: {},
  bodyEncoding: 'utf8',
  body: '{"orderNo":"SO202007051422310088","userId":88372,"points":300}',
};
const cloudEvent = {
  specversion: '1.0',
  id: data.msgId,
  source: 'rocketmq://prod-cluster',
  type: 'mq:Topic:SendMessage',
  subject: 'ORDER_TOPIC',
  time: '2020-07-05T06:22:31.117Z',
  datacontenttype: 'application/json',
  data,
};

describe('parseEnvelope', () => {
  it('reads the signing key id an envelope names, and refuses one that cannot be a key id', () => {
    expect(() => parseEnvelope(JSON.stringify({ ...cloudEvent, signaturekey: 'AbCdEf0123456789' }))).not.toThrow();
    expect(() => parseEnvelope(JSON.stringify({ ...cloudEvent, signaturekey: 'AbCdEf01234567' }))).toThrow(
      /signaturekey must be 16 base64url characters/,
    );
  });

  it('reads the documented CloudEvent with every field', () => {
    const m = parseEnvelope(JSON.stringify(cloudEvent));
    expect(m).toMatchObject({
      msgId: data.msgId,
      topic: 'ORDER_TOPIC',
      tags: 'PAID',
      keys: ['SO202007051422310088'],
      queueId: 3,
      queueOffset: 1234,
      brokerName: 'broker-a',
      reconsumeTimes: 0,
      source: 'rocketmq://prod-cluster',
      body: data.body,
    });
  });

  it('accepts an EventBridge event whose detail is the CloudEvent', () => {
    const wrapped = {
      version: '0',
      id: 'e1',
      'detail-type': 'mq:Topic:SendMessage',
      source: 'rocketmq.bridge',
      detail: cloudEvent,
    };
    expect(parseEnvelope(JSON.stringify(wrapped))).toMatchObject({
      msgId: data.msgId,
      source: 'rocketmq://prod-cluster',
      body: data.body,
    });
  });

  it('accepts an EventBridge event whose detail is the data object', () => {
    const wrapped = {
      version: '0',
      id: 'e1',
      'detail-type': 'mq:Topic:SendMessage',
      source: 'rocketmq.bridge',
      detail: data,
    };
    const m = parseEnvelope(JSON.stringify(wrapped));
    expect(m).toMatchObject({ msgId: data.msgId, tags: 'PAID', keys: ['SO202007051422310088'] });
    expect(m.source).toBeUndefined();
  });

  it('decodes base64 bodies, including multi-byte UTF-8', () => {
    const body = '{"orderNo":"SO1","note":"积分 ✓"}';
    const event = {
      ...cloudEvent,
      data: { ...data, bodyEncoding: 'base64', body: Buffer.from(body).toString('base64') },
    };
    expect(parseEnvelope(JSON.stringify(event)).body).toBe(body);
  });

  it('keeps a byte-order mark at the start of a base64 body', () => {
    const bytes = Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"orderNo":"SO1"}')]);
    const event = { ...cloudEvent, data: { ...data, bodyEncoding: 'base64', body: bytes.toString('base64') } };
    const body = parseEnvelope(JSON.stringify(event)).body;
    expect(body).toBe('\uFEFF{"orderNo":"SO1"}');
    expect(Buffer.from(body, 'utf8').equals(bytes)).toBe(true);
  });

  it('rejects base64 that is not base64, and base64 that is not UTF-8', () => {
    const notBase64 = { ...cloudEvent, data: { ...data, bodyEncoding: 'base64', body: 'not base64!' } };
    expect(() => parseEnvelope(JSON.stringify(notBase64))).toThrow(/not valid base64/);
    const binary = {
      ...cloudEvent,
      data: { ...data, bodyEncoding: 'base64', body: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') },
    };
    expect(() => parseEnvelope(JSON.stringify(binary))).toThrow(/not UTF-8/);
  });

  it('takes keys from systemProperties.KEYS (space-separated) when data.keys is absent', () => {
    const { keys: _keys, ...rest } = data;
    const event = {
      ...cloudEvent,
      data: { ...rest, systemProperties: { ...data.systemProperties, KEYS: 'SO1  SO2 SO1' } },
    };
    expect(parseEnvelope(JSON.stringify(event)).keys).toEqual(['SO1', 'SO2']);
  });

  it('defaults optional fields: no tag, no keys, reconsumeTimes 0', () => {
    const minimal = {
      specversion: '1.0',
      id: 'x',
      type: 'mq:Topic:SendMessage',
      data: { topic: 'T', msgId: data.msgId, body: 'hello' },
    };
    const m = parseEnvelope(JSON.stringify(minimal));
    expect(m).toMatchObject({
      tags: undefined,
      keys: [],
      reconsumeTimes: 0,
      body: 'hello',
      systemProperties: {},
      userProperties: {},
    });
  });

  it('takes the tag from systemProperties.TAGS when data.tags is absent', () => {
    const { tags: _tags, ...rest } = data;
    expect(parseEnvelope(JSON.stringify({ ...cloudEvent, data: rest })).tags).toBe('PAID');
  });

  it.each([
    ['not JSON', 'hello', /not JSON/],
    ['truncated JSON', JSON.stringify(cloudEvent).slice(0, 50), /not JSON/],
    ['a JSON array', '[]', /root|expected object/],
    ['wrong type', JSON.stringify({ ...cloudEvent, type: 'other' }), /type/],
    ['missing msgId', JSON.stringify({ ...cloudEvent, data: { ...data, msgId: undefined } }), /data\.msgId/],
    [
      'msgId not hex',
      JSON.stringify({ ...cloudEvent, data: { ...data, msgId: 'hello-world-not-hex-at-all-00000' } }),
      /hex/,
    ],
    ['missing topic', JSON.stringify({ ...cloudEvent, data: { ...data, topic: undefined } }), /data\.topic/],
    ['missing body', JSON.stringify({ ...cloudEvent, data: { ...data, body: undefined } }), /data\.body/],
    ['numeric body', JSON.stringify({ ...cloudEvent, data: { ...data, body: 42 } }), /data\.body/],
    [
      'EventBridge wrapper around garbage',
      JSON.stringify({ 'detail-type': 'x', detail: 'garbage' }),
      /expected object/,
    ],
    ['negative queueOffset', JSON.stringify({ ...cloudEvent, data: { ...data, queueOffset: -1 } }), /queueOffset/],
    [
      'a delivery timestamp as text',
      JSON.stringify({ ...cloudEvent, data: { ...data, deliveryTimestamp: '2026-12-01T08:00:00Z' } }),
      /data\.deliveryTimestamp/,
    ],
    ['delay level 0', JSON.stringify({ ...cloudEvent, data: { ...data, delayTimeLevel: 0 } }), /data\.delayTimeLevel/],
    [
      'a fractional delay level',
      JSON.stringify({ ...cloudEvent, data: { ...data, delayTimeLevel: 1.5 } }),
      /delayTimeLevel/,
    ],
  ])('rejects %s with a classified reason', (_name, body, reason) => {
    expect(() => parseEnvelope(body)).toThrow(InvalidEnvelopeError);
    expect(() => parseEnvelope(body)).toThrow(reason);
  });

  it('round-trips what the envelope writer produces', () => {
    const msgId = new MsgIdGenerator().next(Date.UTC(2020, 6, 5, 6, 22, 31, 117));
    const m = parseEnvelope(
      writeEnvelope({
        topic: 'ORDER_TOPIC',
        msgId,
        tags: 'PAID',
        keys: ['SO1'],
        body: '{}',
        reconsumeTimes: 2,
        deliveryTimestamp: 1593930211117,
        delayTimeLevel: 5,
      }),
    );
    expect(m).toMatchObject({
      deliveryTimestamp: 1593930211117,
      delayTimeLevel: 5,
      msgId,
      topic: 'ORDER_TOPIC',
      tags: 'PAID',
      keys: ['SO1'],
      body: '{}',
      reconsumeTimes: 2,
    });
  });

  it('generates msgIds in RocketMQ layout: ip, pid, class-loader hash, ms since month start, counter', () => {
    const at = Date.UTC(2020, 6, 5, 6, 22, 31, 117);
    const ids = new MsgIdGenerator('0A1B2C3D', 0x2a9f);
    const [a, b] = [ids.next(at), ids.next(at)];
    expect(a).toMatch(/^0A1B2C3D2A9F18B4AAC2[0-9A-F]{12}$/);
    expect(parseInt(a!.slice(20, 28), 16)).toBe(at - Date.UTC(2020, 6, 1));
    expect(a).not.toBe(b);
  });
});

/** The reason `parseEnvelope` gives for an envelope, or `undefined` when it accepts it. */
function refusal(envelope: unknown): InvalidEnvelopeError | undefined {
  try {
    parseEnvelope(JSON.stringify(envelope));
    return undefined;
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return error;
    throw error;
  }
}

const withData = (fields: Record<string, unknown>) => ({ ...cloudEvent, data: { ...data, ...fields } });
/** Properties as RocketMQ's commit log encodes them, computed here independently of the parser. */
const encodedBytes = (properties: Record<string, string>) =>
  Object.entries(properties).reduce((n, [name, value]) => n + Buffer.byteLength(`${name}\u0001${value}\u0002`), 0);

describe('envelope limits', () => {
  it.each([
    [
      'a topic of 128 characters',
      withData({ topic: 'T'.repeat(128) }),
      /^invalid RocketMQ envelope: data\.topic: Too big: expected string to have <=127 characters$/,
    ],
    [
      'a topic with a dot',
      withData({ topic: 'ORDER.TOPIC' }),
      /data\.topic: topic may hold only %\|a-zA-Z0-9_- \(RocketMQ TopicValidator\)/,
    ],
    [
      'a 300,000-character tag',
      withData({ tags: 'P'.repeat(300_000), keys: [], systemProperties: {} }),
      /data: properties take 300006 bytes .*over the broker's 32767 \(largest: TAGS, 300006 bytes\)$/,
    ],
    [
      'a tag of 11,000 three-byte characters',
      withData({ tags: '积'.repeat(11_000), keys: [], systemProperties: {} }),
      /properties take 33006 bytes/,
    ],
    [
      'keys whose KEYS property is too long',
      withData({
        keys: Array.from({ length: 3_000 }, (_, i) => `SO${String(i).padStart(10, '0')}`),
        systemProperties: {},
      }),
      /properties take \d+ bytes.*\(largest: KEYS/,
    ],
    [
      'keys given as one string',
      withData({ keys: 'K'.repeat(40_000), systemProperties: {} }),
      /\(largest: KEYS, 40006 bytes\)/,
    ],
    [
      '2,000 small user properties',
      withData({
        userProperties: Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`p${i}`, 'v'.repeat(12)])),
      }),
      /properties take \d+ bytes/,
    ],
    [
      'a 300,000-character property name',
      withData({ userProperties: { ['n'.repeat(300_000)]: 'v' } }),
      /\(largest: "n{40}"… \(300000 characters\), 300003 bytes\)$/,
    ],
    [
      'an id of 257 characters',
      { ...cloudEvent, id: 'i'.repeat(257) },
      /^invalid RocketMQ envelope: id: Too big: expected string to have <=256 characters$/,
    ],
    [
      'a source of 257 characters',
      { ...cloudEvent, source: `rocketmq://${'c'.repeat(246)}` },
      /^invalid RocketMQ envelope: source: Too big/,
    ],
    ['a broker name of 257 characters', withData({ brokerName: 'b'.repeat(257) }), /data\.brokerName: Too big/],
  ])('refuses %s', (_name, envelope, reason) => {
    expect(refusal(envelope)?.message).toMatch(reason);
  });

  it('accepts RocketMQ’s own maximums: a 127-character topic, properties of exactly 32,767 bytes', () => {
    // Prepare: UNIQ_KEY plus a tag that fills the rest
    const unique = { UNIQ_KEY: data.msgId };
    const tags = 'P'.repeat(ENVELOPE_LIMITS.propertiesBytes - encodedBytes({ ...unique, TAGS: '' }));
    const envelope = withData({ topic: 'T'.repeat(127), tags, keys: [], systemProperties: { ...unique, TAGS: tags } });
    expect(encodedBytes({ ...unique, TAGS: tags })).toBe(32_767);
    // Act + Assess
    expect(refusal(envelope)).toBeUndefined();
    expect(
      refusal(
        withData({
          topic: 'T'.repeat(127),
          tags: `${tags}P`,
          keys: [],
          systemProperties: { ...unique, TAGS: `${tags}P` },
        }),
      )?.message,
    ).toMatch(/properties take 32768 bytes/);
  });

  it('counts a tag and keys given only as fields, as RocketMQ holds them among the properties', () => {
    const full = ENVELOPE_LIMITS.propertiesBytes - encodedBytes({ KEYS: 'SO1 SO2' });
    const fits = withData({
      tags: 'P'.repeat(full - encodedBytes({ TAGS: '' })),
      keys: 'SO1 SO2',
      systemProperties: {},
    });
    expect(refusal(fits)).toBeUndefined();
    expect(
      refusal(
        withData({ tags: 'P'.repeat(full - encodedBytes({ TAGS: '' }) + 1), keys: 'SO1 SO2', systemProperties: {} }),
      ),
    ).toBeInstanceOf(InvalidEnvelopeError);
  });

  it('quotes at most a bounded, escaped excerpt of a hostile property name, and drops a malformed msgId', () => {
    // Prepare: a name with a terminal escape, a bidi override and a line separator, far too long, on an invalid value
    const name = `\u001b[2J\u202egnp.exe\u2028${'x'.repeat(10_000)}`;
    const envelope = withData({ msgId: 'm'.repeat(300_000), userProperties: { [name]: { nested: true } } });
    // Act
    const error = refusal(envelope)!;
    // Assess
    expect(error.message).toMatch(/^invalid RocketMQ envelope: data\.msgId: /);
    expect(error.msgId).toBeUndefined();
    const byName = refusal(withData({ userProperties: { [name]: { nested: true } } }))!;
    expect(byName.message).toContain('data.userProperties."\\u001b[2J\\u{202e}gnp.exe\\u{2028}xxx');
    expect(byName.message).toContain('… (10013 characters)');
    expect(byName.message.length).toBeLessThan(160);
    expect(byName.message).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}]/u);
    expect(byName.msgId).toBe(data.msgId);
  });

  it('prints short, plain property names as they are and quotes others whole', () => {
    expect(refusal(withData({ userProperties: { traceId: { nested: true } } }))?.message).toContain(
      'data.userProperties.traceId: ',
    );
    expect(refusal(withData({ userProperties: { 'trace.id': [] } }))?.message).toContain(
      'data.userProperties."trace.id": ',
    );
    expect(excerpt('a\u0085b\u{e0001}')).toBe('"a\\u{85}b\\u{e0001}"');
  });
});

describe('docs/envelope.schema.json', () => {
  it('is the schema the parser enforces (regenerate with `npm run schema`)', async () => {
    const { readFileSync } = await import('node:fs');
    const { renderSchema, SCHEMA_PATH } = await import('@rocketmq-lambda/tools/schema/envelope-schema.ts');
    expect(readFileSync(SCHEMA_PATH, 'utf8')).toBe(renderSchema());
  });
});
