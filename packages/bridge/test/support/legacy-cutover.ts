import { setTimeout as sleep } from 'node:timers/promises';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { reviewedImport } from '@rocketmq-lambda/ops/test/integration/migration/migration-fixture.ts';
import { ops } from '@rocketmq-lambda/ops/test/integration/operations/operations-fixture.ts';
import type { RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { LegacyConsumerProcess, resendDeadLetter } from '@rocketmq-lambda/tools/legacy/legacy-consumer.ts';
import { startLocalMariaDb } from '@rocketmq-lambda/tools/legacy/local-mariadb.ts';
import type { LocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { Message, type Producer } from 'ali-ons';
import type { RowDataPacket } from 'mysql2/promise';
import { BridgeChildProcess, bridgeEnv, forwardedMsgIds } from './bridge-child-process.ts';
import { bridgeSigningKey } from './bridge-signing-key.ts';
import type { BrokerProbe } from './broker-probe.ts';
import { pollPointsQueue } from './lambda-poller.ts';
import { ORDER_TOPIC, until } from './master-slave-switchover.ts';
import { remotingBridgeConfig } from './remoting-bridge-config.ts';

/**
 * The cutover of docs/migration.md, replayed on a real RocketMQ 4.7.1 in the middle of a stream of
 * orders: the article's consumer (the Java replica, MariaDB) consumes a topic as the legacy group;
 * the runbook's backfill import runs while it does; the replica is SIGKILLed (no offset commit: a
 * thread holding an awarded message keeps its queue's offset behind it, and the last seconds of
 * every other queue are not committed either) while orders it failed wait in `%RETRY%<group>`; the
 * delta import runs `--since` the backfill's start; the bridge starts in the legacy group's name and
 * takes it over; then an operator re-sends a `%DLQ%` letter of an order the replica had awarded, and
 * the application re-sends an order under a new msgId. Without the imports (`withImport: false`)
 * the same run is the negative control.
 */
export const MAX_RECONSUME_TIMES = 2;

/**
 * The broker's delay levels: a retry uses level 3 + reconsumeTimes. The first retry waits 10 s, so
 * that the replica's last failures still sit in `%RETRY%` when it is killed; every later level is
 * 1 s, so that a letter reaches `%DLQ%` in about 12 s.
 */
export const MESSAGE_DELAY_LEVEL = ['1s', '1s', '10s', ...Array.from({ length: 15 }, () => '1s')].join(' ');

const USERS = 8;
export const QUEUE_IDS = [0, 1, 2, 3];
const SEND_EVERY_MS = 40;

export interface CutoverArm {
  /** Order numbers start with it. */
  readonly prefix: string;
  /**
   * The arm's own legacy group. Both arms send to ORDER_TOPIC, the topic the points consumer's
   * catalogue entry subscribes to; each legacy group starts with its offsets committed at the
   * topic's end, as a group that has consumed everything before, so it sees only its arm's orders.
   */
  readonly legacyGroup: string;
  readonly withImport: boolean;
}

interface SentOrder {
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
  readonly msgId: string;
}

export interface CutoverResult {
  readonly figures: Record<string, unknown>;
  /** Awards per order across MariaDB (t_point_detail) and DynamoDB (native awards: `AWARD#` entries). */
  readonly awardsPerOrder: ReadonlyMap<string, { legacy: number; here: number }>;
  readonly orders: readonly SentOrder[];
  readonly audit: { code: number; json: () => CrossSystemJson };
  readonly ledgerMismatches: readonly string[];
  readonly balances: ReadonlyMap<string, { expected: number; actual: number }>;
  readonly imports: readonly { code: number; counts: Record<string, number> }[];
  /** Deliveries at the points consumer by what they are. */
  readonly copies: {
    /** Copies of messages the replica had processed (same msgId) from offsets it never committed. */
    readonly uncommitted: readonly RecordReport[];
    /**
     * Taken-over `%RETRY%` copies of the replica's last failures: attempt = SQS receive count +
     * reconsumeTimes, so above 1 (the originals of those failures, uncommitted too, arrive with 1).
     */
    readonly retry: readonly RecordReport[];
    readonly deadLetterResend: readonly RecordReport[];
    readonly producerResend: readonly RecordReport[];
  };
  /** Order numbers: the replica's last failures (awarded or not), its %DLQ% letter, the application's re-send. */
  readonly specials: {
    readonly retryAwarded: readonly string[];
    readonly retryFailed: readonly string[];
    readonly deadLetter: string;
    readonly resent: string;
  };
}

interface CrossSystemJson {
  readonly clean: boolean;
  readonly crossSystem: { readonly inBothSystems: readonly { orderNo: string }[]; readonly moved: number };
}

export async function replayCutover(
  rocketMq: LocalRocketMQ4,
  producer: Producer,
  probe: BrokerProbe,
  arm: CutoverArm,
): Promise<CutoverResult> {
  const started = Date.now();
  const mariaDb = await startLocalMariaDb();
  const signing = await bridgeSigningKey();
  const points = await pointsFixture({ envelopeKeys: signing.ring });
  const queue = points.resources.queues[POINTS_GROUP]!;
  const ids = new MsgIdGenerator('7F000001', process.pid & 0xffff);
  const sent: SentOrder[] = [];
  const send = async (orderNo: string, index: number): Promise<SentOrder> => {
    const order = { orderNo, userId: String(1 + (index % USERS)), points: 1 + (index % 5) };
    const message = new Message(ORDER_TOPIC, 'PAID', JSON.stringify(order));
    message.keys = [orderNo];
    message.properties.UNIQ_KEY = ids.next();
    await producer.send(message);
    const s = { ...order, msgId: message.properties.UNIQ_KEY };
    sent.push(s);
    return s;
  };
  const special = { dlq: `${arm.prefix}-DLQ-1`, hold: `${arm.prefix}-HOLD-1`, resent: `${arm.prefix}-00005` };
  const retryAwarded = [1, 2, 3].map((n) => `${arm.prefix}-RA-${n}`);
  const retryFailed = [1, 2].map((n) => `${arm.prefix}-RF-${n}`);
  let legacy: LegacyConsumerProcess | undefined;
  let bridge: BridgeChildProcess | undefined;
  let consumer: ReturnType<typeof pollPointsQueue> | undefined;
  let sending = true;
  const imports: { code: number; counts: Record<string, number> }[] = [];
  const importLegacy = async (...more: string[]) => {
    const args = await reviewedImport(points, [
      'migrate',
      'import',
      '--source',
      mariaDb.url,
      '--group',
      POINTS_GROUP,
      '--ledger',
      'moved',
      '--yes',
      '--json',
      ...more,
    ]);
    const run = await ops(points, args);
    if (run.code !== 0) throw new Error(`the import failed (${run.code}): ${run.stdout}${run.stderr}`);
    const report = run.json() as { counts: Record<string, number>; deltaSince: string };
    imports.push({ code: run.code, counts: report.counts });
    return report;
  };

  try {
    const end = await probe.maxOffsets(rocketMq.brokerAddr, ORDER_TOPIC, QUEUE_IDS);
    await probe.commitOffsets(rocketMq.brokerAddr, arm.legacyGroup, ORDER_TOPIC, end);
    legacy = await LegacyConsumerProcess.start({
      nameServer: rocketMq.namesrvAddr,
      group: arm.legacyGroup,
      topic: ORDER_TOPIC,
      database: mariaDb,
      maxReconsumeTimes: MAX_RECONSUME_TIMES,
      threads: 4,
      faults: {
        failAfterCommitAlways: '-DLQ-',
        holdAfterAward: '-HOLD-',
        failAfterCommit: '-RA-',
        failFirst: '-RF-',
      },
    });

    // The order service's stream, from before the runbook starts until after the switch.
    let next = 0;
    const stream = (async () => {
      while (sending) {
        const index = next++;
        await send(`${arm.prefix}-${String(index).padStart(5, '0')}`, index);
        await sleep(SEND_EVERY_MS);
      }
    })();
    const sentCount = (n: number) => until(`${n} orders sent`, async () => (next >= n ? true : undefined), 60_000);

    await sentCount(20);
    await send(special.dlq, 1);
    await sentCount(60);
    await send(special.hold, 2);
    await legacy.waitFor('the held award', (e) => e.event === 'held', 30_000);

    // 1. Backfill while the legacy consumer runs and orders keep coming.
    const backfill = arm.withImport ? await importLegacy() : undefined;

    // The letter reaches %DLQ% after its third failed delivery.
    await legacy.waitFor(
      'the letter sent to %DLQ%',
      (e) => e.event === 'failed' && e.orderNo === special.dlq && e.reconsumeTimes === MAX_RECONSUME_TIMES,
      60_000,
    );
    // Failures the replica sends back in its last seconds: they wait 10 s in %RETRY%.
    for (const orderNo of [...retryAwarded, ...retryFailed]) await send(orderNo, 3);
    for (const orderNo of [...retryAwarded, ...retryFailed])
      await legacy.waitFor(`${orderNo} failed`, (e) => e.event === 'failed' && e.orderNo === orderNo, 30_000);
    // The client sends a failed message back just after the listener returns.
    await sleep(1_000);

    // 2. Stop the legacy consumer: killed, its last offsets never committed.
    await legacy.kill();
    const killedAt = Date.now();
    const legacyEvents = [...legacy.events];

    // 3. The delta import.
    if (backfill) await importLegacy('--since', backfill.deltaSince);

    // 4. The bridge in the legacy group's name, taking it over; the points consumer behind it.
    consumer = pollPointsQueue(points);
    const config = remotingBridgeConfig(
      rocketMq,
      [
        {
          group: POINTS_GROUP,
          rocketmqGroup: arm.legacyGroup,
          takeOver: {},
          topic: ORDER_TOPIC,
          tagExpression: 'PAID',
          target: { kind: 'sqs', queueUrl: queue.source.url },
          dlqUrl: queue.deadLetter.url,
        },
      ],
      { signing: { secretId: signing.secretId } },
    );
    bridge = new BridgeChildProcess(bridgeEnv(config));
    await bridge.waitFor(
      'bridge started',
      (l) => (l.some((x) => x.message === 'bridge started') ? true : undefined),
      120_000,
    );
    const switchedAt = Date.now();

    // After the switch: the operator re-sends the %DLQ% letter; the application re-sends an order.
    const letter = await resendDeadLetter(rocketMq.namesrvAddr, arm.legacyGroup, special.dlq);
    const resent = await send(special.resent, 5);
    await sleep(2_000);
    sending = false;
    await stream;

    // Every order awarded somewhere, the re-sends and the %RETRY% backlog delivered, then quiet.
    const delivered = () => new Set(points.reports.map((r) => r.msgId));
    const mustArrive = [
      letter.msgId,
      resent.msgId,
      ...sent.filter((s) => retryAwarded.includes(s.orderNo) || retryFailed.includes(s.orderNo)).map((s) => s.msgId),
    ];
    await until(
      'the re-sends and the %RETRY% backlog at the points consumer',
      async () => (mustArrive.every((id) => delivered().has(id)) ? true : undefined),
      120_000,
    );
    await until(
      'every order awarded in one system or the other',
      async () => {
        const awards = await awardsPerOrder(points, mariaDb);
        return sent.every((s) => (awards.get(s.orderNo)?.legacy ?? 0) + (awards.get(s.orderNo)?.here ?? 0) > 0)
          ? true
          : undefined;
      },
      180_000,
    );
    let forwarded = -1;
    await until(
      'the bridge quiet for 5 s',
      async () => {
        const now = forwardedMsgIds(bridge!.lines).length;
        if (now === forwarded) return true;
        forwarded = now;
        await sleep(5_000);
        return undefined;
      },
      120_000,
    );
    bridge.kill('SIGTERM');
    await bridge.exited;
    await consumer.stop();
    await points.drain();

    // What arrived at the points consumer, by what it is.
    const legacyProcessed = new Set(
      legacyEvents.filter((e) => e.event === 'awarded' || e.event === 'duplicate').map((e) => e.msgId),
    );
    const retryIds = new Set(
      sent.filter((s) => retryAwarded.includes(s.orderNo) || retryFailed.includes(s.orderNo)).map((s) => s.msgId),
    );
    const deliveries = points.reports.filter((r) => r.msgId !== undefined);
    const copies = {
      uncommitted: deliveries.filter((r) => legacyProcessed.has(r.msgId) && r.attempt === 1),
      retry: deliveries.filter((r) => retryIds.has(r.msgId!) && r.attempt > 1),
      deadLetterResend: deliveries.filter((r) => r.msgId === letter.msgId),
      producerResend: deliveries.filter((r) => r.msgId === resent.msgId),
    };
    const awards = await awardsPerOrder(points, mariaDb);
    const audit = await ops(points, ['audit', '--legacy-source', mariaDb.url, '--json']);
    const orders = [...new Map(sent.map((s) => [s.orderNo, s])).values()];
    const balances = new Map<string, { expected: number; actual: number }>();
    if (arm.withImport) {
      for (const o of orders) {
        const b = balances.get(o.userId) ?? { expected: 0, actual: 0 };
        balances.set(o.userId, { ...b, expected: b.expected + o.points });
      }
      for (const [userId, b] of balances) balances.set(userId, { ...b, actual: await points.balance(userId) });
    }
    const settled = (reports: readonly RecordReport[]) =>
      reports.map((r) =>
        r.settlement.outcome === 'duplicate' ? `duplicate:${r.settlement.reason}` : r.settlement.outcome,
      );
    const count = (values: readonly string[]) =>
      Object.fromEntries(
        Array.from(
          Map.groupBy(values, (v) => v),
          ([k, v]) => [k, v.length],
        ),
      );
    const perOrder = [...awards.values()];
    const auditJson = audit.json() as CrossSystemJson;
    const figures = {
      arm: arm.withImport ? 'cutover' : 'negative control (no import)',
      orders: orders.length,
      messagesSent: sent.length + 1,
      awardedByLegacy: perOrder.filter((a) => a.legacy > 0).length,
      awardedHere: perOrder.filter((a) => a.here > 0).length,
      awardedTwice: perOrder.filter((a) => a.legacy + a.here > 1).length,
      legacyProcessedBeforeKill: legacyProcessed.size,
      killToBridgeStartedMs: switchedAt - killedAt,
      imports: imports.map((i) => i.counts),
      deliveriesHere: deliveries.length,
      copiesOfLegacyProcessed: settled(copies.uncommitted).length,
      copiesOfLegacyProcessedSettled: count(settled(copies.uncommitted)),
      retryTakenOver: copies.retry.map((r) => ({ attempt: r.attempt, settled: settled([r])[0] })),
      deadLetterResend: settled(copies.deadLetterResend),
      producerResend: settled(copies.producerResend),
      suppressedAsLegacy: deliveries.filter(
        (r) => r.settlement.outcome === 'duplicate' && r.settlement.reason === 'legacy-record-exists',
      ).length,
      auditInBothSystems: auditJson.crossSystem.inBothSystems.length,
      auditExit: audit.code,
      wallMs: Date.now() - started,
    };
    console.log(`cutover on RocketMQ ${rocketMq.version}: ${JSON.stringify(figures)}`);
    return {
      figures,
      awardsPerOrder: awards,
      orders,
      audit: { code: audit.code, json: () => auditJson },
      ledgerMismatches: await points.ledgerMismatches(),
      balances,
      imports,
      copies,
      specials: { retryAwarded, retryFailed, deadLetter: special.dlq, resent: special.resent },
    };
  } finally {
    sending = false;
    await consumer?.stop();
    bridge?.kill('SIGKILL');
    await bridge?.exited;
    await legacy?.kill();
    await mariaDb.stop();
  }
}

/** Awards per order: the replica's detail lines in MariaDB, and the awards the consumer here made (not the moved ones). */
async function awardsPerOrder(
  points: Awaited<ReturnType<typeof pointsFixture>>,
  mariaDb: Awaited<ReturnType<typeof startLocalMariaDb>>,
): Promise<Map<string, { legacy: number; here: number }>> {
  const out = new Map<string, { legacy: number; here: number }>();
  const db = await mariaDb.connect();
  try {
    const [rows] = await db.query<RowDataPacket[]>('SELECT order_no FROM t_point_detail');
    for (const row of rows) {
      const a = out.get(row.order_no) ?? { legacy: 0, here: 0 };
      out.set(row.order_no, { ...a, legacy: a.legacy + 1 });
    }
  } finally {
    await db.end();
  }
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await points.dynamoDb.send(
      new ScanCommand({ TableName: points.resources.tables.ledger, ExclusiveStartKey, ConsistentRead: true }),
    );
    for (const entry of page.Items ?? []) {
      // A moved legacy award (origin legacy-import) is the MariaDB award itself, counted there.
      if (entry.kind !== 'AWARD' || entry.origin === 'legacy-import') continue;
      const a = out.get(entry.orderNo) ?? { legacy: 0, here: 0 };
      out.set(entry.orderNo, { ...a, here: a.here + 1 });
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return out;
}
