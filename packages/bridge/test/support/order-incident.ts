import { setTimeout as sleep } from 'node:timers/promises';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import type { BridgeConfigInput } from '../../src/bridge-config.ts';
import { BridgeChildProcess, bridgeEnv, forwardedMsgIds } from './bridge-child-process.ts';
import { bridgeSigningKey } from './bridge-signing-key.ts';
import { pollPointsQueue } from './lambda-poller.ts';

/**
 * The incident, replayed against a real broker: producers keep sending PAID orders (some of them
 * re-sent by the application with a new msgId) while the broker is killed with SIGKILL and
 * restarted on its store, and the bridge is killed between forwarding a batch and acking it
 * (RocketMQ 5) or committing its offset (RocketMQ 4). The points consumer runs behind the bridge
 * on the emulator the whole time, polling its queue as Lambda's event source mapping would.
 */
export const ORDER_TOPIC = 'ORDER_TOPIC';

export interface Order {
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
}

/** One broker version as the incident needs it. */
export interface IncidentCluster {
  readonly version: string;
  /** The connection part of the bridge configuration (protocol, endpoint, cluster name). */
  readonly connection: Pick<
    BridgeConfigInput,
    'protocol' | 'proxyEndpoint' | 'nameServer' | 'clusterName' | 'sslEnabled'
  >;
  /**
   * Sends one order as a PAID message with its order number as key and resolves with the msgId.
   * The client's own retries keep the msgId; a rejection means the send is in doubt.
   */
  send(order: Order): Promise<string>;
  killBroker(): Promise<void>;
  restartBroker(): Promise<{ recoveryMs: number }>;
}

export interface IncidentFigures {
  readonly version: string;
  readonly orders: number;
  /** Messages the producers got a msgId for (application re-sends included). */
  readonly messagesSent: number;
  readonly applicationResends: number;
  /** Sends that failed while the broker was down (each re-sent with a new msgId). */
  readonly sendsInDoubt: number;
  /** Deliveries that reached the points queue (every copy the consumer received). */
  readonly deliveriesForwarded: number;
  /** Copies of a msgId that had already arrived: RocketMQ's redeliveries after the two kills. */
  readonly redeliveriesArrived: number;
  /** Deliveries the consumer suppressed as duplicates (redeliveries and application re-sends). */
  readonly duplicatesSuppressed: number;
  readonly awards: number;
  readonly brokerRecoveryMs: number;
  readonly wallMs: number;
}

export interface IncidentResult {
  readonly figures: IncidentFigures;
  readonly sentMsgIds: readonly string[];
  readonly deliveredMsgIds: readonly string[];
  readonly expectedLedger: ReadonlyMap<string, string[]>;
  readonly ledger: ReadonlyMap<string, string[]>;
  readonly balances: ReadonlyMap<string, { expected: number; actual: number }>;
  readonly ledgerMismatches: readonly string[];
  readonly bridgeFault: { readonly msgIds: readonly string[] } | undefined;
  readonly duplicateMsgIds: readonly string[];
}

const USERS = 8;

export async function replayOrderIncident(
  cluster: IncidentCluster,
  options: { orders: number; resendEvery: number },
): Promise<IncidentResult> {
  const started = Date.now();
  const signing = await bridgeSigningKey();
  const points = await pointsFixture({ envelopeKeys: signing.ring });
  const queue = points.resources.queues[POINTS_GROUP]!;
  const bridges: BridgeChildProcess[] = [];
  const startBridge = (env: Record<string, string> = {}) => {
    const config: BridgeConfigInput = {
      ...cluster.connection,
      invisibleDurationMs: 10_000,
      awaitDurationMs: 5_000,
      health: { host: '127.0.0.1', port: 0 },
      signing: { secretId: signing.secretId },
      routes: [
        {
          group: POINTS_GROUP,
          topic: ORDER_TOPIC,
          tagExpression: 'PAID',
          target: { kind: 'sqs', queueUrl: queue.source.url },
          dlqUrl: queue.deadLetter.url,
        },
      ],
    };
    const child = new BridgeChildProcess(bridgeEnv(config, env));
    bridges.push(child);
    return child;
  };

  try {
    // Bridge 1 forwards and acks normally until 60 % of the orders went through, then dies with
    // SIGKILL between the forward of a batch and its ack / offset commit.
    const first = startBridge({
      BRIDGE_FAULT: 'sigkill-before-ack',
      BRIDGE_FAULT_AFTER: String(Math.floor(options.orders * 0.6)),
    });
    await first.waitFor(
      'bridge started',
      (lines) => (lines.some((l) => l.message === 'bridge started') ? true : undefined),
      120_000,
    );
    // Its replacement starts as soon as it is gone, as ECS would start a new task; and like ECS,
    // another one when a task exits during startup (one started while the restarted broker has
    // not yet registered its topics with the name server finds no route and exits).
    const replacement = first.exited.then(async () => {
      for (let attempt = 1; ; attempt++) {
        const next = startBridge();
        const started = await next
          .waitFor(
            'bridge started',
            (lines) => (lines.some((l) => l.message === 'bridge started') ? true : undefined),
            120_000,
          )
          .then(
            () => true,
            (err: Error) => {
              if (attempt >= 5 || !/exited/.test(err.message)) throw err;
              return false;
            },
          );
        if (started) return next;
        await sleep(2_000);
      }
    });

    // The points consumer behind the bridge, polling like the SQS event source mapping.
    const consumer = pollPointsQueue(points);

    // The producers: one order every ~20 ms; the broker dies a third of the way in.
    const sent: { msgId: string; order: Order }[] = [];
    let resends = 0;
    let inDoubt = 0;
    let brokerRecoveryMs = 0;
    let failover: Promise<void> | undefined;
    const sendUntilAccepted = async (order: Order) => {
      for (;;) {
        try {
          sent.push({ msgId: await cluster.send(order), order });
          return;
        } catch {
          // In doubt (the broker is down): the application sends the order again, with a new msgId.
          inDoubt += 1;
          await sleep(500);
        }
      }
    };
    for (let i = 0; i < options.orders; i++) {
      if (i === Math.floor(options.orders / 3)) {
        failover = (async () => {
          await cluster.killBroker();
          await sleep(1_000);
          brokerRecoveryMs = (await cluster.restartBroker()).recoveryMs;
        })();
      }
      const order = { orderNo: `SO-${String(i).padStart(5, '0')}`, userId: `u${i % USERS}`, points: 1 + (i % 5) };
      await sendUntilAccepted(order);
      if (i % options.resendEvery === options.resendEvery - 1) {
        // The application timed out waiting for the first send and sent the order again.
        resends += 1;
        await sendUntilAccepted(order);
      }
      await sleep(20);
    }
    await failover;
    const second = await replacement;

    // Every accepted message must come through; then the queue must run dry.
    const sentIds = new Set(sent.map((s) => s.msgId));
    await second.waitFor(
      'every sent message forwarded',
      () => {
        const forwarded = new Set(bridges.flatMap((b) => forwardedMsgIds(b.lines)));
        return [...sentIds].every((id) => forwarded.has(id)) ? true : undefined;
      },
      180_000,
    );
    await consumer.stop();
    await points.drain();
    second.kill('SIGTERM');
    await second.exited;

    const deliveries = points.reports.filter((r) => r.msgId !== undefined);
    const deliveredMsgIds = deliveries.map((r) => r.msgId!);
    const perMsgId = Map.groupBy(deliveredMsgIds, (id) => id);
    const duplicateMsgIds = [...perMsgId].filter(([, copies]) => copies.length > 1).map(([id]) => id);
    const expectedLedger = new Map<string, string[]>();
    const expectedBalance = new Map<string, number>();
    for (let i = 0; i < options.orders; i++) {
      const userId = `u${i % USERS}`;
      expectedLedger.set(userId, [...(expectedLedger.get(userId) ?? []), `SO-${String(i).padStart(5, '0')}`]);
      expectedBalance.set(userId, (expectedBalance.get(userId) ?? 0) + 1 + (i % 5));
    }
    const ledger = new Map<string, string[]>();
    const balances = new Map<string, { expected: number; actual: number }>();
    for (const userId of expectedLedger.keys()) {
      ledger.set(userId, (await points.ledger(userId)).map((e) => e.orderNo).sort());
      balances.set(userId, { expected: expectedBalance.get(userId)!, actual: await points.balance(userId) });
    }
    const faultLine = bridges[0]!.lines.find((l) => l.fault === 'sigkill-before-ack') as
      | { msgIds: string[] }
      | undefined;
    const figures: IncidentFigures = {
      version: cluster.version,
      orders: options.orders,
      messagesSent: sent.length,
      applicationResends: resends,
      sendsInDoubt: inDoubt,
      deliveriesForwarded: deliveries.length,
      redeliveriesArrived: deliveries.length - perMsgId.size,
      duplicatesSuppressed: deliveries.filter((r) => r.settlement.outcome === 'duplicate').length,
      awards: [...ledger.values()].reduce((n, orders) => n + orders.length, 0),
      brokerRecoveryMs,
      wallMs: Date.now() - started,
    };
    console.log(`incident replay on RocketMQ ${cluster.version}: ${JSON.stringify(figures)}`);
    return {
      figures,
      sentMsgIds: [...sentIds],
      deliveredMsgIds,
      expectedLedger,
      ledger,
      balances,
      ledgerMismatches: await points.ledgerMismatches(),
      bridgeFault: faultLine,
      duplicateMsgIds,
    };
  } finally {
    for (const bridge of bridges) bridge.kill('SIGKILL');
    await Promise.all(bridges.map((b) => b.exited));
  }
}
