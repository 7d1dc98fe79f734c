import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { format } from 'node:util';
import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type LocalRocketMQ4, startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { type Consumer, Message, type MessageQueue, type Producer } from 'ali-ons';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StartWithoutOffset } from '../src/bridge-config.ts';
import { GroupWithoutOffsetsError } from '../src/group-takeover.ts';
import { RemotingRouteConsumer } from '../src/remoting-route-consumer.ts';
import type { ReceivedMessage } from '../src/types.ts';
import { BrokerProbe } from './support/broker-probe.ts';
import { sendWithJavaClient } from './support/java-producer.ts';
import { closeLegacyConsumer, legacyGroupConsumer } from './support/legacy-group-consumer.ts';
import { until } from './support/master-slave-switchover.ts';
import { orderServiceProducer } from './support/rocketmq4-producer.ts';

/**
 * RocketMQ 4.7.1 (name server + broker, real JVMs): a route taking over a consumer group other
 * consumers ran, as the cutover of docs/migration.md does with the legacy group. One cluster for
 * the file; each scenario has its own groups.
 */
const TOPIC = 'TAKEOVER_TOPIC';
const OTHER_TOPIC = 'OTHER_TOPIC';
/** One queue, so that the broker's search by time runs over this file's messages alone. */
const ONE_QUEUE_TOPIC = 'ONE_QUEUE_TOPIC';
const QUEUE_IDS = [0, 1, 2, 3];
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
/** ali-ons' offset store, into which a test injects a failed read-back (no broker fails one on demand). */
const RemoteBrokerOffsetStore = createRequire(import.meta.url)('ali-ons/lib/store/remote_broker.js') as {
  prototype: { fetchConsumeOffsetFromBroker(mq: MessageQueue): Promise<number> };
};

let rocketMq: LocalRocketMQ4 | undefined;
let producer: Producer | undefined;
let probe: BrokerProbe | undefined;
const ids = new MsgIdGenerator('7F000001', 0x2828);

beforeAll(async () => {
  rocketMq = await startLocalRocketMQ4({
    topics: [
      { name: TOPIC, queues: QUEUE_IDS.length },
      { name: OTHER_TOPIC, queues: 1 },
      { name: ONE_QUEUE_TOPIC, queues: 1 },
    ],
  });
  producer = await orderServiceProducer(rocketMq.namesrvAddr);
  probe = await BrokerProbe.open(rocketMq.namesrvAddr);
});

afterAll(async () => {
  await probe?.close();
  await producer?.close();
  await rocketMq?.stop();
});

/** Where each message `send` sent was stored, by msgId. */
const placed = new Map<string, { queueId: number; queueOffset: number }>();

async function send(topic: string, tag: string, count: number): Promise<string[]> {
  const sent: string[] = [];
  for (let i = 0; i < count; i++) {
    const message = new Message(topic, tag, JSON.stringify({ orderNo: `SO-${randomUUID().slice(0, 8)}` }));
    message.properties.UNIQ_KEY = ids.next();
    const result = await producer!.send(message);
    // ali-ons reads the queue id from the response header as text.
    placed.set(message.properties.UNIQ_KEY, {
      queueId: Number(result.messageQueue.queueId),
      queueOffset: result.queueOffset,
    });
    sent.push(message.properties.UNIQ_KEY);
  }
  return sent;
}

/** The topic's queue ends once its queues hold every message of `sent` (see BrokerProbe.maxOffsetsHolding). */
function queueEndsAfter(sent: readonly string[]): Promise<number[]> {
  return probe!.maxOffsetsHolding(
    rocketMq!.brokerAddr,
    TOPIC,
    QUEUE_IDS,
    sent.map((id) => placed.get(id)!),
  );
}

function routeOptions(group: string) {
  return {
    nameServers: [rocketMq!.namesrvAddr],
    consumerGroup: group,
    topic: TOPIC,
    tagExpression: '*',
    batchSize: 32,
    batchesInFlight: 1,
    awaitDurationMs: 5_000,
    redeliverAfterMs: 60_000,
    persistOffsetIntervalMs: 1_000,
    logger: SILENT,
  };
}

function routeSource(group: string, errors: string[] = [], startWithoutOffset?: StartWithoutOffset) {
  return new RemotingRouteConsumer({
    ...routeOptions(group),
    logger: { ...SILENT, error: (...args: unknown[]) => errors.push(format(...args)) },
    ...(startWithoutOffset ? { takeOver: { startWithoutOffset } } : {}),
  });
}

/** Receives and acks until a receive comes back empty (5 s), or until `stop` says enough. */
async function drain(source: RemotingRouteConsumer, stop: (all: ReceivedMessage[]) => boolean = () => false) {
  const all: ReceivedMessage[] = [];
  for (let i = 0; i < 40; i++) {
    const batch = await source.receive();
    await source.ack(batch);
    all.push(...batch);
    if (batch.length === 0 || stop(all)) return all;
  }
  throw new Error(`the route kept receiving: ${all.length} messages`);
}

/**
 * Closes a legacy consumer that has sent `count` messages back, once it moved its offsets past them (the client
 * does so only after logging the send-back), and waits until `%RETRY%<group>` holds them (after their 10 s delay).
 */
async function closeWithRetriesStored(legacy: Consumer, count: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  await closeLegacyConsumer(legacy, probe!, rocketMq!.brokerAddr);
  const retryTopic = `%RETRY%${legacy.consumerGroup}`;
  await until(
    `${count} retries stored in the retry topic`,
    async () => ((await probe!.maxOffsets(rocketMq!.brokerAddr, retryTopic, [0]))[0]! >= count ? true : undefined),
    40_000,
  );
}

describe('RocketMQ 4.7.1: a route taking over a consumer group', () => {
  it('refuses a group without a committed offset on some queue, naming the group and the queues; once the group has them, starts at them', async () => {
    // Prepare: the legacy consumers consumed what was sent so far, and committed on queues 0 and 1 only
    const group = `legacy-points-${randomUUID().slice(0, 6)}`;
    const before = await send(TOPIC, 'PAID', 8);
    const consumedUpTo = await queueEndsAfter(before);
    await probe!.commitOffsets(rocketMq!.brokerAddr, group, TOPIC, consumedUpTo.slice(0, 2));

    // Act
    const refused = await routeSource(group, [], 'refuse')
      .start()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    await probe!.commitOffsets(rocketMq!.brokerAddr, group, TOPIC, consumedUpTo);
    const after = await send(TOPIC, 'PAID', 8);
    const takeOver = routeSource(group, [], 'refuse');
    await takeOver.start();
    const received = await drain(takeOver);
    await takeOver.stop();

    // Assess: the refusal names the group, the topic and the two queues; the takeover forwards only what came after
    expect(refused).toBeInstanceOf(GroupWithoutOffsetsError);
    const b = rocketMq!.brokerName;
    expect((refused as Error).message).toContain(
      `taking over consumer group ${group} on topic ${TOPIC}: the group has no committed offset on 2 queue(s) (${b}:2, ${b}:3)`,
    );
    expect((refused as Error).message).toContain('takeOver.startWithoutOffset "first"');
    expect(received.map((m) => m.msgId).sort()).toEqual([...after].sort());
    expect(received.map((m) => m.msgId)).not.toContain(before[0]);
  }, 120_000);

  it('starts the queues of a group without offsets at their first message when the route says so', async () => {
    // Prepare: a group that never consumed, and what the topic holds
    const group = `legacy-coupons-${randomUUID().slice(0, 6)}`;
    const held = (await probe!.maxOffsets(rocketMq!.brokerAddr, TOPIC, QUEUE_IDS)).reduce((a, b) => a + b, 0);

    // Act
    const source = routeSource(group, [], 'first');
    await source.start();
    const received = await drain(source);
    await source.stop();

    // Assess
    expect(held).toBeGreaterThan(0);
    expect(new Set(received.map((m) => m.msgId)).size).toBe(held);
  }, 120_000);

  it('starts the queues of a group without offsets at a timestamp, commits where it started them, and keeps the offsets the group has', async () => {
    // Prepare: the group committed on queue 0 only; messages stored before the instant, then after it
    const group = `legacy-orders-${randomUUID().slice(0, 6)}`;
    const atStart = await probe!.maxOffsets(rocketMq!.brokerAddr, TOPIC, QUEUE_IDS);
    await probe!.commitOffsets(rocketMq!.brokerAddr, group, TOPIC, atStart.slice(0, 1));
    const before = await send(TOPIC, 'PAID', 12);
    const atInstant = await queueEndsAfter(before);
    // Store times are in milliseconds; the pauses keep the instant clear of both sends.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const instant = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const after = await send(TOPIC, 'PAID', 12);

    // Act
    const warnings: string[] = [];
    const source = new RemotingRouteConsumer({
      ...routeOptions(group),
      logger: { ...SILENT, warn: (...args: unknown[]) => warnings.push(format(...args)) },
      takeOver: { startWithoutOffset: { timestamp: instant } },
    });
    await source.start();
    const received = await drain(source);
    await source.stop();
    const committedAtStart = await probe!.consumerOffsets(rocketMq!.brokerAddr, group, TOPIC, QUEUE_IDS);

    // Assess: everything after the instant; before it, queue 0's from the group's own offset, and on the other queues
    // at most the one message the broker found nearest the instant (4.7.1 answers the closest message in time)
    const ids = received.map((m) => m.msgId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => after.includes(id)).sort()).toEqual([...after].sort());
    const earlier = received.filter((m) => before.includes(m.msgId));
    expect(earlier.filter((m) => m.queueId === 0)).toHaveLength(atInstant[0]! - atStart[0]!);
    const startedAt = [1, 2, 3].map((q) => {
      const first = Math.min(...earlier.filter((m) => m.queueId === q).map((m) => m.queueOffset!), atInstant[q]!);
      expect(first).toBeGreaterThanOrEqual(atInstant[q]! - 1);
      return `${rocketMq!.brokerName}:${q}@${first}`;
    });
    expect(warnings.join('\n')).toContain(
      `taking over ${group} on ${TOPIC}: queues without an offset start at ${instant}: ${startedAt.join(', ')}`,
    );
    expect(committedAtStart.every((offset) => offset! >= atInstant[3]!)).toBe(true);
  }, 120_000);

  it('starts a queue taken over at a timestamp at the first of several messages stored in that millisecond, never later', async () => {
    // Prepare: one message, then five in one batch (one store timestamp), then one more, a second apart
    const pause = () => new Promise((resolve) => setTimeout(resolve, 1_100));
    const one = (tag: string) => ({ topic: ONE_QUEUE_TOPIC, tags: tag, keys: tag, body: Buffer.from(tag) });
    const [earlier] = await sendWithJavaClient(rocketMq!.namesrvAddr, [one('EARLIER')]);
    await pause();
    const batch = await sendWithJavaClient(
      rocketMq!.namesrvAddr,
      ['B1', 'B2', 'B3', 'B4', 'B5'].map((tag) => ({ ...one(tag), batch: 'same-ms' })),
    );
    await pause();
    const [later] = await sendWithJavaClient(rocketMq!.namesrvAddr, [one('LATER')]);
    const reader = new RemotingRouteConsumer({
      ...routeOptions(`same-ms-reader-${randomUUID().slice(0, 6)}`),
      topic: ONE_QUEUE_TOPIC,
      takeOver: { startWithoutOffset: 'first' },
    });
    await reader.start();
    const stored = await drain(reader);
    await reader.stop();
    const batchStoredAt = new Set(stored.filter((m) => m.tag?.startsWith('B')).map((m) => m.storeTimestamp));
    expect(stored).toHaveLength(7);
    expect(batchStoredAt.size).toBe(1);
    const [instant] = [...batchStoredAt] as number[];

    // Act: a group without an offset taken over at the batch's millisecond
    const source = new RemotingRouteConsumer({
      ...routeOptions(`legacy-same-ms-${randomUUID().slice(0, 6)}`),
      topic: ONE_QUEUE_TOPIC,
      takeOver: { startWithoutOffset: { timestamp: new Date(instant!).toISOString() } },
    });
    await source.start();
    const received = await drain(source);
    await source.stop();

    // Assess: the whole batch and what came after; of what came before, at most the one message nearest the instant
    const ids = received.map((m) => m.msgId);
    expect(ids.filter((id) => id !== earlier!.msgId)).toEqual([...batch, later!].map((m) => m.msgId));
  }, 120_000);

  it('leaves a queue whose offset could not be read for the next rebalance instead of starting it at its end', async () => {
    // Prepare: a group with a backlog on every queue, and the first read of its offset on queue 0 failing as a timeout
    const group = `points-offset-read-${randomUUID().slice(0, 6)}`;
    await probe!.commitOffsets(
      rocketMq!.brokerAddr,
      group,
      TOPIC,
      await probe!.maxOffsets(rocketMq!.brokerAddr, TOPIC, QUEUE_IDS),
    );
    const backlog = await send(TOPIC, 'PAID', 16);
    const offsets = RemoteBrokerOffsetStore.prototype;
    const read = offsets.fetchConsumeOffsetFromBroker;
    let failed = 0;
    offsets.fetchConsumeOffsetFromBroker = async function (this: { groupName: string }, mq: MessageQueue) {
      if (this.groupName === group && mq.topic === TOPIC && mq.queueId === 0 && failed++ === 0)
        throw Object.assign(new Error('invoke timeout'), { name: 'ResponseTimeoutError' });
      return read.call(this, mq);
    };
    const warnings: string[] = [];

    // Act
    const source = new RemotingRouteConsumer({
      ...routeOptions(group),
      logger: { ...SILENT, warn: (...args: unknown[]) => warnings.push(format(...args)) },
    });
    try {
      await source.start();
      const received: ReceivedMessage[] = [];
      // Queue 0 waits for the client's next rebalance (10 s), past the receives that come back empty meanwhile.
      for (const deadline = Date.now() + 40_000; Date.now() < deadline && received.length < backlog.length; ) {
        const batch = await source.receive();
        await source.ack(batch);
        received.push(...batch);
      }

      // Assess: the whole backlog, queue 0's after the next rebalance read its offset
      expect(received.map((m) => m.msgId).sort()).toEqual([...backlog].sort());
      expect(failed).toBeGreaterThan(1);
      expect(warnings.join('\n')).toContain(
        `reading ${group}'s committed offset on ${TOPIC} ${rocketMq!.brokerName}:0 failed (invoke timeout); ` +
          'the queue is not started at its end',
      );
    } finally {
      offsets.fetchConsumeOffsetFromBroker = read;
      await source.stop();
    }
  }, 120_000);

  it('forwards a taken-over %RETRY% message of a tag the route does not subscribe to, as RocketMQ hands a group its retries', async () => {
    // Prepare: the legacy consumer subscribed every tag and failed a CANCELLED order; the route forwards PAID only
    const group = `legacy-narrowed-${randomUUID().slice(0, 6)}`;
    const [cancelled] = await send(TOPIC, 'CANCELLED', 1);
    const sentBack = Promise.withResolvers<void>();
    const legacy = legacyGroupConsumer(rocketMq!.namesrvAddr, group, () => sentBack.resolve());
    legacy.subscribe(TOPIC, '*', async (msg: Message) => {
      if (msg.properties.UNIQ_KEY === cancelled) throw new Error('the legacy consumer fails this order');
    });
    await sentBack.promise;
    await closeWithRetriesStored(legacy, 1);

    // Act
    const warnings: string[] = [];
    const source = new RemotingRouteConsumer({
      ...routeOptions(group),
      tagExpression: 'PAID',
      logger: { ...SILENT, warn: (...args: unknown[]) => warnings.push(format(...args)) },
    });
    await source.start();
    const received = await drain(source, (all) => all.some((m) => m.msgId === cancelled));
    await source.stop();

    // Assess: forwarded with the legacy consumer's count and its own tag, for the consumer to classify; and said
    expect(received.filter((m) => m.msgId === cancelled)).toEqual([
      // The broker held the send-back on level 3 + reconsumeTimes (10 s), the level it delivers it with.
      expect.objectContaining({ topic: TOPIC, tag: 'CANCELLED', reconsumeTimes: 1, delayTimeLevel: 3 }),
    ]);
    expect(warnings.join('\n')).toContain(
      `%RETRY%${group} holds message ${cancelled} of tag "CANCELLED", which the route's tag expression PAID does not match: forwarded`,
    );
  }, 120_000);

  it('forwards a taken-over %RETRY% message with its reconsumeTimes and original topic, and keeps a retry of another topic unconsumed with an error', async () => {
    // Prepare: the legacy consumer subscribed two topics and failed one message of each: both went back to %RETRY%<group>
    const group = `legacy-multi-${randomUUID().slice(0, 6)}`;
    let sentBack = 0;
    const legacy = legacyGroupConsumer(rocketMq!.namesrvAddr, group, () => sentBack++);
    const fail = async (msg: Message) => {
      if (msg.tags === 'FAIL') throw new Error('the legacy consumer fails this message');
    };
    legacy.subscribe(TOPIC, '*', fail);
    legacy.subscribe(OTHER_TOPIC, '*', fail);
    const [own] = await send(TOPIC, 'FAIL', 1);
    const [foreign] = await send(OTHER_TOPIC, 'FAIL', 1);
    await until('the legacy consumer sent both back', async () => (sentBack >= 2 ? true : undefined), 30_000);
    await closeWithRetriesStored(legacy, 2);
    const retryTopic = `%RETRY%${group}`;

    // Act: the bridge's route of TOPIC takes the group over
    const errors: string[] = [];
    const source = routeSource(group, errors);
    await source.start();
    const received = await drain(source, (all) => all.some((m) => m.msgId === own) && errors.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await source.stop();

    // Assess: its own retry forwarded as the legacy consumer left it, the other topic's not, and not skipped
    const retried = received.filter((m) => m.msgId === own);
    expect(retried).toHaveLength(1);
    expect(retried[0]).toMatchObject({ topic: TOPIC, reconsumeTimes: 1, tag: 'FAIL' });
    expect(received.map((m) => m.msgId)).not.toContain(foreign);
    expect(errors.join('\n')).toContain(
      `%RETRY%${group} holds message ${foreign} of topic ${OTHER_TOPIC}, which this route (topic ${TOPIC}) does not forward: it stays unconsumed`,
    );
    const [committed] = await probe!.consumerOffsets(rocketMq!.brokerAddr, group, retryTopic, [0]);
    const [stored] = await probe!.maxOffsets(rocketMq!.brokerAddr, retryTopic, [0]);
    expect(committed).toBeLessThan(stored!);
  }, 150_000);
});
