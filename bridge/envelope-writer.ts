import type { ReceivedMessage } from './route-consumer.ts';

/**
 * Writes the project's envelope: a CloudEvents 1.0 object of type `mq:Topic:SendMessage` whose
 * `data` keeps everything RocketMQ said about the message. The reader is `lib/rocketmq/envelope.ts`.
 *
 * `offsetMsgId` comes from RocketMQ 4's remoting protocol only: the RocketMQ 5 proxy does not send
 * the commit-log offset it is derived from.
 */
export const ENVELOPE_TYPE = 'mq:Topic:SendMessage';

export interface EnvelopeData {
  topic: string;
  msgId: string;
  offsetMsgId?: string;
  tags?: string;
  keys: string[];
  queueId: number;
  queueOffset?: number;
  brokerName?: string;
  bornTimestamp?: number;
  storeTimestamp?: number;
  bornHost?: string;
  storeHost?: string;
  reconsumeTimes: number;
  systemProperties: Record<string, string>;
  userProperties: Record<string, string>;
  bodyEncoding: 'utf8' | 'base64';
  body: string;
}

export interface Envelope {
  specversion: '1.0';
  id: string;
  source: string;
  type: typeof ENVELOPE_TYPE;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  data: EnvelopeData;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export function writeEnvelope(message: ReceivedMessage, clusterName: string, now: () => Date = () => new Date()): Envelope {
  const body = encodeBody(message.body);
  return {
    specversion: '1.0',
    id: message.msgId,
    source: `rocketmq://${clusterName}`,
    type: ENVELOPE_TYPE,
    subject: message.topic,
    time: new Date(message.storeTimestamp ?? message.bornTimestamp ?? now().getTime()).toISOString(),
    datacontenttype: 'application/json',
    data: {
      topic: message.topic,
      msgId: message.msgId,
      ...optional('offsetMsgId', message.offsetMsgId),
      ...(message.tag !== undefined ? { tags: message.tag } : {}),
      keys: [...message.keys],
      queueId: message.queueId,
      ...optional('queueOffset', message.queueOffset),
      ...optional('brokerName', message.brokerName),
      ...optional('bornTimestamp', message.bornTimestamp),
      ...optional('storeTimestamp', message.storeTimestamp),
      ...optional('bornHost', message.bornHost || undefined),
      ...optional('storeHost', message.storeHost),
      reconsumeTimes: Math.max(0, message.deliveryAttempt - 1),
      systemProperties: systemPropertiesOf(message),
      userProperties: { ...message.userProperties },
      ...body,
    },
  };
}

/**
 * SQS refuses a body containing characters outside XML's set (#x9 #xA #xD #x20–#xD7FF
 * #xE000–#xFFFD #x10000–#x10FFFF). JSON.stringify already escapes control characters and lone
 * surrogates; U+FFFE and U+FFFF are valid UTF-8 a producer may send, so they are escaped too.
 */
export function serializeEnvelope(envelope: Envelope): string {
  return JSON.stringify(envelope).replace(/[\uFFFE\uFFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/** The RocketMQ 4 property names consumers written against Alibaba's event shape look for. */
function systemPropertiesOf(message: ReceivedMessage): Record<string, string> {
  return {
    UNIQ_KEY: message.msgId,
    ...(message.keys.length > 0 ? { KEYS: message.keys.join(' ') } : {}),
    ...(message.tag !== undefined ? { TAGS: message.tag } : {}),
    ...(message.messageGroup !== undefined ? { __SHARDINGKEY: message.messageGroup } : {}),
  };
}

/** Text stays readable in the queue; anything that is not valid UTF-8 survives byte for byte as base64. */
function encodeBody(body: Buffer): Pick<EnvelopeData, 'bodyEncoding' | 'body'> {
  try {
    return { bodyEncoding: 'utf8', body: strictUtf8.decode(body) };
  } catch {
    return { bodyEncoding: 'base64', body: body.toString('base64') };
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
