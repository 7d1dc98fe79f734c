import { createHash } from 'node:crypto';
import { type Message, Producer, type SendResult } from 'ali-ons';

const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const NO_ADDRESS_SERVER = { request: () => Promise.reject(new Error('name server given')) };

/**
 * The order service's producer on a RocketMQ 4 cluster (ali-ons), ready to send. Sends fail while
 * the broker (the master) is down; the caller sees each failure as a rejected send.
 */
export async function orderServiceProducer(namesrvAddr: string): Promise<Producer> {
  const producer = new Producer({
    nameSrv: namesrvAddr,
    httpclient: NO_ADDRESS_SERVER,
    producerGroup: 'order-service',
    logger: SILENT,
    sendMsgTimeout: 2_000,
  });
  producer.on('error', () => undefined);
  await producer.ready();
  return producer;
}

/**
 * An ordered producer: every message of an order on the queue its order number selects (Java's
 * `MessageQueueSelector`). ali-ons' own sharding-key selection does not do it (observed: one
 * order's events on queues 1 and 3), so the queue is chosen here and the message sent to it.
 */
export async function sendOrdered(producer: Producer, message: Message, orderNo: string): Promise<SendResult> {
  type Queue = { brokerName: string; queueId: number };
  const internals = producer as unknown as {
    tryToFindTopicPublishInfo(topic: string): Promise<{ messageQueueList: Queue[] }>;
    sendKernelImpl(msg: Message, mq: Queue): Promise<SendResult>;
  };
  const queues = [...(await internals.tryToFindTopicPublishInfo(message.topic)).messageQueueList].sort(
    (a, b) => a.queueId - b.queueId,
  );
  const selected = queues[createHash('md5').update(orderNo).digest().readUInt32BE() % queues.length]!;
  return internals.sendKernelImpl(message, selected);
}
