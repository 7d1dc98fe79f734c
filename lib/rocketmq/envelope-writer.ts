import { ROCKETMQ_EVENT_TYPE } from './envelope.ts';

/** The fields needed to write an envelope; everything else is optional, as on the wire. */
export interface EnvelopeFields {
  topic: string;
  msgId: string;
  body: string;
  tags?: string;
  keys?: string[];
  reconsumeTimes?: number;
  bornTimestamp?: number;
  cluster?: string;
  queueId?: number;
  queueOffset?: number;
  brokerName?: string;
  userProperties?: Record<string, string>;
}

/** Writes the bridge envelope (CloudEvents 1.0, `mq:Topic:SendMessage`) for one RocketMQ message. */
export function writeEnvelope(fields: EnvelopeFields): string {
  const born = fields.bornTimestamp ?? Date.now();
  const systemProperties: Record<string, string> = { UNIQ_KEY: fields.msgId };
  if (fields.keys?.length) systemProperties.KEYS = fields.keys.join(' ');
  if (fields.tags) systemProperties.TAGS = fields.tags;
  return JSON.stringify({
    specversion: '1.0',
    id: fields.msgId,
    source: `rocketmq://${fields.cluster ?? 'DefaultCluster'}`,
    type: ROCKETMQ_EVENT_TYPE,
    subject: fields.topic,
    time: new Date(born).toISOString(),
    datacontenttype: 'application/json',
    data: {
      topic: fields.topic,
      msgId: fields.msgId,
      ...(fields.tags ? { tags: fields.tags } : {}),
      keys: fields.keys ?? [],
      ...(fields.queueId !== undefined ? { queueId: fields.queueId } : {}),
      ...(fields.queueOffset !== undefined ? { queueOffset: fields.queueOffset } : {}),
      ...(fields.brokerName ? { brokerName: fields.brokerName } : {}),
      bornTimestamp: born,
      reconsumeTimes: fields.reconsumeTimes ?? 0,
      systemProperties,
      userProperties: fields.userProperties ?? {},
      bodyEncoding: 'utf8',
      body: fields.body,
    },
  });
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
    const hex = (n: number, bytes: number) => (n >>> 0).toString(16).toUpperCase().padStart(bytes * 2, '0').slice(-bytes * 2);
    this.counter = (this.counter + 1) & 0xffff;
    return this.ip + hex(this.pid, 2) + '18B4AAC2' + hex(at - monthStart, 4) + hex(this.counter, 2);
  }
}
