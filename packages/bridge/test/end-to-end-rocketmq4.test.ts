import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { MsgIdGenerator, parseEnvelope, type RocketMQMessage } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type LocalRocketMQ4, startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { Message, Producer } from 'ali-ons';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { type BridgeConfigInput, parseBridgeConfig } from '../src/bridge-config.ts';
import { BridgeChildProcess, bridgeEnv, faultedMsgIds, forwardedMsgIds } from './support/bridge-child-process.ts';
import { BrokerProbe } from './support/broker-probe.ts';
import { closeLegacyConsumer, legacyGroupConsumer } from './support/legacy-group-consumer.ts';
import { sendOrdered } from './support/rocketmq4-producer.ts';
import { type SharedRocketMQ4, sharedRocketMQ4 } from './support/shared-rocketmq.ts';
import { failBatchEntries, failBatchRequests } from './support/sqs-batch-faults.ts';

/**
 * RocketMQ 4.7.1 (name server + broker, real JVMs) → bridge on the remoting protocol → emulator
 * SQS. Covers what the 4.x source adds: the envelope's broker facts (UNIQ_KEY or offset id,
 * offsetMsgId), the group's `%RETRY%` backlog forwarded as its original topic, tag filtering, and a
 * failed forward that is neither acked nor sent back nor dropped.
 */
const ORDER_TOPIC = 'E2E4_ORDER_TOPIC';
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const NO_ADDRESS_SERVER = { request: () => Promise.reject(new Error('name server given')) };

let rocketMq: SharedRocketMQ4 | undefined;
let producer: Producer | undefined;
let probe: BrokerProbe | undefined;
let sqs: SQSClient;
const children: BridgeChildProcess[] = [];
const ids = new MsgIdGenerator('7F000001', 0x4711);

beforeAll(async () => {
  rocketMq = await sharedRocketMQ4({ topics: [{ name: ORDER_TOPIC, queues: 4 }] });
  producer = new Producer({
    nameSrv: rocketMq.namesrvAddr,
    httpclient: NO_ADDRESS_SERVER,
    producerGroup: 'order-service',
    logger: SILENT,
  });
  // Sends fail while the broker is down; the test sees each failure as a rejected send.
  producer.on('error', () => undefined);
  await producer.ready();
  probe = await BrokerProbe.open(rocketMq.namesrvAddr);
  sqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  await probe?.close();
  await producer?.close();
});

async function send(
  tag: string,
  order: Record<string, unknown>,
  uniqKey = true,
): Promise<{ msgId: string; offsetMsgId: string }> {
  const message = new Message(ORDER_TOPIC, tag, JSON.stringify(order));
  message.keys = [String(order.orderNo)];
  message.properties.origin = 'e2e';
  if (uniqKey) message.properties.UNIQ_KEY = ids.next();
  const result = await producer!.send(message);
  return { msgId: message.properties.UNIQ_KEY ?? result.msgId, offsetMsgId: result.msgId };
}

async function queues(prefix: string): Promise<{ queueUrl: string; dlqUrl: string }> {
  const base = `${prefix}-${randomUUID().slice(0, 8)}`;
  const create = async (name: string) => (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  return { queueUrl: await create(base), dlqUrl: await create(`${base}-dlq`) };
}

async function receiveAll(queueUrl: string): Promise<RocketMQMessage[]> {
  const out: RocketMQMessage[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 600 }),
    );
    if (Messages.length === 0) return out;
    out.push(...Messages.map((m) => parseEnvelope(m.Body!)));
  }
}

function config(group: string, target: { queueUrl: string; dlqUrl: string }): BridgeConfigInput {
  return {
    protocol: 'rocketmq4',
    nameServer: rocketMq!.namesrvAddr,
    clusterName: rocketMq!.clusterName,
    sslEnabled: false,
    invisibleDurationMs: 10_000,
    awaitDurationMs: 5_000,
    health: { host: '127.0.0.1', port: 0 },
    routes: [
      {
        group,
        topic: ORDER_TOPIC,
        tagExpression: 'PAID',
        target: { kind: 'sqs', queueUrl: target.queueUrl },
        dlqUrl: target.dlqUrl,
      },
    ],
  };
}

describe('RocketMQ 4.7.1 → bridge (remoting protocol) → SQS', () => {
  it('forwards every broker fact, filters by tag, and forwards the group’s %RETRY% backlog as its original topic', async () => {
    // Prepare: the group's old consumer fails one order, and ali-ons sends it back to %RETRY%<group>.
    const group = `points-v4-${randomUUID().slice(0, 6)}`;
    const retried = await send('PAID', { orderNo: 'SO-R', userId: 'u9', points: 9 });
    const sentBack = Promise.withResolvers<void>();
    const legacy = legacyGroupConsumer(rocketMq!.namesrvAddr, group, () => sentBack.resolve());
    legacy.subscribe(ORDER_TOPIC, 'PAID', async () => {
      throw new Error('the old consumer fails this order');
    });
    await sentBack.promise;
    // The client moves its offset past the message only after logging the send-back; closing at
    // once could commit the older offset and hand the original to the bridge as well.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await closeLegacyConsumer(legacy, probe!, rocketMq!.brokerAddr);
    // Then new orders: one with UNIQ_KEY, one without (msgId falls back to the offset id), one the route filters out.
    const so1 = await send('PAID', { orderNo: 'SO-1', userId: 'u1', points: 10 });
    const so2 = await send('PAID', { orderNo: 'SO-2', userId: 'u2', points: 20 }, false);
    await send('CANCELLED', { orderNo: 'SO-3', userId: 'u3', points: 30 });
    const target = await queues('e2e4');

    // Act: the bridge forwards the new orders at once and the retried one when its 10 s delay ends.
    const bridge = new BridgeChildProcess(bridgeEnv(config(group, target)));
    children.push(bridge);
    await bridge.waitFor(
      'all three forwarded',
      (lines) => {
        const seen = new Set(forwardedMsgIds(lines));
        return [retried.msgId, so1.msgId, so2.msgId].every((id) => seen.has(id)) ? true : undefined;
      },
      60_000,
    );
    bridge.kill('SIGTERM');
    expect((await bridge.exited).code).toBe(0);

    // Assess
    const copies = await receiveAll(target.queueUrl);
    const byId = new Map(copies.map((c) => [c.msgId, c]));
    expect([...byId.keys()].sort()).toEqual([retried.msgId, so1.msgId, so2.msgId].sort());
    expect(byId.get(so1.msgId)).toMatchObject({
      topic: ORDER_TOPIC,
      tags: 'PAID',
      keys: ['SO-1'],
      reconsumeTimes: 0,
      offsetMsgId: so1.offsetMsgId,
      brokerName: rocketMq!.brokerName,
      source: `rocketmq://${rocketMq!.clusterName}`,
      userProperties: { origin: 'e2e' },
      systemProperties: { UNIQ_KEY: so1.msgId, KEYS: 'SO-1', TAGS: 'PAID' },
    });
    const first = byId.get(so1.msgId)!;
    expect(first.queueId).toBeGreaterThanOrEqual(0);
    expect(first.queueOffset).toBeGreaterThanOrEqual(0);
    expect(first.storeTimestamp).toBeGreaterThanOrEqual(first.bornTimestamp!);
    expect(first.bornHost).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(first.storeHost).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(JSON.parse(first.body)).toEqual({ orderNo: 'SO-1', userId: 'u1', points: 10 });
    // Without UNIQ_KEY the offset id is the msgId.
    expect(byId.get(so2.msgId)).toMatchObject({ msgId: so2.offsetMsgId, offsetMsgId: so2.offsetMsgId });
    // The retried order keeps its msgId, comes as its original topic and says it is the second delivery.
    expect(byId.get(retried.msgId)).toMatchObject({
      topic: ORDER_TOPIC,
      tags: 'PAID',
      keys: ['SO-R'],
      reconsumeTimes: 1,
    });
    expect(byId.get(retried.msgId)!.offsetMsgId).not.toBe(retried.offsetMsgId);
  }, 120_000);

  it('keeps a failed forward in hand (no ack, no send-back, no drop) and forwards it once SQS takes it', async () => {
    // Prepare: SQS refuses SO-F's entry once.
    const group = `points-v4-${randomUUID().slice(0, 6)}`;
    const target = await queues('fail4');
    const faultySqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
    let refusals = 0;
    failBatchEntries(faultySqs, (body) => body.includes('SO-F') && refusals++ < 1);
    const logger = new Logger({ serviceName: 'bridge-test', logLevel: 'ERROR' });
    const bridge = new Bridge(parseBridgeConfig(config(group, target)), { sqs: faultySqs, logger });
    await bridge.start();

    // Act
    const failing = await send('PAID', { orderNo: 'SO-F', userId: 'u5', points: 5 });
    const next = await send('PAID', { orderNo: 'SO-G', userId: 'u6', points: 6 });
    let copies: RocketMQMessage[] = [];
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && !copies.some((c) => c.msgId === failing.msgId)) {
      copies = [...copies, ...(await receiveAll(target.queueUrl))];
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await bridge.stop();

    // Assess: SO-F came through after the refusal, still as its first delivery (never sent back
    // to %RETRY%), once; the forwarder saw the refusals; nothing went to the DLQ.
    expect(refusals).toBeGreaterThanOrEqual(1);
    expect(copies.filter((c) => c.msgId === failing.msgId).map((c) => c.reconsumeTimes)).toEqual([0]);
    expect(copies.some((c) => c.msgId === next.msgId)).toBe(true);
    expect(bridge.status().routes[group]!.stats.forwardFailed).toBeGreaterThanOrEqual(1);
    expect(await receiveAll(target.dlqUrl)).toEqual([]);
  }, 150_000);
});

describe('RocketMQ 4.7.1 → two bridges in one group (rebalance)', () => {
  it('loses nothing while a second bridge joins and the first leaves by SIGTERM, as in a rolling deploy', async () => {
    // Prepare
    const group = `points-v4-${randomUUID().slice(0, 6)}`;
    const target = await queues('rebalance4');
    const env = bridgeEnv(config(group, target));
    const started = (bridge: BridgeChildProcess) =>
      bridge.waitFor(
        'bridge started',
        (lines) => (lines.some((l) => l.message === 'bridge started') ? true : undefined),
        60_000,
      );
    const first = new BridgeChildProcess(env);
    children.push(first);
    await started(first);

    // Act: orders keep coming while the second bridge joins (the client rebalances every 10 s, so
    // for a while both pull the same queues) and the first drains and leaves.
    const sent: string[] = [];
    const sendOrders = async (from: number, count: number) => {
      for (let i = from; i < from + count; i++) {
        sent.push((await send('PAID', { orderNo: `SO-B${i}`, userId: 'u7', points: 1 })).msgId);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await sendOrders(0, 20);
    const second = new BridgeChildProcess(env);
    children.push(second);
    await started(second);
    await sendOrders(20, 20);
    first.kill('SIGTERM');
    const firstExit = await first.exited;
    await sendOrders(40, 20);
    await second.waitFor(
      'every order forwarded by one bridge or the other',
      () => {
        const forwarded = new Set([...forwardedMsgIds(first.lines), ...forwardedMsgIds(second.lines)]);
        return sent.every((id) => forwarded.has(id)) ? true : undefined;
      },
      60_000,
    );
    second.kill('SIGTERM');
    await second.exited;

    // Assess: the first bridge drained cleanly; every order reached the queue, some possibly twice.
    expect(firstExit.code).toBe(0);
    // A new group starts at the beginning of these young queues: earlier tests' orders come too.
    const copies = (await receiveAll(target.queueUrl)).filter((c) => c.keys[0]?.startsWith('SO-B'));
    expect(new Set(copies.map((c) => c.msgId))).toEqual(new Set(sent));
    console.log(
      `rebalance on RocketMQ 4.7.1: ${sent.length} sent, ${copies.length} forwarded, ${copies.length - sent.length} delivered twice`,
    );
  }, 120_000);
});

describe('RocketMQ 4.7.1 → an orderly group’s FIFO route', () => {
  const STATUSES = ['WAIT_PAY', 'PAID', 'SHIPPED', 'FINISHED'] as const;

  /** Takes everything off a FIFO queue, with each message's group, in the order SQS hands it out. */
  async function drainFifo(queueUrl: string): Promise<{ groupId: string; envelope: RocketMQMessage }[]> {
    const out: { groupId: string; envelope: RocketMQMessage }[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ['MessageGroupId'],
        }),
      );
      if (Messages.length === 0) return out;
      out.push(...Messages.map((m) => ({ groupId: m.Attributes!.MessageGroupId!, envelope: parseEnvelope(m.Body!) })));
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    }
  }

  it('keeps every order’s events in producer order across a SIGKILL between forward and offset commit and a failed forward', async () => {
    // Prepare: six orders' lifecycles, interleaved, each order on the queue its sharding key selects (as an orderly
    // producer sends them).
    const group = `order-status-v4-${randomUUID().slice(0, 6)}`;
    const base = `orderly4-${randomUUID().slice(0, 8)}`;
    const fifo = { FifoQueue: 'true' };
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${base}.fifo`, Attributes: fifo })))
      .QueueUrl!;
    const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${base}-dlq.fifo`, Attributes: fifo })))
      .QueueUrl!;
    const orders = ['SO-O1', 'SO-O2', 'SO-O3', 'SO-O4', 'SO-O5', 'SO-O6'];
    const sent = new Map<string, string[]>(orders.map((o) => [o, []]));
    for (const status of STATUSES) {
      for (const orderNo of orders) {
        const message = new Message(ORDER_TOPIC, 'STATUS', JSON.stringify({ orderNo, status }));
        message.keys = [orderNo];
        // The sharding key as Java producers name it, and as ali-ons' producer does: both are the message group.
        message.properties[orders.indexOf(orderNo) % 2 === 0 ? '__SHARDINGKEY' : '__SHARDING_KEY'] = orderNo;
        message.properties.UNIQ_KEY = ids.next();
        await sendOrdered(producer!, message, orderNo);
        sent.get(orderNo)!.push(message.properties.UNIQ_KEY);
      }
    }
    const route = {
      group,
      topic: ORDER_TOPIC,
      tagExpression: 'STATUS',
      fifo: true,
      target: { kind: 'sqs' as const, queueUrl },
      dlqUrl,
    };
    // Small receives, so the run spans several batches and the kill lands in the middle.
    const v4Config = { ...config(group, { queueUrl, dlqUrl }), receiveBatchSize: 4, routes: [route] };

    // Act 1: a bridge forwards a few batches, then dies by SIGKILL after a forward, before its offset commit.
    const killed = new BridgeChildProcess(
      bridgeEnv(v4Config, { BRIDGE_FAULT: 'sigkill-before-ack', BRIDGE_FAULT_AFTER: '6' }),
    );
    children.push(killed);
    const killedExit = await killed.exited;
    const inHandWhenKilled = faultedMsgIds(killed.lines, 'sigkill-before-ack');

    // Act 2: a new bridge takes over the group; SQS refuses the two first calls carrying SO-O3's SHIPPED.
    const faultySqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
    let refusals = 0;
    failBatchRequests(
      faultySqs,
      (bodies) => refusals < 2 && bodies.some((b) => b.includes('SO-O3') && b.includes('SHIPPED')) && ++refusals > 0,
    );
    const bridge = new Bridge(parseBridgeConfig(v4Config), {
      sqs: faultySqs,
      logger: new Logger({ serviceName: 'bridge-test', logLevel: 'ERROR' }),
    });
    await bridge.start();
    const everything = new Set([...sent.values()].flat());
    const landed: { groupId: string; envelope: RocketMQMessage }[] = [];
    const deadline = Date.now() + 120_000;
    while (
      Date.now() < deadline &&
      !(landed.length >= everything.size && [...everything].every((id) => landed.some((l) => l.envelope.msgId === id)))
    ) {
      landed.push(...(await drainFifo(queueUrl)));
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await bridge.stop();
    landed.push(...(await drainFifo(queueUrl)));

    // Assess: the first bridge really died holding forwarded, un-committed messages; the forward really failed.
    expect(killedExit.signal).toBe('SIGKILL');
    expect(inHandWhenKilled.length).toBeGreaterThan(0);
    expect(refusals).toBe(2);
    expect(bridge.status().routes[group]!.stats.forwardFailed).toBeGreaterThanOrEqual(1);
    // Assess: each order is one message group (its sharding key) holding its events once each, in the order sent.
    const byGroup = Map.groupBy(landed, (l) => l.groupId);
    expect([...byGroup.keys()].sort()).toEqual(orders);
    for (const orderNo of orders) {
      // (Precondition: the producer kept the order on one RocketMQ queue.)
      expect(new Set(byGroup.get(orderNo)!.map((l) => l.envelope.queueId)).size).toBe(1);
      expect(byGroup.get(orderNo)!.map((l) => l.envelope.msgId)).toEqual(sent.get(orderNo));
      expect(byGroup.get(orderNo)!.map((l) => JSON.parse(l.envelope.body).status)).toEqual([...STATUSES]);
    }
    // The orders spread over several RocketMQ queues, which the route consumed one at a time.
    expect(new Set(landed.map((l) => l.envelope.queueId)).size).toBeGreaterThan(1);
    expect(await receiveAll(dlqUrl)).toEqual([]);
  }, 240_000);
});

describe('RocketMQ 4.7.1 with ACL → bridge', () => {
  const acl = { accessKey: 'bridge-e2e', secretKey: 'bridge-e2e-secret' };
  let secured: LocalRocketMQ4 | undefined;

  beforeAll(async () => {
    secured = await startLocalRocketMQ4({ topics: [{ name: ORDER_TOPIC, queues: 2 }], acl, brokerName: 'broker-acl' });
  });

  afterAll(async () => {
    await secured?.stop();
  });

  // ali-ons shares one connection set per instance name within a process (whatever the name server
  // or credentials): clients of this second cluster need names of their own.
  const producerWith = async (secretKey: string) => {
    const p = new Producer({
      instanceName: `acl-${randomUUID().slice(0, 6)}`,
      nameSrv: secured!.namesrvAddr,
      httpclient: NO_ADDRESS_SERVER,
      producerGroup: `order-service-${randomUUID().slice(0, 6)}`,
      logger: SILENT,
      accessKey: acl.accessKey,
      secretKey,
      retryTimesWhenSendFailed: 0,
    });
    p.on('error', () => undefined);
    await p.ready();
    return p;
  };

  it('signs every request with the credentials from the environment; the broker refuses a wrong secret', async () => {
    // Prepare: ACL is enforced (a wrong secret cannot send), and the right one can.
    const intruder = await producerWith('not-the-secret');
    await expect(intruder.send(new Message(ORDER_TOPIC, 'PAID', '{}'))).rejects.toThrow(/still failed.*broker-acl/);
    await intruder.close().catch(() => undefined); // unregistering is signed too, and refused
    const orders = await producerWith(acl.secretKey);
    const message = new Message(ORDER_TOPIC, 'PAID', JSON.stringify({ orderNo: 'SO-A', userId: 'u1', points: 1 }));
    message.keys = ['SO-A'];
    message.properties.UNIQ_KEY = ids.next();
    await orders.send(message);
    await orders.close();
    const target = await queues('acl4');

    // Act: the bridge gets the credentials as ECS passes them from Secrets Manager.
    const group = `points-acl-${randomUUID().slice(0, 6)}`;
    const bridge = new BridgeChildProcess(
      bridgeEnv(
        { ...config(group, target), nameServer: secured!.namesrvAddr },
        { ROCKETMQ_ACCESS_KEY: acl.accessKey, ROCKETMQ_SECRET_KEY: acl.secretKey },
      ),
    );
    children.push(bridge);
    await bridge.waitFor(
      'the order forwarded',
      (lines) => (forwardedMsgIds(lines).includes(message.properties.UNIQ_KEY!) ? true : undefined),
      60_000,
    );
    bridge.kill('SIGTERM');
    expect((await bridge.exited).code).toBe(0);

    // Assess
    expect((await receiveAll(target.queueUrl)).map((c) => [c.msgId, c.brokerName])).toEqual([
      [message.properties.UNIQ_KEY, 'broker-acl'],
    ]);
  }, 120_000);
});
