import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { POINTS } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { awardWrites, orderPaidFingerprintFields, parseOrderPaid } from '@rocketmq-lambda/consumers/points/index.ts';
import { emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { eventIdOf, OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer, type RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import {
  buildEnvelope,
  parseEnvelope,
  type RocketMQMessage,
  type SigningKeyRing,
  serializeEnvelope,
  signEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { IMMEDIATE_RETRIES, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { queueDepth, readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { type BridgeConfigInput, parseBridgeConfig } from '../src/bridge-config.ts';
import { OUTBOUND_REFUSAL_KIND, OutboundRefusalReason } from '../src/outbound-route.ts';
import { bridgeSigningKey } from './support/bridge-signing-key.ts';
import { remotingBridgeConfig } from './support/remoting-bridge-config.ts';
import { sharedRocketMQ4, sharedRocketMQ5 } from './support/shared-rocketmq.ts';

/**
 * The outbox's RocketMQ target on real brokers (5.5.0 and 4.7.1): the relay's signed envelope on the
 * outbound queue → the bridge's outbound route produces it → the RocketMQ topic → the same bridge's
 * forward route → the downstream group's SQS queue → a downstream consumer keyed on the event id. The
 * relay killed between its send and its mark is its redelivery: the same envelope on the outbound queue
 * twice, two RocketMQ messages of one event id, and one effect per order downstream.
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

/** A points consumer on the fixture's tables whose idempotency key is the event id, never the msgId. */
function eventKeyedConsumer(points: Fixture, topic: string, ring: SigningKeyRing, reports: RecordReport[]) {
  const downstream = defineConsumer(
    { ...POINTS, topic },
    {
      parsePayload: (body, message) => ({ ...parseOrderPaid(body), eventId: eventIdFrom(message) }),
      keyOf: (award) => award.eventId,
      fingerprintFields: orderPaidFingerprintFields,
      business:
        ({ tables, now }) =>
        (msg) => ({
          writes: awardWrites(
            msg.payload,
            { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
            tables,
            new Date(now()),
          ),
        }),
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

/** Where docs/outbox.md says a downstream consumer finds the event id: the property, else the first key. */
function eventIdFrom(message: RocketMQMessage): string {
  return message.userProperties[OUTBOX_EVENT_ID_PROPERTY] ?? message.keys[0]!;
}

async function queue(name: string): Promise<string> {
  return (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-${randomUUID().slice(0, 8)}` }))).QueueUrl!;
}

interface Scenario {
  readonly name: string;
  readonly topic: string;
  /** The bridge's configuration on the shared cluster, without signing and outbound. */
  readonly config: (group: string, downstream: { queueUrl: string; dlqUrl: string }) => Promise<BridgeConfigInput>;
}

const ROCKETMQ5: Scenario = {
  name: 'RocketMQ 5.5.0 (gRPC producer: the client mints the msgId)',
  topic: 'OUTBOUND5_ORDER_TOPIC',
  config: async (group, downstream) => {
    const rocketMq = await sharedRocketMQ5({ topics: [{ name: ROCKETMQ5.topic }], groups: [{ name: group }] });
    return {
      proxyEndpoint: rocketMq.proxyEndpoint,
      clusterName: rocketMq.clusterName,
      sslEnabled: false,
      invisibleDurationMs: 10_000,
      awaitDurationMs: 5_000,
      health: { host: '127.0.0.1', port: 0 },
      routes: [
        {
          group,
          topic: ROCKETMQ5.topic,
          tagExpression: 'PAID',
          target: { kind: 'sqs', queueUrl: downstream.queueUrl },
          dlqUrl: downstream.dlqUrl,
        },
      ],
    };
  },
};

const ROCKETMQ4: Scenario = {
  name: 'RocketMQ 4.7.1 (remoting producer: UNIQ_KEY = event id)',
  topic: 'OUTBOUND4_ORDER_TOPIC',
  config: async (group, downstream) => {
    const rocketMq = await sharedRocketMQ4({ topics: [{ name: ROCKETMQ4.topic, queues: 4 }] });
    return remotingBridgeConfig(rocketMq, [
      {
        group,
        topic: ROCKETMQ4.topic,
        tagExpression: 'PAID',
        target: { kind: 'sqs', queueUrl: downstream.queueUrl },
        dlqUrl: downstream.dlqUrl,
      },
    ]);
  },
};

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
    const { secretId, ring } = await bridgeSigningKey();
    const downstreamQueues = points.resources.queues[POINTS.group]!;
    const group = `outbound-forward-${randomUUID().slice(0, 6)}`;
    const outbound = { queueUrl: await queue('outbound'), dlqUrl: await queue('outbound-dlq') };
    const config = parseBridgeConfig({
      ...(await scenario.config(group, {
        queueUrl: downstreamQueues.source.url,
        dlqUrl: downstreamQueues.deadLetter.url,
      })),
      signing: { secretId },
      outbound: { ...outbound, waitTimeSeconds: 1 },
    });
    const bridge = new Bridge(config, { sqs, signingKeys: ring, logger: SILENT_LOGGER });
    bridges.push(bridge);
    await bridge.start();
    const reports: RecordReport[] = [];
    const handler = eventKeyedConsumer(points, scenario.topic, ring, reports);

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
});

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
