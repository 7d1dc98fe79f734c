import { describe, expect, it } from 'vitest';
import { ENVELOPE_LIMITS, InvalidEnvelopeError, parseEnvelope } from '../../../src/rocketmq/envelope.ts';
import {
  buildEnvelope,
  MsgIdGenerator,
  serializeEnvelope,
  writeEnvelope,
} from '../../../src/rocketmq/envelope-writer.ts';

const MSG_ID = '0A1B2C3D2A9F18B4AAC2000000010001';

describe('writeEnvelope', () => {
  it('writes every field it is given, and the parser reads each back', () => {
    // Act
    const text = writeEnvelope({
      topic: 'ORDER_TOPIC',
      msgId: MSG_ID,
      body: '{"orderNo":"SO1"}',
      tags: 'PAID',
      keys: ['SO1', 'U7'],
      reconsumeTimes: 3,
      bornTimestamp: Date.UTC(2020, 6, 5, 6, 22, 31, 117),
      cluster: 'prod-cluster',
      queueId: 0,
      queueOffset: 0,
      brokerName: 'broker-a',
      userProperties: { traceId: 't-1' },
    });
    // Assess: the wire form (queue 0 and offset 0 are values, not absences) …
    const wire = JSON.parse(text);
    expect(wire).toMatchObject({
      source: 'rocketmq://prod-cluster',
      subject: 'ORDER_TOPIC',
      time: '2020-07-05T06:22:31.117Z',
      id: MSG_ID,
    });
    expect(wire.data).toMatchObject({
      queueId: 0,
      queueOffset: 0,
      brokerName: 'broker-a',
      systemProperties: { UNIQ_KEY: MSG_ID, KEYS: 'SO1 U7', TAGS: 'PAID' },
    });
    // … and what a consumer sees
    expect(parseEnvelope(text)).toMatchObject({
      msgId: MSG_ID,
      topic: 'ORDER_TOPIC',
      tags: 'PAID',
      keys: ['SO1', 'U7'],
      reconsumeTimes: 3,
      queueId: 0,
      queueOffset: 0,
      brokerName: 'broker-a',
      bornTimestamp: Date.UTC(2020, 6, 5, 6, 22, 31, 117),
      source: 'rocketmq://prod-cluster',
      userProperties: { traceId: 't-1' },
      body: '{"orderNo":"SO1"}',
    });
  });

  it('leaves out what it is not given: no tag, no keys, no queue position, born now on the default cluster', () => {
    // Prepare
    const before = Date.now();
    // Act
    const wire = JSON.parse(writeEnvelope({ topic: 'ORDER_TOPIC', msgId: MSG_ID, body: 'x', keys: [] }));
    // Assess
    expect(wire.source).toBe('rocketmq://DefaultCluster');
    for (const absent of ['tags', 'queueId', 'queueOffset', 'brokerName']) expect(wire.data).not.toHaveProperty(absent);
    expect(wire.data.systemProperties).toEqual({ UNIQ_KEY: MSG_ID });
    expect(wire.data).toMatchObject({ keys: [], reconsumeTimes: 0, userProperties: {}, bodyEncoding: 'utf8' });
    expect(wire.data.bornTimestamp).toBeGreaterThanOrEqual(before);
    expect(parseEnvelope(JSON.stringify(wire))).toMatchObject({ tags: undefined, keys: [], reconsumeTimes: 0 });
  });
});

describe('writeEnvelope: what the bridge adds', () => {
  it('keeps the broker’s positions, hosts, store time and FIFO message group', () => {
    // Act
    const envelope = buildEnvelope({
      topic: 'ORDER_TOPIC',
      msgId: MSG_ID,
      body: 'x',
      bornTimestamp: 1_000,
      storeTimestamp: 2_000,
      offsetMsgId: '0A1B2C4600002A9F0000000000012E45',
      bornHost: '10.27.44.61:53211',
      storeHost: '10.27.44.70:10911',
      messageGroup: 'user-88372',
    });
    // Assess: the event's time is the store time; the group is RocketMQ 4's sharding key
    expect(envelope.time).toBe(new Date(2_000).toISOString());
    expect(envelope.data).toMatchObject({
      bornTimestamp: 1_000,
      storeTimestamp: 2_000,
      bornHost: '10.27.44.61:53211',
      storeHost: '10.27.44.70:10911',
    });
    expect(envelope.data.systemProperties).toEqual({ UNIQ_KEY: MSG_ID, __SHARDINGKEY: 'user-88372' });
    expect(parseEnvelope(serializeEnvelope(envelope))).toMatchObject({
      offsetMsgId: '0A1B2C4600002A9F0000000000012E45',
      storeTimestamp: 2_000,
      bornHost: '10.27.44.61:53211',
    });
  });

  it('leaves out empty broker and host names, and takes the clock it is given for the birth time', () => {
    const envelope = buildEnvelope(
      { topic: 'T', msgId: MSG_ID, body: 'x', brokerName: '', bornHost: '', storeHost: '' },
      () => 42_000,
    );
    for (const absent of ['brokerName', 'bornHost', 'storeHost', 'storeTimestamp', 'offsetMsgId'])
      expect(envelope.data).not.toHaveProperty(absent);
    expect(envelope.data.bornTimestamp).toBe(42_000);
    expect(envelope.time).toBe(new Date(42_000).toISOString());
  });

  it('carries a byte body that is UTF-8 as text, and any other bytes as base64 that decode to the same bytes', () => {
    // Prepare
    const text = new TextEncoder().encode('{"note":"积分 ✓"}');
    const binary = new Uint8Array([0xff, 0xfe, 0x00, 0x41]);
    // Act
    const [asText, asBase64] = [
      buildEnvelope({ topic: 'T', msgId: MSG_ID, body: text }),
      buildEnvelope({ topic: 'T', msgId: MSG_ID, body: binary }),
    ];
    // Assess
    expect(asText.data).toMatchObject({ bodyEncoding: 'utf8', body: '{"note":"积分 ✓"}' });
    expect(asBase64.data).toMatchObject({ bodyEncoding: 'base64', body: Buffer.from(binary).toString('base64') });
    expect([...Buffer.from(asBase64.data.body, 'base64')]).toEqual([...binary]);
  });

  it('keeps a UTF-8 byte-order mark at the start of a body, so the consumer gets the producer’s bytes back', () => {
    // Prepare: what a Java producer sends for "\uFEFF{…}".getBytes(UTF_8), and a body that is nothing but the mark.
    const bom = [0xef, 0xbb, 0xbf];
    const bodies = [new Uint8Array([...bom, ...Buffer.from('{"orderNo":"SO-BOM"}')]), new Uint8Array(bom)];
    for (const bytes of bodies) {
      // Act
      const text = writeEnvelope({ topic: 'T', msgId: MSG_ID, body: bytes });
      // Assess
      expect(JSON.parse(text).data).toMatchObject({ bodyEncoding: 'utf8' });
      expect(parseEnvelope(text).body.startsWith('\uFEFF')).toBe(true);
      expect([...Buffer.from(parseEnvelope(text).body, 'utf8')]).toEqual([...bytes]);
    }
  });

  it('escapes U+FFFE and U+FFFF, which SQS refuses in a body, so the parser reads the same text back', () => {
    // Act
    const text = writeEnvelope({ topic: 'T', msgId: MSG_ID, body: 'a\uFFFEb\uFFFFc' });
    // Assess
    expect(text).not.toMatch(/[\uFFFE\uFFFF]/);
    expect(text).toContain('a\\ufffeb\\uffffc');
    expect(parseEnvelope(text).body).toBe('a\uFFFEb\uFFFFc');
  });
});

/** What `act` threw, or `undefined` when it returned. */
function refusal(act: () => unknown): Error | undefined {
  try {
    act();
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

describe('writeEnvelope at RocketMQ’s limits', () => {
  /** UNIQ_KEY, KEYS and TAGS as the commit log encodes them, computed here independently of the parser. */
  const propertyBytes = (tags: string, keys: string) =>
    Buffer.byteLength(`UNIQ_KEY\u0001${MSG_ID}\u0002KEYS\u0001${keys}\u0002TAGS\u0001${tags}\u0002`);
  const fullTag = 'P'.repeat(ENVELOPE_LIMITS.propertiesBytes - propertyBytes('', 'SO1'));
  const atLimit = { topic: 'T'.repeat(127), msgId: MSG_ID, body: '{}', tags: fullTag, keys: ['SO1'] };

  it('writes a 127-character topic and properties of exactly 32,767 bytes, and the parser reads them back', () => {
    // Prepare
    expect(propertyBytes(fullTag, 'SO1')).toBe(32_767);
    // Act
    const text = writeEnvelope(atLimit);
    // Assess
    expect(parseEnvelope(text)).toMatchObject({ topic: atLimit.topic, tags: fullTag, keys: ['SO1'] });
  });

  const system = (tags: string) => ({ UNIQ_KEY: MSG_ID, KEYS: 'SO1', TAGS: tags });
  it.each([
    ['a topic one character too long', { topic: 'T'.repeat(128) }, { topic: 'T'.repeat(128) }],
    ['a topic RocketMQ would not name', { topic: 'ORDER.TOPIC' }, { topic: 'ORDER.TOPIC' }],
    [
      'properties one byte over',
      { tags: `${fullTag}P` },
      { tags: `${fullTag}P`, systemProperties: system(`${fullTag}P`) },
    ],
    [
      'user properties over the rest of the budget',
      { tags: 'PAID', userProperties: { trace: 'x'.repeat(32_767) } },
      { tags: 'PAID', systemProperties: system('PAID'), userProperties: { trace: 'x'.repeat(32_767) } },
    ],
  ])('refuses %s with the reason the parser gives for the same envelope', (_name, fields, sameOnTheWire) => {
    // Prepare: the envelope the writer would have built, written by hand, and the parser's verdict on it
    const wire = JSON.parse(writeEnvelope(atLimit));
    const byHand = JSON.stringify({ ...wire, data: { ...wire.data, ...sameOnTheWire } });
    const parsed = refusal(() => parseEnvelope(byHand));
    // Act
    const written = refusal(() => writeEnvelope({ ...atLimit, ...fields }));
    // Assess
    expect(parsed).toBeInstanceOf(InvalidEnvelopeError);
    expect(written).toBeInstanceOf(InvalidEnvelopeError);
    expect(written!.message).toBe(parsed!.message);
  });
});

describe('MsgIdGenerator', () => {
  it('wraps its counter at 16 bits and keeps the ids 32 hex characters long', () => {
    // Prepare
    const ids = new MsgIdGenerator();
    const at = Date.UTC(2026, 10, 30);
    // Act
    const all = Array.from({ length: 65_537 }, () => ids.next(at));
    // Assess: the 65,536th id wraps to counter 0000, the next is 0001 again
    expect(all[0]).toMatch(/^0A1B2C3D2A9F18B4AAC2[0-9A-F]{8}0001$/);
    expect(all[65_535]!.slice(-4)).toBe('0000');
    expect(all[65_536]).toBe(all[0]);
    expect(new Set(all.map((id) => id.length))).toEqual(new Set([32]));
  });

  it('reads the clock when it is given no time', () => {
    expect(new MsgIdGenerator().next()).toMatch(/^[0-9A-F]{32}$/);
  });
});
