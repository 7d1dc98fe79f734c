import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { parseBridgeConfig } from '../src/bridge-config.ts';
import { type JavaMessage, sendWithJavaClient } from './support/java-producer.ts';
import { type SharedRocketMQ4, sharedRocketMQ4 } from './support/shared-rocketmq.ts';

/**
 * Fidelity with the official Java producer: messages sent by the Apache RocketMQ 4.7.1 Java
 * client through a real 4.7.1 broker and the bridge arrive with the producer's body bytes and
 * every property the application set.
 */
const TOPIC = 'JAVA_ORDER_TOPIC';
const BOM = [0xef, 0xbb, 0xbf];
/** The six names 4.7.1's `putUserProperty` accepts although RocketMQ itself uses them, and an ordinary one. */
const USER_PROPERTIES = {
  traceId: 'trace-7',
  __STARTDELIVERTIME: '1767225600000',
  __SHARDINGKEY: 'SO-J2',
  __SHARDING_KEY: 'SO-J2-ons',
  CHECK_IMMUNITY_TIME_IN_SECONDS: '60',
  TRANSACTION_CHECK_TIMES: '2',
  TRAN_PREPARED_QUEUE_OFFSET: '17',
};

let rocketMq: SharedRocketMQ4 | undefined;
let sqs: SQSClient;

beforeAll(async () => {
  rocketMq = await sharedRocketMQ4({ topics: [{ name: TOPIC, queues: 2 }] });
  sqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
});

/** Every message of the queue, with the body bytes as the envelope carries them (text, or base64 for other bytes). */
async function receiveAll(queueUrl: string) {
  const out: { msgId: string; bytes: Buffer; raw: string }[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 600 }),
    );
    if (Messages.length === 0) return out;
    for (const m of Messages) {
      const { data } = JSON.parse(m.Body!) as { data: { msgId: string; body: string; bodyEncoding: string } };
      const bytes = Buffer.from(data.body, data.bodyEncoding === 'base64' ? 'base64' : 'utf8');
      out.push({ msgId: data.msgId, bytes, raw: m.Body! });
    }
  }
}

/** Runs a bridge on TOPIC with a group of its own until `count` messages landed in a new queue; returns them. */
async function forwardThroughBridge(count: number) {
  const name = `java4-${randomUUID().slice(0, 8)}`;
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
  const bridge = new Bridge(
    parseBridgeConfig({
      protocol: 'rocketmq4',
      nameServer: rocketMq!.namesrvAddr,
      clusterName: rocketMq!.clusterName,
      sslEnabled: false,
      health: { host: '127.0.0.1', port: 0 },
      routes: [
        {
          group: `java-${name}`,
          topic: TOPIC,
          target: { kind: 'sqs', queueUrl },
          dlqUrl,
          takeOver: { startWithoutOffset: 'first' },
        },
      ],
    }),
    { sqs, logger: new Logger({ serviceName: 'bridge-test', logLevel: 'ERROR' }) },
  );
  await bridge.start();
  const landed: Awaited<ReturnType<typeof receiveAll>> = [];
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && landed.length < count) {
    landed.push(...(await receiveAll(queueUrl)));
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await bridge.stop();
  return landed;
}

describe('RocketMQ 4.7.1 Java producer → broker → bridge → SQS', () => {
  it('keeps a leading byte-order mark byte for byte and every property the application set', async () => {
    // Prepare
    const messages: JavaMessage[] = [
      { topic: TOPIC, tags: 'PAID', keys: 'SO-J1', body: Buffer.from([...BOM, ...Buffer.from('{"orderNo":"SO-J1"}')]) },
      {
        topic: TOPIC,
        tags: 'PAID',
        keys: 'SO-J2 u-2',
        body: Buffer.from('{"orderNo":"SO-J2"}'),
        userProperties: USER_PROPERTIES,
      },
      // Not UTF-8 after the mark: travels as base64, and must keep the mark too.
      { topic: TOPIC, tags: 'PAID', keys: 'SO-J3', body: Buffer.from([...BOM, 0xff, 0x00, 0x41]) },
    ];
    const sent = await sendWithJavaClient(rocketMq!.namesrvAddr, messages);

    // Act
    const landed = await forwardThroughBridge(sent.length);

    // Assess: the client's ids, and each body exactly as the producer's bytes.
    const byId = new Map(landed.map((l) => [l.msgId, l]));
    expect([...byId.keys()].sort()).toEqual(sent.map((s) => s.msgId).sort());
    sent.forEach((s, i) => {
      expect([...byId.get(s.msgId)!.bytes]).toEqual([...messages[i]!.body]);
    });
    const withMark = parseEnvelope(byId.get(sent[0]!.msgId)!.raw);
    expect(withMark.body).toBe('\uFEFF{"orderNo":"SO-J1"}');
    // Assess: every property the application set, both sharding keys included; the Java name is the message group.
    const withProperties = parseEnvelope(byId.get(sent[1]!.msgId)!.raw);
    expect(withProperties.userProperties).toEqual(USER_PROPERTIES);
    expect(withProperties.systemProperties).toEqual({
      UNIQ_KEY: sent[1]!.msgId,
      KEYS: 'SO-J2 u-2',
      TAGS: 'PAID',
      __SHARDINGKEY: 'SO-J2',
    });
    expect(withProperties).toMatchObject({
      // A timed message's time, as the producer set it in __STARTDELIVERTIME.
      deliveryTimestamp: 1767225600000,
      keys: ['SO-J2', 'u-2'],
      offsetMsgId: sent[1]!.offsetMsgId,
      queueId: sent[1]!.queueId,
      queueOffset: sent[1]!.queueOffset,
    });
  }, 120_000);

  it("carries a delayed message's delay level, and forwards it once the broker released it", async () => {
    // Prepare: delay level 2, which the broker's default messageDelayLevel makes 5 s
    const [delayed] = await sendWithJavaClient(rocketMq!.namesrvAddr, [
      { topic: TOPIC, tags: 'PAID', keys: 'SO-D4', body: Buffer.from('{"orderNo":"SO-D4"}'), delayTimeLevel: 2 },
    ]);

    // Act: a group reading the topic from its first message
    const landed = await forwardThroughBridge(4);

    // Assess
    const envelope = parseEnvelope(landed.find((l) => l.msgId === delayed!.msgId)!.raw);
    expect(envelope.delayTimeLevel).toBe(2);
    expect(envelope.storeTimestamp! - envelope.bornTimestamp!).toBeGreaterThanOrEqual(4_500);
    expect(envelope).not.toHaveProperty('deliveryTimestamp');
    expect(parseEnvelope(landed.find((l) => l.msgId !== delayed!.msgId)!.raw)).not.toHaveProperty('delayTimeLevel');
  }, 120_000);
});
