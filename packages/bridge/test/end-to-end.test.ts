import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import {
  createSecretsManager,
  createSqs,
  emulatorConfig,
  SecretSigningKeys,
} from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope, type RocketMQMessage, signatureRefusal } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { pointsFixture, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { Producer } from 'rocketmq-client-nodejs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { type BridgeConfigInput, parseBridgeConfig } from '../src/bridge-config.ts';
import { RouteConsumer } from '../src/route-consumer.ts';
import {
  BridgeChildProcess,
  bridgeEnv as envFor,
  faultedMsgIds,
  forwardedMsgIds,
} from './support/bridge-child-process.ts';
import { type SharedRocketMQ5, sharedRocketMQ5 } from './support/shared-rocketmq.ts';
import { failBatchEntries } from './support/sqs-batch-faults.ts';

/**
 * RocketMQ 5 (name server + proxy with embedded broker, real JVMs) → bridge process → emulator SQS
 * → the real points consumer. Covers the arrows "bridge forwards" and "bridge dies between
 * forward and ack": RocketMQ redelivers, the queue receives the message again, and the consumer's
 * idempotency on the order number still awards once per order, also for an application re-send
 * (same order, new msgId).
 */
const ORDER_TOPIC = 'ORDER_TOPIC';
const FIFO_TOPIC = 'ORDER_FIFO_TOPIC';
const FIFO_GROUP = 'order-audit-fifo-group';
const BURST_TOPIC = 'ORDER_BURST_TOPIC';
const BURST_GROUP = 'order-burst-group';
const REDELIVERY_TOPIC = 'ORDER_REDELIVERY_TOPIC';
const REDELIVERY_GROUP = 'order-redelivery-group';
/** A group as RocketMQ lets one be created: it dead-letters a message at its second delivery. */
const HAZARD_GROUP = 'order-dlq-hazard-group';
const BOM_TOPIC = 'ORDER_BOM_TOPIC';
const BOM_GROUP = 'order-bom-group';
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

let rocketMq: SharedRocketMQ5 | undefined;
let points: Awaited<ReturnType<typeof pointsFixture>>;
let fifoQueueUrl: string;
/** The envelope signing key, in the emulator's Secrets Manager as the CDK app keeps it. */
const SIGNING_KEY = 'e2e'.repeat(22);
let signingSecretId: string;
const children: BridgeChildProcess[] = [];

beforeAll(async () => {
  const started = Date.now();
  rocketMq = await sharedRocketMQ5({
    topics: [
      { name: ORDER_TOPIC },
      { name: FIFO_TOPIC, type: 'FIFO' },
      { name: BURST_TOPIC },
      { name: REDELIVERY_TOPIC, queues: 1 },
      { name: BOM_TOPIC, queues: 1 },
    ],
    groups: [
      { name: POINTS_GROUP },
      { name: FIFO_GROUP, fifo: true },
      { name: BURST_GROUP },
      { name: REDELIVERY_GROUP },
      { name: HAZARD_GROUP, retryMaxTimes: 1 },
      { name: BOM_GROUP },
    ],
  });
  console.info(`topics and groups declared on the lane's RocketMQ in ${Date.now() - started} ms`);
  const name = `bridge-e2e-${randomUUID().slice(0, 8)}`;
  const secrets = createSecretsManager(emulatorConfig(inject('emulatorEndpoint')));
  signingSecretId = (
    await secrets.send(new CreateSecretCommand({ Name: `${name}/envelope-signing-key`, SecretString: SIGNING_KEY }))
  ).ARN!;
  // The consumer refuses what the bridge did not sign.
  points = await pointsFixture({ envelopeKeys: new SecretSigningKeys(secrets, signingSecretId) });
  const fifo = { FifoQueue: 'true' };
  fifoQueueUrl = (await points.sqs.send(new CreateQueueCommand({ QueueName: `${name}.fifo`, Attributes: fifo })))
    .QueueUrl!;
  await points.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq.fifo`, Attributes: fifo }));
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
});

/**
 * How every bridge of this file reaches the local broker: plain gRPC (TLS off, the bridge's logged opt-out), short
 * redelivery and polls.
 */
function localBroker(): BridgeConfigInput {
  return {
    proxyEndpoint: rocketMq!.proxyEndpoint,
    clusterName: rocketMq!.clusterName,
    sslEnabled: false,
    invisibleDurationMs: 10_000,
    awaitDurationMs: 5_000,
    routes: [],
  };
}

function bridgeEnv(fault?: 'crash-before-ack'): Record<string, string> {
  const queue = points.resources.queues[POINTS_GROUP]!;
  const config: BridgeConfigInput = {
    ...localBroker(),
    health: { host: '127.0.0.1', port: 0 },
    signing: { secretId: signingSecretId },
    routes: [
      {
        group: POINTS_GROUP,
        topic: ORDER_TOPIC,
        tagExpression: 'PAID',
        target: { kind: 'sqs', queueUrl: queue.source.url },
        dlqUrl: queue.deadLetter.url,
      },
      {
        group: FIFO_GROUP,
        topic: FIFO_TOPIC,
        fifo: true,
        target: { kind: 'sqs', queueUrl: fifoQueueUrl },
        dlqUrl: fifoQueueUrl.replace('.fifo', '-dlq.fifo'),
      },
    ],
  };
  return envFor(config, fault ? { BRIDGE_FAULT: fault } : {});
}

function startBridge(fault?: 'crash-before-ack'): BridgeChildProcess {
  const child = new BridgeChildProcess(bridgeEnv(fault));
  children.push(child);
  return child;
}

/** A bridge on its own topic and queue with the default settings, so with several batches in flight. */
function startBurstBridge(queueUrl: string, dlqUrl: string, fault: Record<string, string> = {}): BridgeChildProcess {
  const config: BridgeConfigInput = {
    ...localBroker(),
    // Small batches, so the burst makes many of them.
    receiveBatchSize: 4,
    health: { host: '127.0.0.1', port: 0 },
    routes: [{ group: BURST_GROUP, topic: BURST_TOPIC, target: { kind: 'sqs', queueUrl }, dlqUrl }],
  };
  const child = new BridgeChildProcess({ ...bridgeEnv(), BRIDGE_CONFIG: JSON.stringify(config), ...fault });
  children.push(child);
  return child;
}

async function receiveAll(sqs: SQSClient, queueUrl: string) {
  const out: { body: string; envelope: RocketMQMessage; groupId: string | undefined }[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 600,
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
    );
    if (Messages.length === 0) return out;
    for (const m of Messages)
      out.push({ body: m.Body!, envelope: parseEnvelope(m.Body!), groupId: m.Attributes?.MessageGroupId });
  }
}

async function queued(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages ?? 0);
}

describe('RocketMQ 5 → bridge → SQS → points consumer', () => {
  it('forwards, survives a kill between forward and ack through redelivery, and the award stays exactly once', async () => {
    // Prepare: orders on RocketMQ, including an application re-send and a tag the route filters out.
    const producer = new Producer({ endpoints: rocketMq!.proxyEndpoint, namespace: '', logger: SILENT });
    await producer.startup();
    const send = async (
      tag: string,
      order: Record<string, unknown>,
      extra: { messageGroup?: string; topic?: string } = {},
    ) =>
      (
        await producer.send({
          topic: extra.topic ?? ORDER_TOPIC,
          tag,
          keys: [String(order.orderNo)],
          body: Buffer.from(JSON.stringify(order)),
          properties: new Map([['origin', 'e2e']]),
          ...(extra.messageGroup ? { messageGroup: extra.messageGroup } : {}),
        })
      ).messageId;
    const so1 = await send('PAID', { orderNo: 'SO-1', userId: 'u1', points: 10 });
    const so2 = await send('PAID', { orderNo: 'SO-2', userId: 'u2', points: 20 });
    const so1Resend = await send('PAID', { orderNo: 'SO-1', userId: 'u1', points: 10 });
    await send('CANCELLED', { orderNo: 'SO-3', userId: 'u3', points: 30 });
    const fifoIds: string[] = [];
    for (const n of [1, 2, 3])
      fifoIds.push(await send('AUDIT', { orderNo: `F-${n}` }, { topic: FIFO_TOPIC, messageGroup: 'user-1' }));
    await producer.shutdown();
    const paid = [so1, so2, so1Resend];
    const sqs = points.sqs;
    const pointsQueue = points.resources.queues[POINTS_GROUP]!.source;

    // Act 1: the bridge forwards everything, then dies before acking anything.
    const crashing = startBridge('crash-before-ack');
    await crashing.waitFor(
      'every message forwarded once',
      (lines) => {
        const seen = new Set(faultedMsgIds(lines));
        return [...paid, ...fifoIds].every((id) => seen.has(id)) ? true : undefined;
      },
      90_000,
    );
    crashing.kill('SIGKILL');
    await crashing.exited;
    expect(await queued(sqs, pointsQueue.url)).toBeGreaterThanOrEqual(3);

    // Act 2: a fresh bridge gets the messages again once their invisible duration (10 s) ends.
    const bridge = startBridge();
    const port = await bridge.waitFor(
      'health port',
      (lines) => lines.find((l) => l.message === 'health endpoint listening')?.port as number | undefined,
      60_000,
    );
    await bridge.waitFor(
      'redelivered messages forwarded and acked',
      (lines) => {
        const seen = new Set(forwardedMsgIds(lines));
        return [...paid, ...fifoIds].every((id) => seen.has(id)) ? true : undefined;
      },
      90_000,
    );
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
    const status = (await ready.json()) as { ready: boolean; routes: Record<string, { stats: { forwarded: number } }> };
    bridge.kill('SIGTERM');
    const exit = await bridge.exited;

    // Assess: the bridge was ready, and drained and exited cleanly on SIGTERM.
    expect(ready.status).toBe(200);
    expect(status.ready).toBe(true);
    expect(status.routes[POINTS_GROUP]!.stats.forwarded).toBeGreaterThanOrEqual(3);
    expect(exit.code).toBe(0);
    expect(bridge.lines.some((l) => l.message === 'bridge stopped')).toBe(true);
    // The local proxy has no TLS: the opt-out is said at start, where an operator sees it.
    expect(bridge.lines.some((l) => String(l.message).startsWith('TLS to RocketMQ is off') && l.level === 'WARN')).toBe(
      true,
    );

    // Assess: each PAID message reached the queue twice (first delivery, then RocketMQ's redelivery),
    // with every broker fact kept; the CANCELLED one never did. The redelivery was the bridge's own
    // (it died holding the message), so the consumer's attempt count is 0 on both copies.
    const copies = await receiveAll(sqs, pointsQueue.url);
    const byMsgId = Map.groupBy(copies, (c) => c.envelope.msgId);
    expect([...byMsgId.keys()].sort()).toEqual([...paid].sort());
    for (const id of paid) {
      const attempts = byMsgId.get(id)!.map((c) => c.envelope.reconsumeTimes);
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      expect(attempts).toEqual(attempts.map(() => 0));
    }
    const first = byMsgId.get(so1)![0]!.envelope;
    expect(first).toMatchObject({
      topic: ORDER_TOPIC,
      tags: 'PAID',
      keys: ['SO-1'],
      brokerName: rocketMq!.brokerName,
      source: `rocketmq://${rocketMq!.clusterName}`,
      userProperties: { origin: 'e2e' },
      systemProperties: { UNIQ_KEY: so1, KEYS: 'SO-1', TAGS: 'PAID' },
    });
    expect(first.msgId).toMatch(/^01[0-9A-F]{32}$/);
    expect(first.queueId).toBeGreaterThanOrEqual(0);
    expect(first.queueOffset).toBeGreaterThanOrEqual(0);
    expect(first.storeTimestamp).toBeGreaterThanOrEqual(first.bornTimestamp!);
    expect(first.storeHost).toMatch(/:\d+$/);
    expect(JSON.parse(first.body)).toEqual({ orderNo: 'SO-1', userId: 'u1', points: 10 });

    // Assess: the FIFO route kept order and group, and SQS FIFO dropped the redelivered copies by msgId.
    const fifo = await receiveAll(sqs, fifoQueueUrl);
    expect(fifo.map((c) => [c.groupId, c.envelope.msgId])).toEqual(fifoIds.map((id) => ['user-1', id]));

    // Every copy carries the bridge's signature over what it forwarded.
    expect(copies.map((c) => signatureRefusal(c.body, [Buffer.from(SIGNING_KEY)]))).toEqual(
      copies.map(() => undefined),
    );

    // Act 3 + Assess: the points consumer (signatures required) over every copy awards once per order.
    for (let i = 0; i < copies.length; i += 10) {
      await points.invoke(copies.slice(i, i + 10).map((c) => sqsRecord(c.body, pointsQueue.arn)));
    }
    expect((await points.ledger('u1')).map((e) => e.orderNo)).toEqual(['SO-1']);
    expect((await points.ledger('u2')).map((e) => e.orderNo)).toEqual(['SO-2']);
    expect(await points.balance('u1')).toBe(10);
    expect(await points.balance('u2')).toBe(20);
    expect(await points.ledgerMismatches()).toEqual([]);
  }, 240_000);

  it('with several batches forwarded and none acked, a SIGKILL loses nothing: every one of them comes back', async () => {
    // Prepare: a burst of orders on a topic of their own, queued before any bridge runs.
    const producer = new Producer({ endpoints: rocketMq!.proxyEndpoint, namespace: '', logger: SILENT });
    await producer.startup();
    const sent: string[] = [];
    for (let i = 0; i < 40; i++) {
      sent.push(
        (
          await producer.send({
            topic: BURST_TOPIC,
            tag: 'PAID',
            keys: [`B-${i}`],
            body: Buffer.from(JSON.stringify({ orderNo: `B-${i}` })),
          })
        ).messageId,
      );
    }
    await producer.shutdown();
    const name = `bridge-burst-${randomUUID().slice(0, 8)}`;
    const queueUrl = (await points.sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const dlqUrl = (await points.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;

    // Act 1: a bridge with the default batches in flight forwards four batches at once and dies before acking any.
    const crashing = startBurstBridge(queueUrl, dlqUrl, {
      BRIDGE_FAULT: 'sigkill-with-batches-in-flight',
      BRIDGE_FAULT_BATCHES: '4',
    });
    const held = await crashing.waitFor(
      'four batches forwarded and held before their acks',
      (lines) => lines.find((l) => l.fault === 'sigkill-with-batches-in-flight')?.batches as string[][] | undefined,
      90_000,
    );
    const killed = await crashing.exited;

    // Act 2: a fresh bridge takes over; the held messages come back after their invisible duration (10 s).
    const bridge = startBurstBridge(queueUrl, dlqUrl);
    await bridge.waitFor(
      'every order forwarded',
      (lines) => {
        const seen = new Set(forwardedMsgIds(lines));
        return sent.every((id) => seen.has(id)) ? true : undefined;
      },
      90_000,
    );
    bridge.kill('SIGTERM');
    await bridge.exited;

    // Assess: four batches were in flight together; the kill landed between their forwards and acks.
    expect(killed.signal).toBe('SIGKILL');
    expect(held).toHaveLength(4);
    const heldIds = held.flat();
    expect(new Set(heldIds).size).toBe(heldIds.length);
    // Nothing lost: every order is in the queue.
    const copies = Map.groupBy(await receiveAll(points.sqs, queueUrl), (c) => c.envelope.msgId);
    expect([...copies.keys()].sort()).toEqual([...sent].sort());
    // Nothing acked unforwarded: each held message was in the queue once, un-acked, and RocketMQ delivered it again;
    // neither copy counts the bridge's redelivery as a consumer failure.
    for (const id of heldIds) {
      expect(copies.get(id)!.map((c) => c.envelope.reconsumeTimes)).toEqual([0, 0]);
    }
  }, 240_000);
});

/** An in-process bridge with one route from `topic` through `group` into a fresh queue of the emulator. */
async function bridgeOn(topic: string, group: string, sqs: SQSClient) {
  const name = `bridge-${group}-${randomUUID().slice(0, 8)}`;
  const queueUrl = (await points.sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const dlqUrl = (await points.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
  const config = parseBridgeConfig({
    ...localBroker(),
    health: { host: '127.0.0.1', port: 0 },
    routes: [{ group, topic, target: { kind: 'sqs', queueUrl }, dlqUrl }],
  });
  const bridge = new Bridge(config, { sqs, logger: new Logger({ serviceName: 'bridge-test', logLevel: 'SILENT' }) });
  return { bridge, queueUrl, dlqUrl };
}

async function sendTo(topic: string, body: Buffer, orderNo: string): Promise<string> {
  const producer = new Producer({ endpoints: rocketMq!.proxyEndpoint, namespace: '', logger: SILENT });
  await producer.startup();
  try {
    return (await producer.send({ topic, tag: 'PAID', keys: [orderNo], body })).messageId;
  } finally {
    await producer.shutdown();
  }
}

/** Receives from `queueUrl` until `msgId` arrived or `timeoutMs` passed. */
async function awaitInQueue(queueUrl: string, msgId: string, timeoutMs: number) {
  const copies: Awaited<ReturnType<typeof receiveAll>> = [];
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !copies.some((c) => c.envelope.msgId === msgId)) {
    copies.push(...(await receiveAll(points.sqs, queueUrl)));
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return copies;
}

describe('RocketMQ 5: the bridge’s own redeliveries are no consumer failures, and never end in %DLQ%', () => {
  it('refuses to start on a group whose retry limit its own redeliveries could reach, naming both settings', async () => {
    const { bridge } = await bridgeOn(REDELIVERY_TOPIC, HAZARD_GROUP, points.sqs);
    const started = bridge.start();
    // A bridge that started anyway would consume the group's messages from under the next test.
    started.catch(() => undefined).finally(() => bridge.stop());
    await expect(started).rejects.toThrow(
      `consumer group ${HAZARD_GROUP}: RocketMQ moves a message to %DLQ%${HAZARD_GROUP} once it was delivered 2 times ` +
        "(retryMaxTimes 1), and the bridge's own redeliveries (one per invisibleDurationMs = 10000 ms",
    );
  });

  it('a forward failed more often than a dead-lettering group allows still arrives, as a first delivery', async () => {
    // Prepare: one message; SQS refuses its forward three times. Beside the bridge, a plain consumer of the group
    // that dead-letters at the second delivery receives the same message and never acks it.
    const msgId = await sendTo(REDELIVERY_TOPIC, Buffer.from(JSON.stringify({ orderNo: 'SO-RE' })), 'SO-RE');
    const faultySqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
    let refusals = 0;
    failBatchEntries(faultySqs, (body) => body.includes('SO-RE') && refusals < 3 && ++refusals > 0);
    const { bridge, queueUrl, dlqUrl } = await bridgeOn(REDELIVERY_TOPIC, REDELIVERY_GROUP, faultySqs);
    const hazard = new RouteConsumer({
      endpoints: rocketMq!.proxyEndpoint,
      namespace: '',
      sslEnabled: false,
      consumerGroup: HAZARD_GROUP,
      subscriptions: new Map([[REDELIVERY_TOPIC, '*']]),
      awaitDuration: 5_000,
      invisibleDurationMs: 10_000,
      batchSize: 16,
      logger: SILENT,
    });

    // Act: the bridge forwards until SQS takes it; the plain consumer receives for as long, acking nothing.
    await bridge.start();
    await hazard.startup();
    const hazardAttempts: number[] = [];
    const [copies] = await Promise.all([
      awaitInQueue(queueUrl, msgId, 120_000),
      (async () => {
        const deadline = Date.now() + 45_000;
        while (Date.now() < deadline) {
          for (const view of await hazard.receive(16, 10_000))
            if (view.messageId === msgId) hazardAttempts.push(view.deliveryAttempt ?? 1);
        }
      })(),
    ]);
    await Promise.all([bridge.stop(), hazard.shutdown()]);

    // Assess: the plain group's message was delivered twice and then parked, as the proxy does with a reachable
    // limit (the limit the bridge refuses); the bridge's message came through after more failed forwards than
    // that, once, as a first delivery, and nothing went to its DLQ.
    expect(copies.filter((c) => c.envelope.msgId === msgId).map((c) => c.envelope.reconsumeTimes)).toEqual([0]);
    expect(refusals).toBe(3);
    expect(bridge.status().routes[REDELIVERY_GROUP]!.stats.forwardFailed).toBeGreaterThanOrEqual(3);
    expect(await receiveAll(points.sqs, dlqUrl)).toEqual([]);
    expect(hazard.retryPolicyRefusal()).toMatch(/once it was delivered 2 times/);
    expect(hazardAttempts).toEqual([1, 2]);
  }, 180_000);

  it('keeps a body’s leading UTF-8 byte-order mark byte for byte', async () => {
    const body = Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"orderNo":"SO-BOM"}')]);
    const msgId = await sendTo(BOM_TOPIC, body, 'SO-BOM');
    const { bridge, queueUrl } = await bridgeOn(BOM_TOPIC, BOM_GROUP, points.sqs);
    await bridge.start();
    const copies = await awaitInQueue(queueUrl, msgId, 60_000);
    await bridge.stop();
    const [copy] = copies.filter((c) => c.envelope.msgId === msgId);
    expect(Buffer.from(copy!.envelope.body, 'utf8').equals(body)).toBe(true);
  }, 120_000);
});
