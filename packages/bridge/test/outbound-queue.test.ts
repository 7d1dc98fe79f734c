import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { eventIdOf, OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  buildEnvelope,
  generateSigningKey,
  type SigningKeyRing,
  StaticSigningKeys,
  serializeEnvelope,
  signEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { queueDepth } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { RouteMetrics } from '../src/bridge-metrics.ts';
import { OutboundRoute } from '../src/outbound-route.ts';
import type { ProducedMessage, RocketMQProducer } from '../src/types.ts';

/**
 * The outbound route's bookkeeping against the emulator's SQS, with a producer that fails when told to:
 * what stays on the outbound queue when a send fails, in which order a FIFO queue's group is produced,
 * and that unreadable keys refuse nothing. The broker side is `outbound-route.test.ts` on real brokers.
 */
const logger = new Logger({ serviceName: 'outbound-test', logLevel: 'SILENT' });
let sqs: SQSClient;
const ring = new StaticSigningKeys(generateSigningKey());

beforeAll(() => {
  sqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
});

/** A producer that records what it sent and refuses the sends `refuse` picks. */
class ScriptedProducer implements RocketMQProducer {
  readonly sent: ProducedMessage[] = [];
  constructor(private readonly refuse: (message: ProducedMessage) => boolean = () => false) {}
  async start() {}
  async stop() {}
  async send(message: ProducedMessage) {
    if (this.refuse(message)) throw new Error(`broker refused ${message.eventId}`);
    this.sent.push(message);
    return { msgId: message.eventId };
  }
}

async function queues(fifo: boolean) {
  const name = `outbound-${randomUUID().slice(0, 8)}`;
  const suffix = fifo ? '.fifo' : '';
  const Attributes = { VisibilityTimeout: '1', ...(fifo ? { FifoQueue: 'true' } : {}) };
  const create = async (n: string) => (await sqs.send(new CreateQueueCommand({ QueueName: n, Attributes }))).QueueUrl!;
  return { queueUrl: await create(`${name}${suffix}`), dlqUrl: await create(`${name}-dlq${suffix}`) };
}

async function relayed(orderNo: string, messageGroup?: string): Promise<{ eventId: string; body: string }> {
  const eventId = eventIdOf('outbox-test-group', orderNo, 0);
  const envelope = buildEnvelope({
    topic: 'POINTS_TOPIC',
    msgId: eventId,
    tags: 'POINTS_AWARDED',
    keys: [eventId, orderNo],
    body: JSON.stringify({ orderNo }),
    userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId },
    ...(messageGroup ? { messageGroup } : {}),
  });
  return { eventId, body: serializeEnvelope(signEnvelope(envelope, await ring.current())) };
}

function route(config: { queueUrl: string; dlqUrl: string }, producer: RocketMQProducer, keys: SigningKeyRing = ring) {
  const metrics = new RouteMetrics('outbound', 'outbound');
  const outbound = new OutboundRoute({
    sqs,
    config: { ...config, receiveBatchSize: 10, waitTimeSeconds: 0 },
    producer,
    signingKeys: keys,
    metrics,
    logger,
  });
  return { outbound, metrics };
}

describe('the outbound route on the outbound queue', () => {
  it('deletes a message only once it was produced: a failed send stays and is produced when it comes back', async () => {
    // Prepare: the broker refuses A's first send.
    const config = await queues(false);
    const a = await relayed('OQ-A');
    const b = await relayed('OQ-B');
    let refusals = 0;
    const producer = new ScriptedProducer((m) => m.eventId === a.eventId && refusals++ === 0);
    const { outbound, metrics } = route(config, producer);
    for (const { body } of [a, b])
      await sqs.send(new SendMessageCommand({ QueueUrl: config.queueUrl, MessageBody: body }));

    // Act 1: one poll; A's send fails.
    expect(await outbound.pollOnce()).toBe(2);

    // Assess 1: B produced and deleted; A still on the queue (in flight until its visibility timeout), not dead-lettered.
    expect(producer.sent.map((m) => m.eventId)).toEqual([b.eventId]);
    expect(await queueDepth(sqs, config.queueUrl)).toEqual({ visible: 0, inFlight: 1 });
    expect(metrics.stats).toMatchObject({ forwarded: 1, forwardFailed: 1, deadLettered: 0 });

    // Act 2: A comes back after the visibility timeout (1 s) and is produced.
    await sleep(1_200);
    expect(await outbound.pollOnce()).toBe(1);

    // Assess 2
    expect(producer.sent.map((m) => m.eventId)).toEqual([b.eventId, a.eventId]);
    expect(await queueDepth(sqs, config.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await queueDepth(sqs, config.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('on a FIFO queue produces a message group in order and nothing of it after a failed send', async () => {
    // Prepare: u1's first message fails once; u2 is another group.
    const config = await queues(true);
    const [u1a, u1b, u2a] = await Promise.all([relayed('F-1', 'u1'), relayed('F-2', 'u1'), relayed('F-3', 'u2')]);
    let refusals = 0;
    const producer = new ScriptedProducer((m) => m.eventId === u1a!.eventId && refusals++ === 0);
    const { outbound } = route(config, producer);
    for (const [m, group] of [
      [u1a!, 'u1'],
      [u1b!, 'u1'],
      [u2a!, 'u2'],
    ] as const)
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: config.queueUrl,
          MessageBody: m.body,
          MessageGroupId: group,
          MessageDeduplicationId: m.eventId,
        }),
      );

    // Act: one poll receives all three (moto hands a FIFO queue's groups out whole).
    expect(await outbound.pollOnce()).toBe(3);

    // Assess: u2 went on; nothing of u1 was produced after its failed first message, and both stay on the queue.
    // Only the first poll is checked: once the first message's visibility ended, moto 5.2.1 (observed, three receives
    // a second apart) handed out u1's second message and not its first, which SQS does not.
    expect(producer.sent.map((m) => m.eventId)).toEqual([u2a!.eventId]);
    expect(producer.sent[0]!.messageGroup).toBe('u2');
    expect(await queueDepth(sqs, config.queueUrl)).toEqual({ visible: 0, inFlight: 2 });
  });

  it('refuses and produces nothing while the keys cannot be read: the batch stays on the queue', async () => {
    // Prepare
    const config = await queues(false);
    const a = await relayed('OQ-K');
    const unreadable: SigningKeyRing = {
      current: () => Promise.reject(new Error('secret unreadable')),
      accepted: () => Promise.reject(new Error('secret unreadable')),
      reload: async () => false,
    };
    const producer = new ScriptedProducer();
    const { outbound } = route(config, producer, unreadable);
    await sqs.send(new SendMessageCommand({ QueueUrl: config.queueUrl, MessageBody: a.body }));

    // Act
    await expect(outbound.pollOnce()).rejects.toThrow(/secret unreadable/);

    // Assess
    expect(producer.sent).toHaveLength(0);
    expect(await queueDepth(sqs, config.queueUrl)).toEqual({ visible: 0, inFlight: 1 });
    expect(await queueDepth(sqs, config.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });
});
