import { describe, expect, it } from 'vitest';
import { parseEnvelope } from '../../../lib/rocketmq/envelope.ts';
import { MsgIdGenerator, writeEnvelope } from '../../../lib/rocketmq/envelope-writer.ts';

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
    expect(wire).toMatchObject({ source: 'rocketmq://prod-cluster', subject: 'ORDER_TOPIC', time: '2020-07-05T06:22:31.117Z', id: MSG_ID });
    expect(wire.data).toMatchObject({ queueId: 0, queueOffset: 0, brokerName: 'broker-a', systemProperties: { UNIQ_KEY: MSG_ID, KEYS: 'SO1 U7', TAGS: 'PAID' } });
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
