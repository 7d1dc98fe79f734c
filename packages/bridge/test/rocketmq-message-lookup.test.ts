import { createHash } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RocketMQMessageLookup } from '@rocketmq-lambda/ops/operations/index.ts';
import { MsgIdGenerator, signEnvelope, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { Message, type Producer as Producer4 } from 'ali-ons';
import { Producer as Producer5 } from 'rocketmq-client-nodejs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The body hash the lookup reports, computed independently of it. */
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

import { compromisedDeployment } from '@rocketmq-lambda/ops/test/integration/operations/operations-fixture.ts';
import { remotingBridgeConfig } from './support/remoting-bridge-config.ts';
import { orderServiceProducer } from './support/rocketmq4-producer.ts';
import {
  type SharedRocketMQ4,
  type SharedRocketMQ5,
  sharedRocketMQ4,
  sharedRocketMQ5,
} from './support/shared-rocketmq.ts';

/**
 * `ops dlq resign`'s proof that a letter is genuine: the message it carries is stored in RocketMQ
 * with the same body. Looked up by msgId through the name servers, on a real 4.7.1 broker and on
 * the broker a 5.5.0 proxy embeds in local mode.
 */
const ORDER_TOPIC = 'ORDER_TOPIC';
const GROUP = ['--group', 'point-consumer-group'];
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const body = (orderNo: string) => JSON.stringify({ orderNo, userId: '88372', points: 300 });

/** The broker's index is written a moment after the message: looks up until something is found. */
async function lookedUp(lookup: RocketMQMessageLookup, msgId: string, topic = ORDER_TOPIC) {
  for (let i = 0; i < 50; i++) {
    const found = await lookup.byMsgId(topic, msgId);
    if (found.length > 0) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return [];
}

describe('looking a message up by msgId on RocketMQ 4.7.1 (remoting)', () => {
  let rocketMq: SharedRocketMQ4 | undefined;
  let producer: Producer4 | undefined;
  let lookup: RocketMQMessageLookup | undefined;
  const ids = new MsgIdGenerator('7F000001', 0x4711);

  beforeAll(async () => {
    rocketMq = await sharedRocketMQ4({ topics: [{ name: ORDER_TOPIC, queues: 4 }] });
    producer = await orderServiceProducer(rocketMq.namesrvAddr);
    lookup = await RocketMQMessageLookup.open({ nameServer: rocketMq.namesrvAddr });
  });

  afterAll(async () => {
    await lookup?.close();
    await producer?.close();
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

  it('proves a genuine dead letter for ops dlq resign, and leaves out forgeries made with the leaked key', async () => {
    // Prepare: a deployment whose key leaked; the order service's genuine message is stored in RocketMQ
    const { f, run, leaked, clock } = await compromisedDeployment();
    const genuine = new Message(ORDER_TOPIC, 'PAID', body('SO-STORED'));
    genuine.properties.UNIQ_KEY = ids.next();
    await producer!.send(genuine);
    const envelopeOf = (msgId: string, orderBody: string) =>
      JSON.stringify(
        signEnvelope(JSON.parse(writeEnvelope({ topic: ORDER_TOPIC, msgId, tags: 'PAID', body: orderBody })), leaked),
      );
    await f.send(envelopeOf(genuine.properties.UNIQ_KEY, body('SO-STORED')));
    const [before] = (await run(['keys', 'list', '--json'])).json().versions;
    await run(['keys', 'revoke', '--version', before.versionId, '--yes']);
    // The leaked key signs a raised copy of the stored message, and an order RocketMQ never saw
    await f.send(envelopeOf(genuine.properties.UNIQ_KEY, body('SO-STORED').replace('300', '300000')));
    await f.send(envelopeOf(ids.next(), body('SO-NEVER-STORED')));
    clock.at += 60_000;
    await f.drain();
    const dir = await mkdtemp(join(tmpdir(), 'resign-'));
    const config = join(dir, 'bridge.json');
    const source = f.resources.queues['point-consumer-group']!.source.url;
    await writeFile(
      config,
      JSON.stringify(
        remotingBridgeConfig(rocketMq!, [
          {
            group: 'point-consumer-group',
            topic: ORDER_TOPIC,
            target: { kind: 'sqs', queueUrl: source },
            dlqUrl: f.resources.queues['point-consumer-group']!.deadLetter.url,
          },
        ]),
      ),
    );
    // Act
    await lookedUp(lookup!, genuine.properties.UNIQ_KEY);
    const planFile = join(dir, 'plan.json');
    const plan = await run(['dlq', 'resign', ...GROUP, '--plan', planFile, '--bridge-config', config, '--json']);
    const apply = await run([
      'dlq',
      'resign',
      ...GROUP,
      '--apply',
      '--plan',
      planFile,
      '--note',
      'INC-7',
      '--yes',
      '--json',
    ]);
    await f.drain();
    // Assess
    expect(plan.code).toBe(1);
    expect(plan.json().letters).toEqual([
      expect.objectContaining({
        msgId: genuine.properties.UNIQ_KEY,
        proof: expect.objectContaining({ kind: 'rocketmq', broker: rocketMq!.brokerAddr }),
      }),
    ]);
    const why = plan.json().leftOut.map((l: { why: string }) => l.why);
    expect(why.sort()).toEqual([
      expect.stringMatching(
        /^RocketMQ \(LocalCluster\) stores no message [0-9A-F]{32} in ORDER_TOPIC; no --compromised/,
      ),
      expect.stringMatching(/^RocketMQ stores msgId [0-9A-F]{32} with another body: the letter was forged or changed/),
    ]);
    // The raised copy shares the genuine msgId, so the apply run selects it too, and keeps it
    expect(apply.code).toBe(1);
    expect(apply.json()).toMatchObject({ moved: 1 });
    expect(apply.json().heldBack.map((h: { why: string }) => h.why)).toEqual([
      expect.stringContaining('is not in the reviewed plan'),
    ]);
    expect((await f.ledger('88372')).map((e) => [e.orderNo, e.points])).toEqual([['SO-STORED', 300]]);
  });

  it("finds nothing for an id never sent, nor at an address that is not one of the cluster's brokers", async () => {
    expect(await lookup!.byMsgId(ORDER_TOPIC, ids.next())).toEqual([]);
    // An offset msgId naming 10.0.0.1:10911: never contacted, as no route names it.
    expect(await lookup!.byMsgId(ORDER_TOPIC, '0A00000100002A9F0000000000000000')).toEqual([]);
  });
});

describe('looking a message up by msgId on RocketMQ 5.5.0 (the broker the local proxy embeds)', () => {
  let rocketMq: SharedRocketMQ5 | undefined;
  let lookup: RocketMQMessageLookup | undefined;
  // The lane's RocketMQ 5 is shared: ORDER_TOPIC there is the end-to-end test's.
  const ORDER_TOPIC = 'LOOKUP_ORDER_TOPIC';

  beforeAll(async () => {
    rocketMq = await sharedRocketMQ5({ topics: [{ name: ORDER_TOPIC }] });
    lookup = await RocketMQMessageLookup.open({ nameServer: rocketMq.namesrvAddr });
  });

  afterAll(async () => {
    await lookup?.close();
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
    expect(await lookedUp(lookup!, messageId, ORDER_TOPIC)).toEqual([
      expect.objectContaining({
        topic: ORDER_TOPIC,
        msgId: messageId,
        bodySha256: sha256(Buffer.from(body('SO-LOOKUP-5'))),
      }),
    ]);
  });
});
