import { checkEnvelope, type Envelope, ROCKETMQ_EVENT_TYPE, ROCKETMQ5_TRACE_CONTEXT_PROPERTY } from './envelope.ts';

export type { Envelope };

/**
 * What RocketMQ says about one message, as the bridge (either protocol), the local run and the
 * tests know it. Absent optional fields are left out of the envelope, as on the wire.
 */
export interface EnvelopeFields {
  topic: string;
  /** `UNIQ_KEY` when the producer set one, else the offset id (RocketMQ 4) or the 5.x message id. */
  msgId: string;
  /** Text, or bytes: bytes that are not valid UTF-8 travel as base64. */
  body: string | Uint8Array;
  tags?: string;
  keys?: readonly string[];
  reconsumeTimes?: number;
  /** Default: now (the local run and tests); the bridge always has the broker's value. */
  bornTimestamp?: number;
  storeTimestamp?: number;
  /** When the producer asked RocketMQ to deliver the message (a delay or timed message), epoch milliseconds. */
  deliveryTimestamp?: number;
  /** RocketMQ 4's delay level the broker held the message back on. */
  delayTimeLevel?: number;
  /** Names the source: `rocketmq://<cluster>`. */
  cluster?: string;
  queueId?: number;
  queueOffset?: number;
  brokerName?: string;
  /**
   * RocketMQ 4's remoting protocol only: the RocketMQ 5 proxy does not send the commit-log offset it is derived from.
   */
  offsetMsgId?: string;
  bornHost?: string;
  storeHost?: string;
  /** RocketMQ 5 FIFO message group (`__SHARDINGKEY` in 4.x terms). */
  messageGroup?: string;
  userProperties?: Readonly<Record<string, string>>;
  /** RocketMQ 5 only: the message's trace-context system property (the producer's `traceparent`). */
  traceContext?: string;
  /**
   * The W3C context of the hop writing the envelope (the bridge's forward span), as the CloudEvents
   * distributed-tracing attributes; the producer's own context stays in the message's properties.
   */
  traceparent?: string;
  tracestate?: string;
}

/**
 * `ignoreBOM`: a decoder otherwise swallows a leading byte-order mark, and the body would lose
 * three bytes the producer sent (a Java producer's `"\uFEFF…".getBytes(UTF_8)`).
 */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The envelope of one RocketMQ message: a CloudEvents 1.0 object of type `mq:Topic:SendMessage`
 * whose `data` keeps everything RocketMQ said about it. The one writer of the project: the
 * bridge, the local run and the tests all build envelopes here; `parseEnvelope` reads them.
 * Throws the parser's own `InvalidEnvelopeError` rather than build what it would refuse (a topic
 * or properties over RocketMQ's limits, which a broker never stores anyway).
 */
export function buildEnvelope(fields: EnvelopeFields, now: () => number = Date.now): Envelope {
  const born = fields.bornTimestamp ?? now();
  const envelope: Envelope = {
    specversion: '1.0',
    id: fields.msgId,
    source: `rocketmq://${fields.cluster ?? 'DefaultCluster'}`,
    type: ROCKETMQ_EVENT_TYPE,
    subject: fields.topic,
    time: new Date(fields.storeTimestamp ?? born).toISOString(),
    datacontenttype: 'application/json',
    ...optional('traceparent', fields.traceparent),
    ...optional('tracestate', fields.tracestate || undefined),
    data: {
      topic: fields.topic,
      msgId: fields.msgId,
      ...optional('offsetMsgId', fields.offsetMsgId),
      ...optional('tags', fields.tags),
      keys: [...(fields.keys ?? [])],
      ...optional('queueId', fields.queueId),
      ...optional('queueOffset', fields.queueOffset),
      ...optional('brokerName', fields.brokerName || undefined),
      bornTimestamp: born,
      ...optional('storeTimestamp', fields.storeTimestamp),
      ...optional('deliveryTimestamp', fields.deliveryTimestamp),
      ...optional('delayTimeLevel', fields.delayTimeLevel),
      ...optional('bornHost', fields.bornHost || undefined),
      ...optional('storeHost', fields.storeHost || undefined),
      reconsumeTimes: fields.reconsumeTimes ?? 0,
      systemProperties: systemPropertiesOf(fields),
      userProperties: { ...fields.userProperties },
      ...encodeBody(fields.body),
    },
  };
  checkEnvelope(envelope);
  return envelope;
}

/**
 * SQS refuses a body containing characters outside XML's set (#x9 #xA #xD #x20–#xD7FF
 * #xE000–#xFFFD #x10000–#x10FFFF). JSON.stringify already escapes control characters and lone
 * surrogates; U+FFFE and U+FFFF are valid UTF-8 a producer may send, so they are escaped too.
 */
export function serializeEnvelope(envelope: Envelope | object): string {
  return JSON.stringify(envelope).replace(/[\uFFFE\uFFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/** `buildEnvelope` as the SQS body it becomes. */
export function writeEnvelope(fields: EnvelopeFields): string {
  return serializeEnvelope(buildEnvelope(fields));
}

/** The RocketMQ 4 property names consumers written against Alibaba's event shape look for. */
function systemPropertiesOf(fields: EnvelopeFields): Record<string, string> {
  return {
    UNIQ_KEY: fields.msgId,
    ...(fields.keys?.length ? { KEYS: fields.keys.join(' ') } : {}),
    ...(fields.tags ? { TAGS: fields.tags } : {}),
    ...(fields.messageGroup !== undefined ? { __SHARDINGKEY: fields.messageGroup } : {}),
    ...(fields.traceContext ? { [ROCKETMQ5_TRACE_CONTEXT_PROPERTY]: fields.traceContext } : {}),
  };
}

/** Text stays readable in the queue; bytes that are not valid UTF-8 survive byte for byte as base64. */
function encodeBody(body: string | Uint8Array): { bodyEncoding: 'utf8' | 'base64'; body: string } {
  if (typeof body === 'string') return { bodyEncoding: 'utf8', body };
  try {
    return { bodyEncoding: 'utf8', body: strictUtf8.decode(body) };
  } catch {
    return { bodyEncoding: 'base64', body: Buffer.from(body).toString('base64') };
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Producer-side msgIds in RocketMQ's layout (UNIQ_KEY): IPv4 (4 bytes) + pid (2) +
 * class-loader hash (4) + milliseconds since the start of the month (4) + counter (2),
 * as 32 upper-case hex characters. Used by the local run and tests to make realistic ids.
 */
export class MsgIdGenerator {
  private counter = 0;
  constructor(
    private readonly ip = '0A1B2C3D',
    private readonly pid = 0x2a9f,
  ) {}

  next(at = Date.now()): string {
    const date = new Date(at);
    const monthStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    const hex = (n: number, bytes: number) =>
      (n >>> 0)
        .toString(16)
        .toUpperCase()
        .padStart(bytes * 2, '0')
        .slice(-bytes * 2);
    this.counter = (this.counter + 1) & 0xffff;
    return `${this.ip + hex(this.pid, 2)}18B4AAC2${hex(at - monthStart, 4)}${hex(this.counter, 2)}`;
  }
}
