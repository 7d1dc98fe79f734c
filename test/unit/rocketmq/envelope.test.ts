import { describe, expect, it } from 'vitest';
import { InvalidEnvelopeError, parseEnvelope } from '../../../lib/rocketmq/envelope.ts';
import { MsgIdGenerator, writeEnvelope } from '../../../lib/rocketmq/envelope-writer.ts';

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
    const wrapped = { version: '0', id: 'e1', 'detail-type': 'mq:Topic:SendMessage', source: 'rocketmq.bridge', detail: cloudEvent };
    expect(parseEnvelope(JSON.stringify(wrapped))).toMatchObject({ msgId: data.msgId, source: 'rocketmq://prod-cluster', body: data.body });
  });

  it('accepts an EventBridge event whose detail is the data object', () => {
    const wrapped = { version: '0', id: 'e1', 'detail-type': 'mq:Topic:SendMessage', source: 'rocketmq.bridge', detail: data };
    const m = parseEnvelope(JSON.stringify(wrapped));
    expect(m).toMatchObject({ msgId: data.msgId, tags: 'PAID', keys: ['SO202007051422310088'] });
    expect(m.source).toBeUndefined();
  });

  it('decodes base64 bodies, including multi-byte UTF-8', () => {
    const body = '{"orderNo":"SO1","note":"积分 ✓"}';
    const event = { ...cloudEvent, data: { ...data, bodyEncoding: 'base64', body: Buffer.from(body).toString('base64') } };
    expect(parseEnvelope(JSON.stringify(event)).body).toBe(body);
  });

  it('rejects base64 that is not base64, and base64 that is not UTF-8', () => {
    const notBase64 = { ...cloudEvent, data: { ...data, bodyEncoding: 'base64', body: 'not base64!' } };
    expect(() => parseEnvelope(JSON.stringify(notBase64))).toThrow(/not valid base64/);
    const binary = { ...cloudEvent, data: { ...data, bodyEncoding: 'base64', body: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') } };
    expect(() => parseEnvelope(JSON.stringify(binary))).toThrow(/not UTF-8/);
  });

  it('takes keys from systemProperties.KEYS (space-separated) when data.keys is absent', () => {
    const { keys: _keys, ...rest } = data;
    const event = { ...cloudEvent, data: { ...rest, systemProperties: { ...data.systemProperties, KEYS: 'SO1  SO2 SO1' } } };
    expect(parseEnvelope(JSON.stringify(event)).keys).toEqual(['SO1', 'SO2']);
  });

  it('defaults optional fields: no tag, no keys, reconsumeTimes 0', () => {
    const minimal = { specversion: '1.0', id: 'x', type: 'mq:Topic:SendMessage', data: { topic: 'T', msgId: data.msgId, body: 'hello' } };
    const m = parseEnvelope(JSON.stringify(minimal));
    expect(m).toMatchObject({ tags: undefined, keys: [], reconsumeTimes: 0, body: 'hello', systemProperties: {}, userProperties: {} });
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
    ['msgId not hex', JSON.stringify({ ...cloudEvent, data: { ...data, msgId: 'hello-world-not-hex-at-all-00000' } }), /hex/],
    ['missing topic', JSON.stringify({ ...cloudEvent, data: { ...data, topic: undefined } }), /data\.topic/],
    ['missing body', JSON.stringify({ ...cloudEvent, data: { ...data, body: undefined } }), /data\.body/],
    ['numeric body', JSON.stringify({ ...cloudEvent, data: { ...data, body: 42 } }), /data\.body/],
    ['EventBridge wrapper around garbage', JSON.stringify({ 'detail-type': 'x', detail: 'garbage' }), /expected object/],
    ['negative queueOffset', JSON.stringify({ ...cloudEvent, data: { ...data, queueOffset: -1 } }), /queueOffset/],
  ])('rejects %s with a classified reason', (_name, body, reason) => {
    expect(() => parseEnvelope(body)).toThrow(InvalidEnvelopeError);
    expect(() => parseEnvelope(body)).toThrow(reason);
  });

  it('round-trips what the envelope writer produces', () => {
    const msgId = new MsgIdGenerator().next(Date.UTC(2020, 6, 5, 6, 22, 31, 117));
    const m = parseEnvelope(writeEnvelope({ topic: 'ORDER_TOPIC', msgId, tags: 'PAID', keys: ['SO1'], body: '{}', reconsumeTimes: 2 }));
    expect(m).toMatchObject({ msgId, topic: 'ORDER_TOPIC', tags: 'PAID', keys: ['SO1'], body: '{}', reconsumeTimes: 2 });
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

describe('docs/envelope.schema.json', () => {
  it('is the schema the parser enforces (regenerate with `npm run schema`)', async () => {
    const { readFileSync } = await import('node:fs');
    const { renderSchema, SCHEMA_PATH } = await import('../../../scripts/envelope-schema.ts');
    expect(readFileSync(SCHEMA_PATH, 'utf8')).toBe(renderSchema());
  });
});
