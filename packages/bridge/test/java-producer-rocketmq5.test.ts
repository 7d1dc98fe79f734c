import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope, type RocketMQMessage } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { parseBridgeConfig } from '../src/bridge-config.ts';
import { sendWithJava5Client } from './support/java-producer.ts';
import { type SharedRocketMQ5, sharedRocketMQ5 } from './support/shared-rocketmq.ts';

/**
 * Fidelity with the official RocketMQ 5 Java producer: a delay message sent by `rocketmq-client-java`
 * (`MessageBuilder.setDeliveryTimestamp`) through a real 5.5.0 proxy and the bridge arrives at its
 * time and says when it was due.
 */
/** A 5.x topic takes the message type it was made for: delay messages here, others on ORDER_TOPIC. */
const DELAY_TOPIC = 'ORDER_DELAY_TOPIC';
const DELAY_GROUP = 'java5-order-delay-group';
const ORDER_TOPIC = 'JAVA5_ORDER_TOPIC';
const ORDER_GROUP = 'java5-order-group';

let rocketMq: SharedRocketMQ5 | undefined;
let sqs: SQSClient;

beforeAll(async () => {
  rocketMq = await sharedRocketMQ5({
    topics: [
      { name: DELAY_TOPIC, type: 'DELAY', queues: 1 },
      { name: ORDER_TOPIC, queues: 1 },
    ],
    groups: [{ name: DELAY_GROUP }, { name: ORDER_GROUP }],
  });
  sqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
});

describe('RocketMQ 5 Java producer → 5.5.0 proxy → bridge → SQS', () => {
  it("carries a delay message's delivery timestamp, and forwards the message no earlier", async () => {
    // Prepare: the bridge waits on both groups; one message due in 20 s, one for delivery at once
    const name = `java5-${randomUUID().slice(0, 8)}`;
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
    const bridge = new Bridge(
      parseBridgeConfig({
        proxyEndpoint: rocketMq!.proxyEndpoint,
        clusterName: rocketMq!.clusterName,
        sslEnabled: false,
        awaitDurationMs: 5_000,
        health: { host: '127.0.0.1', port: 0 },
        routes: [
          { group: DELAY_GROUP, topic: DELAY_TOPIC, target: { kind: 'sqs', queueUrl }, dlqUrl },
          { group: ORDER_GROUP, topic: ORDER_TOPIC, target: { kind: 'sqs', queueUrl }, dlqUrl },
        ],
      }),
      { sqs, logger: new Logger({ serviceName: 'bridge-test', logLevel: 'ERROR' }) },
    );
    await bridge.start();
    // Far enough ahead that the JVM's start (seconds, more under load) leaves the message sent well before it is due.
    const due = Date.now() + 20_000;

    // Act
    const landed = new Map<string, { envelope: RocketMQMessage; at: number }>();
    const sending = sendWithJava5Client(rocketMq!.proxyEndpoint, [
      {
        topic: DELAY_TOPIC,
        tag: 'PAID',
        keys: ['SO-D5'],
        body: Buffer.from('{"orderNo":"SO-D5"}'),
        deliveryTimestamp: due,
      },
      { topic: ORDER_TOPIC, tag: 'PAID', keys: ['SO-N5'], body: Buffer.from('{"orderNo":"SO-N5"}') },
    ]);
    try {
      await sending;
      for (const deadline = Date.now() + 90_000; Date.now() < deadline && landed.size < 2; ) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
        );
        for (const m of Messages) {
          const envelope = parseEnvelope(m.Body!);
          landed.set(envelope.msgId, { envelope, at: Date.now() });
        }
      }
    } finally {
      await bridge.stop();
    }
    const [delayed, immediate] = await sending;

    // Assess: the delay message says when it was due and came no earlier; the other has no delivery timestamp
    const late = landed.get(delayed!.toUpperCase())!;
    expect(late.envelope.deliveryTimestamp).toBe(due);
    expect(late.at).toBeGreaterThanOrEqual(due);
    expect(late.envelope.bornTimestamp).toBeLessThan(due);
    // Stored when the timer released it (the timer wheel's precision is a second): what the redrive horizon counts from.
    expect(late.envelope.storeTimestamp).toBeGreaterThanOrEqual(due - 1_000);
    expect(landed.get(immediate!.toUpperCase())!.envelope).not.toHaveProperty('deliveryTimestamp');
  }, 120_000);
});
