import { Message, type Producer as Producer4 } from 'ali-ons';
import { Producer as Producer5 } from 'rocketmq-client-nodejs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RocketMQMessageLookup, sha256 } from '../../lib/operations/rocketmq-message-lookup.ts';
import { MsgIdGenerator } from '../../lib/rocketmq/index.ts';
import { type LocalRocketMQ, startLocalRocketMQ } from '../../scripts/rocketmq/local-rocketmq.ts';
import { type LocalRocketMQ4, startLocalRocketMQ4 } from '../../scripts/rocketmq/local-rocketmq-4.ts';
import { orderServiceProducer } from './support/rocketmq4-producer.ts';

/**
 * `ops dlq resign`'s proof that a letter is genuine: the message it carries is stored in RocketMQ
 * with the same body. Looked up by msgId through the name servers, on a real 4.7.1 broker and on
 * the broker a 5.5.0 proxy embeds in local mode.
 */
const ORDER_TOPIC = 'ORDER_TOPIC';
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const body = (orderNo: string) => JSON.stringify({ orderNo, userId: '88372', points: 300 });

/** The broker's index is written a moment after the message: looks up until something is found. */
async function lookedUp(lookup: RocketMQMessageLookup, msgId: string) {
  for (let i = 0; i < 50; i++) {
    const found = await lookup.byMsgId(ORDER_TOPIC, msgId);
    if (found.length > 0) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return [];
}

describe('looking a message up by msgId on RocketMQ 4.7.1 (remoting)', () => {
  let rocketMq: LocalRocketMQ4 | undefined;
  let producer: Producer4 | undefined;
  let lookup: RocketMQMessageLookup | undefined;
  const ids = new MsgIdGenerator('7F000001', 0x4711);

  beforeAll(async () => {
    rocketMq = await startLocalRocketMQ4({ topics: [{ name: ORDER_TOPIC, queues: 4 }] });
    producer = await orderServiceProducer(rocketMq.namesrvAddr);
    lookup = await RocketMQMessageLookup.open({ nameServer: rocketMq.namesrvAddr });
  });

  afterAll(async () => {
    await lookup?.close();
    await producer?.close();
    await rocketMq?.stop();
  });

  it("finds a message by the producer's UNIQ_KEY, with its body's hash and store time", async () => {
    const message = new Message(ORDER_TOPIC, 'PAID', body('SO-LOOKUP-1'));
    message.properties.UNIQ_KEY = ids.next();
    const before = Date.now();
    const sent = await producer!.send(message);
    const found = await lookedUp(lookup!, message.properties.UNIQ_KEY);
    expect(found).toEqual([
      {
        topic: ORDER_TOPIC,
        msgId: message.properties.UNIQ_KEY,
        offsetMsgId: sent.msgId,
        storeTimestamp: expect.any(Number),
        bodySha256: sha256(Buffer.from(body('SO-LOOKUP-1'))),
        broker: rocketMq!.brokerAddr,
      },
    ]);
    expect(found[0]!.storeTimestamp).toBeGreaterThanOrEqual(before - 1_000);
  });

  it('finds one a producer sent without UNIQ_KEY by its offset msgId, what a 4.x consumer reports', async () => {
    const sent = await producer!.send(new Message(ORDER_TOPIC, 'PAID', body('SO-LOOKUP-2')));
    expect(await lookup!.byMsgId(ORDER_TOPIC, sent.msgId)).toEqual([
      expect.objectContaining({ offsetMsgId: sent.msgId, bodySha256: sha256(Buffer.from(body('SO-LOOKUP-2'))) }),
    ]);
  });

  it("finds nothing for an id never sent, nor at an address that is not one of the cluster's brokers", async () => {
    expect(await lookup!.byMsgId(ORDER_TOPIC, ids.next())).toEqual([]);
    // An offset msgId naming 10.0.0.1:10911: never contacted, as no route names it.
    expect(await lookup!.byMsgId(ORDER_TOPIC, '0A00000100002A9F0000000000000000')).toEqual([]);
  });
});

describe('looking a message up by msgId on RocketMQ 5.5.0 (the broker the local proxy embeds)', () => {
  let rocketMq: LocalRocketMQ | undefined;
  let lookup: RocketMQMessageLookup | undefined;

  beforeAll(async () => {
    rocketMq = await startLocalRocketMQ({ topics: [{ name: ORDER_TOPIC }] });
    lookup = await RocketMQMessageLookup.open({ nameServer: rocketMq.namesrvAddr });
  });

  afterAll(async () => {
    await lookup?.close();
    await rocketMq?.stop();
  });

  it('finds a message a 5.x client sent through the proxy, by the message id the client got', async () => {
    const producer = new Producer5({ endpoints: rocketMq!.proxyEndpoint, namespace: '', logger: SILENT });
    await producer.startup();
    let messageId: string;
    try {
      messageId = (
        await producer.send({
          topic: ORDER_TOPIC,
          tag: 'PAID',
          keys: ['SO-LOOKUP-5'],
          body: Buffer.from(body('SO-LOOKUP-5')),
        })
      ).messageId;
    } finally {
      await producer.shutdown();
    }
    expect(await lookedUp(lookup!, messageId)).toEqual([
      expect.objectContaining({
        topic: ORDER_TOPIC,
        msgId: messageId,
        bodySha256: sha256(Buffer.from(body('SO-LOOKUP-5'))),
      }),
    ]);
  });
});
