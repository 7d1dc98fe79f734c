import { randomBytes } from 'node:crypto';
import type { ReceivedMessage } from '../../src/types.ts';

/** A RocketMQ 5 style msgId: 17 bytes, version byte 01, upper-case hex. */
export function rocketMq5MsgId(): string {
  return `01${randomBytes(16).toString('hex').toUpperCase()}`;
}

let offset = 0;
/** A message as `RouteConsumer` hands it over, for tests of the forwarding step without a broker. */
export function receivedMessage(overrides: Partial<ReceivedMessage> = {}): ReceivedMessage {
  const now = Date.now();
  return {
    handle: undefined as never,
    msgId: rocketMq5MsgId(),
    topic: 'ORDER_TOPIC',
    tag: 'PAID',
    keys: ['SO1'],
    messageGroup: undefined,
    body: Buffer.from(JSON.stringify({ orderNo: 'SO1', userId: 'u1', points: 10 })),
    userProperties: {},
    bornHost: '10.0.0.1',
    bornTimestamp: now - 5,
    storeHost: '127.0.0.1:10911',
    storeTimestamp: now - 3,
    queueId: 0,
    queueOffset: offset++,
    brokerName: 'broker-a',
    reconsumeTimes: 0,
    ...overrides,
  };
}
