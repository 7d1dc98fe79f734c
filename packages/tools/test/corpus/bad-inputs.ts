import { writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';

/**
 * What a real bridge or a careless producer can send to the points consumer, each with the
 * outcome it must get. `processed` cases are odd but valid; every other case is either
 * filtered by tag or dead-lettered with the named code. Nothing may crash the invocation.
 */
export type ExpectedOutcome =
  | 'processed'
  | 'filtered'
  | 'INVALID_ENVELOPE'
  | 'INVALID_PAYLOAD'
  | 'UNAUTHENTICATED_MESSAGE';

export interface CorpusCase {
  name: string;
  body: string;
  expected: ExpectedOutcome;
  /** A fragment the DLQ's failure-reason must contain. */
  reason?: RegExp;
}

let n = 0;
const msgId = () => `0A1B2C3D2A9F18B4AAC2000000${(++n).toString(16).toUpperCase().padStart(6, '0')}`;
const order = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({ orderNo: `SO-CORPUS-${n + 1}`, userId: 4242, points: 10, ...fields });
const envelope = (body: string, extra: Record<string, unknown> = {}) => {
  const json = JSON.parse(writeEnvelope({ topic: 'ORDER_TOPIC', msgId: msgId(), tags: 'PAID', body }));
  return JSON.stringify({ ...json, ...extra, data: { ...json.data, ...((extra.data as object) ?? {}) } });
};
const withData = (patch: Record<string, unknown>) => {
  const json = JSON.parse(envelope(order()));
  return JSON.stringify({ ...json, data: { ...json.data, ...patch } });
};
const without = (field: string) => {
  const json = JSON.parse(envelope(order()));
  delete json.data[field];
  return JSON.stringify(json);
};

export const CORPUS: CorpusCase[] = [
  {
    name: 'not JSON at all',
    body: 'PAID SO202007051422310088 88372 300',
    expected: 'INVALID_ENVELOPE',
    reason: /not JSON/,
  },
  { name: 'truncated JSON', body: envelope(order()).slice(0, 120), expected: 'INVALID_ENVELOPE', reason: /not JSON/ },
  { name: 'JSON null', body: 'null', expected: 'INVALID_ENVELOPE' },
  { name: 'JSON array', body: '[1,2,3]', expected: 'INVALID_ENVELOPE' },
  { name: 'empty object', body: '{}', expected: 'INVALID_ENVELOPE', reason: /specversion/ },
  {
    name: 'byte-order mark before the JSON',
    body: `\uFEFF${envelope(order())}`,
    expected: 'INVALID_ENVELOPE',
    reason: /not JSON/,
  },
  {
    name: 'wrong CloudEvent type',
    body: envelope(order(), { type: 'mq:Topic:Other' }),
    expected: 'INVALID_ENVELOPE',
    reason: /type/,
  },
  {
    name: 'wrong specversion',
    body: envelope(order(), { specversion: '0.3' }),
    expected: 'INVALID_ENVELOPE',
    reason: /specversion/,
  },
  { name: 'missing msgId', body: without('msgId'), expected: 'INVALID_ENVELOPE', reason: /msgId/ },
  {
    name: 'msgId not hex',
    body: withData({ msgId: 'ZZZZ2C3D2A9F18B4AAC2000000000001' }),
    expected: 'INVALID_ENVELOPE',
    reason: /hex/,
  },
  { name: 'msgId too short', body: withData({ msgId: '0A1B2C3D' }), expected: 'INVALID_ENVELOPE', reason: /msgId/ },
  { name: 'missing topic', body: without('topic'), expected: 'INVALID_ENVELOPE', reason: /topic/ },
  { name: 'empty topic', body: withData({ topic: '' }), expected: 'INVALID_ENVELOPE', reason: /topic/ },
  { name: 'missing body', body: without('body'), expected: 'INVALID_ENVELOPE', reason: /body/ },
  { name: 'body is a number', body: withData({ body: 300 }), expected: 'INVALID_ENVELOPE', reason: /body/ },
  {
    name: 'base64 that is not base64',
    body: withData({ bodyEncoding: 'base64', body: '%%%not-base64%%%' }),
    expected: 'INVALID_ENVELOPE',
    reason: /base64/,
  },
  {
    name: 'base64 of bytes that are not UTF-8',
    body: withData({ bodyEncoding: 'base64', body: Buffer.from([0xc3, 0x28, 0xa0]).toString('base64') }),
    expected: 'INVALID_ENVELOPE',
    reason: /UTF-8/,
  },
  {
    name: 'a 300,000-character tag',
    body: withData({ tags: 'PAID'.repeat(75_000), systemProperties: {} }),
    expected: 'INVALID_ENVELOPE',
    reason: /properties take 300006 bytes .*over the broker's 32767 \(largest: TAGS/,
  },
  {
    name: 'a topic RocketMQ cannot name',
    body: withData({ topic: `ORDER.${'T'.repeat(200)}` }),
    expected: 'INVALID_ENVELOPE',
    reason: /topic/,
  },
  {
    name: 'negative reconsumeTimes',
    body: withData({ reconsumeTimes: -1 }),
    expected: 'INVALID_ENVELOPE',
    reason: /reconsumeTimes/,
  },
  {
    name: 'EventBridge wrapper around garbage',
    body: JSON.stringify({ version: '0', 'detail-type': 'mq:Topic:SendMessage', detail: 'garbage' }),
    // No envelope, so nowhere a signature could be: refused before it is parsed.
    expected: 'UNAUTHENTICATED_MESSAGE',
    reason: /the envelope is not signed/,
  },
  {
    name: 'EventBridge wrapper around a valid envelope',
    body: JSON.stringify({
      version: '0',
      'detail-type': 'mq:Topic:SendMessage',
      source: 'rocketmq.bridge',
      detail: JSON.parse(envelope(order())),
    }),
    expected: 'processed',
  },
  {
    name: 'body of a different event (a refund)',
    body: envelope(JSON.stringify({ refundNo: 'RF1', amount: 5 })),
    expected: 'INVALID_PAYLOAD',
    reason: /orderNo/,
  },
  {
    name: 'body is not JSON',
    body: envelope('orderNo=SO1&points=300'),
    expected: 'INVALID_PAYLOAD',
    reason: /not JSON/,
  },
  { name: 'body is a JSON string', body: envelope('"SO202007051422310088"'), expected: 'INVALID_PAYLOAD' },
  {
    name: 'negative points',
    body: envelope(order({ points: -300 })),
    expected: 'INVALID_PAYLOAD',
    reason: /must not be negative/,
  },
  { name: 'huge points', body: envelope(order({ points: 1e12 })), expected: 'INVALID_PAYLOAD', reason: /above/ },
  {
    name: 'fractional points',
    body: envelope(order({ points: 1.5 })),
    expected: 'INVALID_PAYLOAD',
    reason: /whole number/,
  },
  {
    name: 'points as a string',
    body: envelope(order({ points: '300' })),
    expected: 'INVALID_PAYLOAD',
    reason: /points/,
  },
  {
    name: 'points missing',
    body: envelope(order({ points: undefined })),
    expected: 'INVALID_PAYLOAD',
    reason: /points/,
  },
  {
    name: 'empty userId',
    body: envelope(order({ userId: '' })),
    expected: 'INVALID_PAYLOAD',
    reason: /userId is empty/,
  },
  {
    name: 'absurdly long userId',
    body: envelope(order({ userId: 'u'.repeat(10_000) })),
    expected: 'INVALID_PAYLOAD',
    reason: /userId is longer/,
  },
  {
    name: 'negative numeric userId',
    body: envelope(order({ userId: -1 })),
    expected: 'INVALID_PAYLOAD',
    reason: /userId/,
  },
  {
    name: 'empty orderNo',
    body: envelope(order({ orderNo: '' })),
    expected: 'INVALID_PAYLOAD',
    reason: /orderNo is empty/,
  },
  {
    name: 'absurdly long orderNo',
    body: envelope(order({ orderNo: 'SO'.repeat(5_000) })),
    expected: 'INVALID_PAYLOAD',
    reason: /orderNo is longer/,
  },
  {
    name: 'orderNo with an emoji',
    body: envelope(order({ orderNo: 'SO-🎉-1' })),
    expected: 'INVALID_PAYLOAD',
    reason: /printable ASCII/,
  },
  {
    name: 'userId with a zero-width space',
    body: envelope(order({ userId: '88\u200B372' })),
    expected: 'INVALID_PAYLOAD',
    reason: /printable ASCII/,
  },
  {
    name: 'paidAt that is not a timestamp',
    body: envelope(order({ paidAt: 'yesterday' })),
    expected: 'INVALID_PAYLOAD',
    reason: /paidAt/,
  },
  {
    name: 'unknown tag',
    body: JSON.stringify({
      ...JSON.parse(envelope(order())),
      data: { ...JSON.parse(envelope(order())).data, tags: 'REFUNDED', systemProperties: {} },
    }),
    expected: 'filtered',
  },
  {
    name: 'no tag at all',
    body: JSON.stringify({
      ...JSON.parse(envelope(order())),
      data: { ...JSON.parse(envelope(order())).data, tags: undefined, systemProperties: {} },
    }),
    expected: 'filtered',
  },
  { name: 'duplicated keys', body: withData({ keys: ['SO-K', 'SO-K', ' SO-K '] }), expected: 'processed' },
  {
    name: 'unknown extra fields (forward compatible)',
    body: withData({ futureField: { a: 1 }, systemProperties: { UNIQ_KEY: 'x', NEW_PROP: 7 } }),
    expected: 'processed',
  },
  {
    name: 'Chinese text and a lone surrogate in an extra body field',
    body: envelope(order({ note: '积分到账 \uD800 ✓' })),
    expected: 'processed',
  },
  { name: 'a 250 KB body', body: envelope(order({ padding: 'x'.repeat(250_000) })), expected: 'processed' },
];
