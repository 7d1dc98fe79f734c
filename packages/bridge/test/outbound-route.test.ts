import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { POINTS } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import {
  awardAnnouncements,
  awardWrites,
  type OrderPaid,
  orderPaidFingerprintFields,
  POINTS_AWARDED_TAG,
  parseOrderPaid,
} from '@rocketmq-lambda/consumers/points/index.ts';
import { createDynamoDb, createEventBridge, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  type ConsumerGroupDefinition,
  eventIdOf,
  OUTBOX_EVENT_ID_PROPERTY,
  type OutboxItem,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer, type RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { RelayReport } from '@rocketmq-lambda/runtime/outbox/index.ts';
import {
  buildEnvelope,
  parseEnvelope,
  type RocketMQMessage,
  type SigningKeyRing,
  serializeEnvelope,
  signEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { injectFaults } from '@rocketmq-lambda/tools/instrumentation/fault-injection.ts';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { localRelay, outboxStreamClients } from '@rocketmq-lambda/tools/testing/outbox-stream.ts';
import { IMMEDIATE_RETRIES, orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { queueDepth, readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { type BridgeConfigInput, parseBridgeConfig } from '../src/bridge-config.ts';
import { OUTBOUND_REFUSAL_KIND, OutboundRefusalReason } from '../src/outbound-route.ts';
import { bridgeSigningKey } from './support/bridge-signing-key.ts';
import { remotingBridgeConfig } from './support/remoting-bridge-config.ts';
import { sharedRocketMQ4, sharedRocketMQ5 } from './support/shared-rocketmq.ts';

/**
 * The outbox's RocketMQ target on real brokers (5.5.0 and 4.7.1), in two tests per version.
 *
 * The bridge's outbound route: the relay's signed envelope on the outbound queue → the bridge produces
 * it → the RocketMQ topic → the same bridge's forward route → the downstream group's SQS queue → a
 * downstream consumer keyed on the event id. The relay's redelivery is the same envelope on the
 * outbound queue twice: two RocketMQ messages of one event id, and one effect per order downstream.
 *
 * The whole chain (issue #36's "must show"): a publishing consumer consumes orders (one delivered twice,
 * one re-sent by the application with a new msgId) → one outbox item per order, in the award's
 * transaction → the production relay on the table's stream, killed between one item's send and its
 * mark (a fresh relay instance takes over from the stream's checkpoint) → the outbound route → RocketMQ
 * → the forward route → the downstream consumer: one effect per order.
 */
const RELAYING_GROUP = 'outbox-test-group';
const SILENT_LOGGER = new Logger({ serviceName: 'outbound-test', logLevel: 'SILENT' });

type Fixture = Awaited<ReturnType<typeof pointsFixture>>;
let sqs: SQSClient;
const bridges: Bridge[] = [];

beforeAll(async () => {
  sqs = (await pointsFixture()).sqs;
});

afterAll(async () => {
  await Promise.all(bridges.map((b) => b.stop()));
});

/** The relay's envelope of one outgoing message, as docs/outbox.md has it: msgId = event id, signed with the stage key. */
async function relayedEnvelope(
  ring: SigningKeyRing,
  topic: string,
  order: { orderNo: string; userId: string; points: number },
) {
  const eventId = eventIdOf(RELAYING_GROUP, order.orderNo, 0);
  const committedAt = Date.now() - 1_000;
  const envelope = buildEnvelope({
    topic,
    msgId: eventId,
    tags: 'PAID',
    keys: [eventId, order.orderNo],
    body: JSON.stringify(order),
    userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId, origin: 'outbox' },
    bornTimestamp: committedAt,
    storeTimestamp: committedAt,
    cluster: `outbox-${RELAYING_GROUP}`,
  });
  return { eventId, body: serializeEnvelope(signEnvelope(envelope, await ring.current())) };
}

/** What a RocketMQ consumer group subscribes to. */
interface Subscription {
  readonly topic: string;
  readonly tagExpression: string;
}

/**
 * A points consumer on the fixture's tables, subscribed to `subscription`, whose idempotency key is
 * the event id, never the msgId. It publishes nothing.
 */
function eventKeyedConsumer(
  points: Fixture,
  subscription: Subscription,
  ring: SigningKeyRing,
  reports: RecordReport[],
) {
  const downstream = defineConsumer(
    { ...POINTS, ...subscription, publishes: undefined },
    {
      parsePayload: (body, message) => ({ ...parseOrderPaid(body), eventId: eventIdFrom(message) }),
      keyOf: (award) => award.eventId,
      fingerprintFields: orderPaidFingerprintFields,
      business: (wiring) => (msg) => ({ writes: awardOf(wiring, msg) }),
    },
  );
  return downstream.create({
    aws: emulatorConfig(inject('emulatorEndpoint')),
    tables: points.resources.tables,
    deadLetterQueueUrl: points.resources.queues[POINTS.group]!.deadLetter.url,
    schedule: IMMEDIATE_RETRIES,
    dynamoDb: points.dynamoDb,
    envelopeKeys: ring,
    onReport: (r) => reports.push(r),
  });
}

/**
 * A transactional group like the points group that announces each award (`POINTS_AWARDED`) on `topic`,
 * declared with target `rocketmq`: the award, its dedup record and its outbox item in one transaction.
 */
function rocketMqPublisher(topic: string) {
  const entry = {
    ...POINTS,
    publishes: [{ topic, tags: [POINTS_AWARDED_TAG], target: 'rocketmq' }],
  } satisfies ConsumerGroupDefinition;
  return defineConsumer(entry, {
    parsePayload: parseOrderPaid,
    keyOf: (order) => order.orderNo,
    fingerprintFields: orderPaidFingerprintFields,
    business: (wiring) => (msg) => ({
      writes: awardOf(wiring, msg),
      publishes: awardAnnouncements(msg.payload).map((announced) => ({ ...announced, topic })),
    }),
  });
}

/** The points business's writes for one award: its ledger entry and its balance increment. */
function awardOf(
  { tables, now }: { tables: Parameters<typeof awardWrites>[2]; now: () => number },
  msg: { payload: OrderPaid; message: RocketMQMessage; fingerprint: string },
) {
  return awardWrites(msg.payload, { msgId: msg.message.msgId, fingerprint: msg.fingerprint }, tables, new Date(now()));
}

/** Where docs/outbox.md says a downstream consumer finds the event id: the property, else the first key. */
function eventIdFrom(message: RocketMQMessage): string {
  return message.userProperties[OUTBOX_EVENT_ID_PROPERTY] ?? message.keys[0]!;
}

async function queue(name: string): Promise<string> {
  return (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-${randomUUID().slice(0, 8)}` }))).QueueUrl!;
}

/** A forward route's group and subscription, and where it delivers. */
interface ForwardRoute extends Subscription {
  readonly group: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
}

interface Scenario {
  readonly name: string;
  /** The topic of the outbound route's test. */
  readonly topic: string;
  /** The topic the chain's publishing group announces its awards on. */
  readonly chainTopic: string;
  /** The bridge's configuration on the shared cluster, without signing and outbound. */
  readonly config: (route: ForwardRoute) => Promise<BridgeConfigInput>;
}

/** The bridge's forward route of `route`, as its configuration has it. */
function forwardRoute({ group, topic, tagExpression, queueUrl, dlqUrl }: ForwardRoute) {
  return { group, topic, tagExpression, target: { kind: 'sqs' as const, queueUrl }, dlqUrl };
}

const ROCKETMQ5: Scenario = {
  name: 'RocketMQ 5.5.0 (gRPC producer: the client mints the msgId)',
  topic: 'OUTBOUND5_ORDER_TOPIC',
  chainTopic: 'OUTBOX_CHAIN5_POINTS_TOPIC',
  config: async (route) => {
    const rocketMq = await sharedRocketMQ5({ topics: [{ name: route.topic }], groups: [{ name: route.group }] });
    return {
      proxyEndpoint: rocketMq.proxyEndpoint,
      clusterName: rocketMq.clusterName,
      sslEnabled: false,
      invisibleDurationMs: 10_000,
      awaitDurationMs: 5_000,
      health: { host: '127.0.0.1', port: 0 },
      routes: [forwardRoute(route)],
    };
  },
};

const ROCKETMQ4: Scenario = {
  name: 'RocketMQ 4.7.1 (remoting producer: UNIQ_KEY = event id)',
  topic: 'OUTBOUND4_ORDER_TOPIC',
  chainTopic: 'OUTBOX_CHAIN4_POINTS_TOPIC',
  config: async (route) => {
    const rocketMq = await sharedRocketMQ4({ topics: [{ name: route.topic, queues: 4 }] });
    return remotingBridgeConfig(rocketMq, [forwardRoute(route)]);
  },
};

/**
 * The stage key, and a bridge on the scenario's cluster with both routes: the outbound queue (and its
 * DLQ) → RocketMQ, and `subscription` → the downstream fixture's source queue (its DLQ the route's).
 */
async function startBridge(scenario: Scenario, subscription: Subscription, downstream: Fixture) {
  const { secretId, ring } = await bridgeSigningKey();
  const downstreamQueues = downstream.resources.queues[POINTS.group]!;
  const outbound = { queueUrl: await queue('outbound'), dlqUrl: await queue('outbound-dlq') };
  const config = parseBridgeConfig({
    ...(await scenario.config({
      ...subscription,
      group: `outbound-forward-${randomUUID().slice(0, 6)}`,
      queueUrl: downstreamQueues.source.url,
      dlqUrl: downstreamQueues.deadLetter.url,
    })),
    signing: { secretId },
    outbound: { ...outbound, waitTimeSeconds: 1 },
  });
  const bridge = new Bridge(config, { sqs, signingKeys: ring, logger: SILENT_LOGGER });
  bridges.push(bridge);
  await bridge.start();
  return { bridge, ring, outbound };
}

/** Polls the downstream queue with the consumer, as Lambda would, until `done` or the deadline; the envelopes it handed over. */
async function consumeUntil(
  points: Fixture,
  handler: ReturnType<typeof eventKeyedConsumer>,
  done: () => boolean,
): Promise<RocketMQMessage[]> {
  const source = points.resources.queues[POINTS.group]!.source;
  const seen: RocketMQMessage[] = [];
  const deadline = Date.now() + 45_000;
  while (!done() && Date.now() < deadline) {
    const poll = await pollOnce({
      sqs,
      queueUrl: source.url,
      queueArn: source.arn,
      handler,
      functionName: 'downstream-consumer',
    });
    seen.push(...(poll.records ?? []).map((r) => parseEnvelope(r.body)));
    if (poll.received === 0) await sleep(200);
  }
  return seen;
}

describe.each([ROCKETMQ5, ROCKETMQ4])('outbox → outbound queue → bridge → $name → bridge → downstream', (scenario) => {
  it('produces each relayed envelope with its event id, refuses what is not signed, and one effect per order', async () => {
    // Prepare: the downstream group's queues and tables, the stage key, the bridge with both routes.
    const points = await pointsFixture();
    const { bridge, ring, outbound } = await startBridge(
      scenario,
      { topic: scenario.topic, tagExpression: 'PAID' },
      points,
    );
    const reports: RecordReport[] = [];
    const handler = eventKeyedConsumer(points, { topic: scenario.topic, tagExpression: 'PAID' }, ring, reports);

    // Act: order A relayed twice (the relay killed between its send and its mark sends it again), B once,
    // beside an envelope nobody signed and a body that is no envelope at all.
    const a = await relayedEnvelope(ring, scenario.topic, { orderNo: 'OB-A', userId: 'ob-u1', points: 7 });
    const b = await relayedEnvelope(ring, scenario.topic, { orderNo: 'OB-B', userId: 'ob-u2', points: 9 });
    const unsigned = serializeEnvelope(
      buildEnvelope({ topic: scenario.topic, msgId: eventIdOf('forger', 'OB-X', 0), tags: 'PAID', body: '{}' }),
    );
    for (const body of [a.body, a.body, b.body, unsigned, 'not an envelope'])
      await sqs.send(new SendMessageCommand({ QueueUrl: outbound.queueUrl, MessageBody: body }));
    const seen = await consumeUntil(points, handler, () => reports.length >= 3);
    const refused = await waitForMessages(outbound.dlqUrl, 2);
    const status = bridge.status();
    await bridge.stop();

    // Assess: three RocketMQ messages, each carrying its event id first among its keys and as its property.
    expect(seen.map((m) => m.userProperties[OUTBOX_EVENT_ID_PROPERTY]).sort()).toEqual(
      [a.eventId, a.eventId, b.eventId].sort(),
    );
    for (const m of seen) {
      expect(m.keys[0]).toBe(m.userProperties[OUTBOX_EVENT_ID_PROPERTY]);
      expect(m).toMatchObject({ topic: scenario.topic, tags: 'PAID', userProperties: { origin: 'outbox' } });
    }
    assertMsgIds(scenario, seen, a.eventId);
    // One award per order: the second copy of A was suppressed by its event id.
    expect(
      reports
        .filter((r) => r.key === a.eventId)
        .map((r) => r.settlement.outcome)
        .sort(),
    ).toEqual(['duplicate', 'processed']);
    expect(await points.ledger('ob-u1')).toHaveLength(1);
    expect(await points.balance('ob-u1')).toBe(7);
    expect(await points.balance('ob-u2')).toBe(9);
    // Nothing refused was produced: both went to the outbound DLQ, body kept, with their reasons.
    expect(refused.map((m) => m.reason).sort()).toEqual([
      OutboundRefusalReason.INVALID_ENVELOPE,
      OutboundRefusalReason.UNAUTHENTICATED,
    ]);
    expect(refused.map((m) => m.body).sort()).toEqual([unsigned, 'not an envelope'].sort());
    expect(status.outbound?.stats).toMatchObject({ forwarded: 3, deadLettered: 2, forwardFailed: 0 });
    expect(await queueDepth(sqs, outbound.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
  }, 90_000);

  it('consume → outbox → relay killed between send and mark → RocketMQ → bridge → downstream: one effect per order', async () => {
    // Prepare: the publishing group's tables and outbox, the downstream group's, the bridge, the relay.
    const subscription = { topic: scenario.chainTopic, tagExpression: POINTS_AWARDED_TAG };
    const upstream = await pointsFixture({}, rocketMqPublisher(scenario.chainTopic));
    const points = await pointsFixture();
    const { bridge, ring, outbound } = await startBridge(scenario, subscription, points);
    const relay = await killableRelay(upstream, scenario.chainTopic, ring, outbound.queueUrl);
    const reports: RecordReport[] = [];
    const handler = eventKeyedConsumer(points, subscription, ring, reports);

    // Act: the orders consumed, OC-1 delivered twice and OC-3 re-sent by the application (a new msgId);
    // the relay until every item is marked; the downstream consumer until it has seen every send.
    const first = CHAIN_ORDERS.map((order) => orderEnvelope(order));
    expect((await upstream.invoke(first)).batchItemFailures).toEqual([]);
    expect((await upstream.invoke([first[0]!, orderEnvelope(CHAIN_ORDERS[2]!)])).batchItemFailures).toEqual([]);
    await relay.untilMarked(CHAIN_ORDERS.length);
    const sends = relay.sends();
    const seen = await consumeUntil(points, handler, () => reports.length >= sends.length);
    const status = bridge.status();
    await bridge.stop();

    // Assess: one outbox item per order, every one RELAYED; none for the duplicate, none for the re-send.
    expect(upstream.outcomes().sort()).toEqual(['duplicate', 'duplicate', 'processed', 'processed', 'processed']);
    const items = await relay.items();
    expect(items.map((i) => i.eventId).sort()).toEqual(CHAIN_ORDERS.map((o) => chainEventId(o.orderNo)).sort());
    expect(items.map((i) => i.status)).toEqual(CHAIN_ORDERS.map(() => 'RELAYED'));
    // The killed item: sent, not marked, sent again by the fresh relay and marked.
    const killed = chainEventId(KILLED_ORDER);
    expect(relay.reports.filter((r) => r.eventId === killed).map((r) => [r.outcome, 'code' in r && r.code])).toEqual([
      ['retry', 'MARK_FAILED'],
      ['relayed', false],
    ]);
    // Every send is one RocketMQ message of its event id (two of the killed item), first key and property.
    expect(seen.map(eventIdFrom).sort()).toEqual([...sends].sort());
    for (const m of seen) {
      const { orderNo } = parseOrderPaid(m.body);
      const eventId = chainEventId(orderNo);
      expect(m).toMatchObject({ topic: scenario.chainTopic, tags: POINTS_AWARDED_TAG, keys: [eventId, orderNo] });
      expect(m.userProperties[OUTBOX_EVENT_ID_PROPERTY]).toBe(eventId);
    }
    assertMsgIds(scenario, seen, killed);
    await assertOneEffectPerOrder(points, reports);
    expect(status.outbound?.stats).toMatchObject({ forwarded: sends.length, deadLettered: 0, forwardFailed: 0 });
    for (const dlq of [relay.deadLetterQueueUrl, outbound.dlqUrl]) expect(await readAllMessages(sqs, dlq)).toEqual([]);
    expect(await upstream.deadLetters()).toEqual([]);
    expect(await points.deadLetters()).toEqual([]);
  }, 90_000);
});

/** The chain's orders; the relay is killed between the send and the mark of KILLED_ORDER's announcement. */
const CHAIN_ORDERS = [
  { orderNo: 'OC-1', userId: 'oc-u1', points: 5 },
  { orderNo: 'OC-2', userId: 'oc-u2', points: 6 },
  { orderNo: 'OC-3', userId: 'oc-u3', points: 8 },
];
const KILLED_ORDER = 'OC-2';
const chainEventId = (orderNo: string) => eventIdOf(POINTS.group, orderNo, 0);

/**
 * The production relay on the publishing fixture's outbox stream, its topic to the bridge's outbound
 * queue. The mark of KILLED_ORDER's item never reaches DynamoDB the first time (the relay dies after
 * the send): the stream hands the record back, and a fresh relay instance, which remembers nothing the
 * dead one sent, takes it from the checkpoint.
 */
async function killableRelay(upstream: Fixture, topic: string, ring: SigningKeyRing, outboundQueueUrl: string) {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const tableName = upstream.resources.outboxTables[POINTS.group]!;
  const deadLetterQueueUrl = await queue('relay-dlq');
  const dynamoDb = createDynamoDb(aws);
  let killed = false;
  let restarts = 0;
  injectFaults(dynamoDb, (command, input) => {
    if (killed || !/^Update(Item)?Command$/.test(command)) return undefined;
    if (!JSON.stringify(input.Key).includes(chainEventId(KILLED_ORDER))) return undefined;
    killed = true;
    return {
      when: 'before-send',
      error: () => Object.assign(new Error('relay killed (injected)'), { name: 'Killed' }),
    };
  });
  const reports: RelayReport[] = [];
  const poller = await localRelay(outboxStreamClients(endpoint), {
    definition: rocketMqPublisher(topic).definition,
    aws,
    tableName,
    targets: { [topic]: { kind: 'rocketmq', queueUrl: outboundQueueUrl } },
    deadLetterQueueUrl,
    signingKeys: ring,
    clients: { dynamoDb, sqs, eventBridge: createEventBridge(aws) },
    onReport: (r) => reports.push(r),
    restart: () => killed && restarts++ === 0,
  });
  return {
    reports,
    deadLetterQueueUrl,
    /** Polls the stream until `count` items are marked RELAYED (or the deadline). */
    async untilMarked(count: number) {
      const deadline = Date.now() + 15_000;
      while (reports.filter((r) => r.outcome === 'relayed').length < count && Date.now() < deadline)
        if ((await poller.pollOnce()).received === 0) await sleep(50);
    },
    /** The event id of every envelope the relay sent to the outbound queue (a send the mark then failed included). */
    sends: () =>
      reports
        .filter(
          (r) => r.outcome === 'relayed' || r.outcome === 'already-marked' || ('code' in r && r.code === 'MARK_FAILED'),
        )
        .map((r) => r.eventId!),
    async items(): Promise<OutboxItem[]> {
      const { Items = [] } = await upstream.dynamoDb.send(
        new ScanCommand({ TableName: tableName, ConsistentRead: true }),
      );
      return Items as OutboxItem[];
    },
  };
}

/** Downstream, per order: one ledger entry, its points once in the balance, one `processed` and the rest duplicates. */
async function assertOneEffectPerOrder(points: Fixture, reports: readonly RecordReport[]): Promise<void> {
  for (const order of CHAIN_ORDERS) {
    expect(await points.ledger(order.userId)).toHaveLength(1);
    expect(await points.balance(order.userId)).toBe(order.points);
    const outcomes = reports.filter((r) => r.key === chainEventId(order.orderNo)).map((r) => r.settlement.outcome);
    expect(outcomes.filter((o) => o === 'processed')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== 'processed' && o !== 'duplicate')).toEqual([]);
  }
}

/** 4.x: both copies of A carry msgId = event id (the client kept the preset UNIQ_KEY); 5.x: each its own minted id. */
function assertMsgIds(scenario: Scenario, seen: readonly RocketMQMessage[], eventId: string): void {
  const copiesOfA = seen.filter((m) => m.userProperties[OUTBOX_EVENT_ID_PROPERTY] === eventId);
  expect(copiesOfA).toHaveLength(2);
  if (scenario === ROCKETMQ4) {
    expect(copiesOfA.map((m) => m.msgId)).toEqual([eventId, eventId]);
    expect(copiesOfA.map((m) => m.systemProperties.UNIQ_KEY)).toEqual([eventId, eventId]);
    // Two messages in the commit log, not one delivered twice.
    expect(new Set(copiesOfA.map((m) => m.offsetMsgId)).size).toBe(2);
  } else {
    expect(new Set(copiesOfA.map((m) => m.msgId)).size).toBe(2);
    expect(copiesOfA.map((m) => m.msgId)).not.toContain(eventId);
  }
}

/** The outbound DLQ's messages once `count` are there: body and reason. */
async function waitForMessages(queueUrl: string, count: number): Promise<{ body: string; reason: string }[]> {
  const out: { body: string; reason: string }[] = [];
  const deadline = Date.now() + 20_000;
  while (out.length < count && Date.now() < deadline) {
    for (const m of await readAllMessages(sqs, queueUrl)) {
      expect(m.attributes['dead-letter-kind']).toBe(OUTBOUND_REFUSAL_KIND);
      out.push({ body: m.body, reason: m.attributes.BridgeDeadLetterReason! });
    }
    if (out.length < count) await sleep(200);
  }
  return out;
}
