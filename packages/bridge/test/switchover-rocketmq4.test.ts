import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { orderlySchedule } from '@rocketmq-lambda/runtime/config/index.ts';
import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type LocalRocketMQ4, startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { orderlyFixture } from '@rocketmq-lambda/tools/testing/orderly-fixture.ts';
import { Message, type Producer } from 'ali-ons';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BridgeChildProcess, bridgeEnv, forwardedMsgIds } from './support/bridge-child-process.ts';
import { bridgeSigningKey } from './support/bridge-signing-key.ts';
import { BrokerProbe } from './support/broker-probe.ts';
import { allocationOf, isRebalanceOf } from './support/client-rebalance.ts';
import {
  type GroupSwitchover,
  ORDER_TOPIC,
  replaySwitchover,
  type SentOrder,
  type SwitchoverResult,
  until,
} from './support/master-slave-switchover.ts';
import { remotingBridgeConfig } from './support/remoting-bridge-config.ts';
import { orderServiceProducer, sendOrdered } from './support/rocketmq4-producer.ts';

/**
 * RocketMQ 4.7.1 as the incident ran it: one broker group of an `ASYNC_MASTER` and a `SLAVE`
 * (same brokerName, real JVMs), a name server, the bridge as child processes, the consumers on
 * the emulator. One cluster for both scenarios of the file, on the topic both consumer groups
 * subscribe to (a consumer dead-letters an envelope of another topic); the switchover's groups
 * start where the orderly scenario's events end.
 */
const QUEUE_IDS = [0, 1, 2, 3];

let rocketMq: LocalRocketMQ4 | undefined;
let producer: Producer | undefined;
let probe: BrokerProbe | undefined;

beforeAll(async () => {
  rocketMq = await startLocalRocketMQ4({
    topics: [{ name: ORDER_TOPIC, queues: QUEUE_IDS.length }],
    slave: true,
  });
  console.info(`local RocketMQ ${rocketMq.version} master + slave up in ${rocketMq.startupMs} ms`);
  producer = await orderServiceProducer(rocketMq.namesrvAddr);
  probe = await BrokerProbe.open(rocketMq.namesrvAddr);
});

afterAll(async () => {
  await probe?.close();
  await producer?.close();
  await rocketMq?.stop();
});

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/**
 * The messages a group forwarded again because of its stale reads: on each queue read back below
 * the slave's offset, from the lowest offset read up to the slave's.
 */
function rereadAfterStaleReads(sent: readonly SentOrder[], group: GroupSwitchover): string[] {
  const from = new Map<number, number>();
  for (const read of group.staleReads)
    from.set(read.queueId, Math.min(from.get(read.queueId) ?? read.offset, Math.max(0, read.offset)));
  return sent
    .filter(
      (s) =>
        from.has(s.queueId) &&
        s.queueOffset >= from.get(s.queueId)! &&
        s.queueOffset < group.offsets.slaveAtEnd[s.queueId]!,
    )
    .map((s) => s.msgId)
    .sort();
}

/**
 * The group's duplicates (msgIds that reached SQS more than once), split by cause: forwarded again
 * after the master's return although the group's offset on the slave had already passed them (the
 * offset moved back), or any other (two tasks pulling one queue during a rebalance).
 */
function duplicatesOf(result: SwitchoverResult, group: GroupSwitchover) {
  const where = new Map(result.sent.map((s) => [s.msgId, s]));
  const twice = [...group.forwards].filter(([, at]) => at.length > 1);
  const offsetMovedBack = twice
    .filter(([id, at]) => {
      const s = where.get(id)!;
      return s.queueOffset < group.offsets.slaveAtEnd[s.queueId]! && at.some((t) => t >= result.masterReturnedAt);
    })
    .map(([id]) => id)
    .sort();
  return { offsetMovedBack, rebalance: twice.map(([id]) => id).filter((id) => !offsetMovedBack.includes(id)) };
}

async function expectEveryOrderAwardedOnce(result: SwitchoverResult, group: GroupSwitchover): Promise<void> {
  const expectedLedger = new Map<string, string[]>();
  const expectedBalance = new Map<string, number>();
  for (const order of new Map(result.sent.map((s) => [s.orderNo, s])).values()) {
    expectedLedger.set(order.userId, [...(expectedLedger.get(order.userId) ?? []), order.orderNo].sort());
    expectedBalance.set(order.userId, (expectedBalance.get(order.userId) ?? 0) + order.points);
  }
  for (const [userId, orders] of expectedLedger) {
    expect(
      (await group.points.ledger(userId)).map((e) => e.orderNo).sort(),
      `${group.group}: ledger of ${userId}`,
    ).toEqual(orders);
    expect(await group.points.balance(userId), `${group.group}: balance of ${userId}`).toBe(
      expectedBalance.get(userId),
    );
  }
  expect(await group.points.ledgerMismatches()).toEqual([]);
  expect(await group.points.deadLetters()).toEqual([]);
}

function figuresOf(result: SwitchoverResult, group: GroupSwitchover) {
  const deliveries = group.points.reports.filter((r) => r.msgId !== undefined);
  const duplicates = duplicatesOf(result, group);
  return {
    group: group.group,
    masterOffsetsBeforeKill: group.offsets.masterBeforeKill,
    slaveOffsetsAtEndOfOutage: group.offsets.slaveAtEnd,
    masterOffsetsAfterReturn: group.offsets.masterAfterReturn,
    offsetsMovedBack: sum(group.offsets.slaveAtEnd) - sum(group.offsets.masterAfterReturn.map((o) => Math.max(0, o))),
    staleReadsAfterReturn: [...new Set(group.staleReads.map((r) => `q${r.queueId}@${r.offset}`))],
    forwardedDuringOutage: group.forwardedDuringOutage,
    backlogForwardedAfterMs: group.backlogForwardedAfterMs,
    forwarded: sum([...group.forwards.values()].map((at) => at.length)),
    forwardedAgainBecauseOffsetsMovedBack: duplicates.offsetMovedBack.length,
    forwardedTwiceByRebalance: duplicates.rebalance.length,
    deliveries: deliveries.length,
    duplicatesSuppressed: deliveries.filter((r) => r.settlement.outcome === 'duplicate').length,
    awards: deliveries.filter((r) => r.settlement.outcome === 'processed').length,
  };
}

describe('RocketMQ 4.7.1 → two bridge tasks sharing an orderly queue during a rebalance', () => {
  it('a second task joins while interleaved orders flow through a FIFO route; both pull the same queues until the first rebalances, and the order-status consumer applies each order’s PAID before its FINISHED, each once', async () => {
    // Prepare: the order-status group on its FIFO queues, a FIFO route from an ordered topic.
    const signing = await bridgeSigningKey();
    const f = await orderlyFixture({ schedule: orderlySchedule({ intervalSeconds: 0 }), envelopeKeys: signing.ring });
    const group = `order-status-v4-${randomUUID().slice(0, 6)}`;
    const unsigned = remotingBridgeConfig(
      rocketMq!,
      [
        {
          group,
          topic: ORDER_TOPIC,
          tagExpression: 'PAID || FINISHED',
          fifo: true,
          target: { kind: 'sqs', queueUrl: f.source.url },
          dlqUrl: f.deadLetter.url,
        },
      ],
      // Small receives: a queue's events go over in several slices, so both tasks have some in hand at once.
      { receiveBatchSize: 4 },
    );
    const config = { ...unsigned, signing: { secretId: signing.secretId } };
    // The client's own lines (rebalances and their allocations) are logged at debug.
    const env = bridgeEnv(config, { POWERTOOLS_LOG_LEVEL: 'DEBUG' });
    const first = new BridgeChildProcess(env);
    const second = new BridgeChildProcess({ ...env, BRIDGE_HOLD_START: '1' });
    const tasks = [first, second];
    let consuming = true;
    let sendingOrders = true;
    const events: { orderNo: string; kind: 'PAID' | 'FINISHED'; msgId: string; queueId: number }[] = [];
    const ids = new MsgIdGenerator('7F000001', 0x0fd0);
    const suffix = randomUUID().slice(0, 4);
    const orderNo = (i: number) => `SO-${suffix}-${String(i).padStart(3, '0')}`;
    let ordersStarted = 0;
    const sendEvent = async (order: string, kind: 'PAID' | 'FINISHED') => {
      const body =
        kind === 'PAID'
          ? { orderNo: order, userId: 88372, points: 300, paidAt: new Date().toISOString() }
          : { orderNo: order, finishedAt: new Date().toISOString() };
      const message = new Message(ORDER_TOPIC, kind, JSON.stringify(body));
      message.keys = [order];
      message.properties.__SHARDINGKEY = order;
      message.properties.UNIQ_KEY = ids.next();
      const result = await sendOrdered(producer!, message, order);
      events.push({
        orderNo: order,
        kind,
        msgId: message.properties.UNIQ_KEY,
        queueId: Number(result.messageQueue.queueId),
      });
    };
    try {
      await first.waitFor('the first task started', started, 60_000);
      const consumer = (async () => {
        while (consuming) if ((await f.poll()).records.length === 0) await sleep(200);
      })();
      // Orders keep coming: each one's PAID, and the FINISHED of the order three before it, so
      // every FIFO message group's two events are interleaved with other orders'.
      const sending = (async () => {
        for (; sendingOrders; ordersStarted++) {
          await f.createOrder(orderNo(ordersStarted));
          await sendEvent(orderNo(ordersStarted), 'PAID');
          if (ordersStarted >= 3) await sendEvent(orderNo(ordersStarted - 3), 'FINISHED');
          await sleep(150);
        }
        for (let i = Math.max(0, ordersStarted - 3); i < ordersStarted; i++) await sendEvent(orderNo(i), 'FINISHED');
      })();

      // Act: once the first task is forwarding, the second joins right after one of the first
      // task's periodic rebalances, so the first keeps pulling every queue for almost its whole
      // 10-second interval while the second pulls half of them.
      await second.waitFor(
        'the second task loaded',
        (lines) => (lines.some((l) => l.hold === 'start') ? true : undefined),
        60_000,
      );
      await first.waitFor(
        'the first task forwarding',
        (lines) => (forwardedMsgIds(lines).length >= 12 ? true : undefined),
        30_000,
      );
      const mark = first.lines.length;
      await first.waitFor(
        'a rebalance of the first task',
        (lines) => (lines.slice(mark).some(isRebalanceOf(ORDER_TOPIC)) ? true : undefined),
        15_000,
      );
      second.kill('SIGUSR2');
      await second.waitFor('the second task started', started, 30_000);
      const secondQueues = await second.waitFor(
        'the second task’s allocation',
        (lines) => allocationOf(lines, ORDER_TOPIC),
        10_000,
      );
      const firstMark = first.lines.length;
      const firstQueues = await first.waitFor(
        'the first task giving up queues at its next rebalance',
        (lines) => {
          const queues = allocationOf(lines.slice(firstMark), ORDER_TOPIC);
          return queues && queues.length < QUEUE_IDS.length ? queues : undefined;
        },
        20_000,
      );
      // A few more orders after the handover, then the producer finishes the orders it started.
      const handedOverAt = ordersStarted;
      await until(
        'orders after the handover',
        async () => (ordersStarted >= handedOverAt + 4 ? true : undefined),
        20_000,
      );
      sendingOrders = false;
      await sending;
      const everything = events.map((e) => e.msgId);
      await until(
        'every event forwarded by one task or the other',
        async () => {
          const forwarded = new Set(tasks.flatMap((t) => forwardedMsgIds(t.lines)));
          return everything.every((id) => forwarded.has(id)) ? true : undefined;
        },
        60_000,
      );
      const orders = [...new Set(events.map((e) => e.orderNo))];
      await until(
        'every order FINISHED',
        async () =>
          (await Promise.all(orders.map((o) => f.order(o)))).every((o) => o?.status === 'FINISHED') ? true : undefined,
        60_000,
      );
      consuming = false;
      await consumer;
      for (const task of tasks) task.kill('SIGTERM');
      const exits = await Promise.all(tasks.map((t) => t.exited));

      // Assess: the two tasks really shared queues: the second took half of them at once, the first
      // let them go only at its next rebalance, and both forwarded some of the same messages.
      expect(secondQueues.length).toBe(QUEUE_IDS.length / 2);
      expect(firstQueues.filter((q) => secondQueues.includes(q))).toEqual([]);
      const byFirst = new Set(forwardedMsgIds(first.lines));
      const bySecond = new Set(forwardedMsgIds(second.lines));
      const both = everything.filter((id) => byFirst.has(id) && bySecond.has(id));
      expect(both.length, 'messages both tasks forwarded while they shared the queues').toBeGreaterThan(0);
      const sharedQueues = new Set(events.filter((e) => both.includes(e.msgId)).map((e) => e.queueId));
      expect([...sharedQueues].every((q) => secondQueues.includes(q))).toBe(true);
      expect(exits.map((e) => e.code)).toEqual([0, 0]);
      // Assess: each order's events applied once each, PAID before FINISHED, none attempted early.
      const applied = f.reports.filter((r) => r.settlement.outcome === 'processed');
      for (const order of orders) {
        const mine = events.filter((e) => e.orderNo === order);
        expect(
          applied.filter((r) => r.key?.startsWith(`${order}#`)).map((r) => r.msgId),
          order,
        ).toEqual(mine.map((e) => e.msgId));
        const row = await f.order(order);
        expect(row).toMatchObject({ status: 'FINISHED', statusMsgId: mine.find((e) => e.kind === 'FINISHED')!.msgId });
      }
      const overtaken = f.reports.filter(
        (r) => r.settlement.outcome === 'failed' && r.settlement.error.code === 'NOT_YET_APPLICABLE',
      );
      expect(overtaken).toEqual([]);
      expect(await f.deadLetters()).toEqual([]);
      const duplicates = f.reports.filter((r) => r.settlement.outcome === 'duplicate').length;
      console.log(
        `orderly rebalance on RocketMQ 4.7.1: ${JSON.stringify({
          orders: orders.length,
          events: events.length,
          forwardedByFirst: forwardedMsgIds(first.lines).length,
          forwardedBySecond: forwardedMsgIds(second.lines).length,
          forwardedByBoth: both.length,
          sharedQueues: [...sharedQueues],
          deliveries: f.reports.length,
          applied: applied.length,
          duplicatesAtTheConsumer: duplicates,
        })}`,
      );
    } finally {
      consuming = false;
      sendingOrders = false;
      for (const task of tasks) task.kill('SIGKILL');
      await Promise.all(tasks.map((t) => t.exited));
    }
  }, 180_000);
});

describe('RocketMQ 4.7.1 master/slave switchover (the incident’s 主备切换, 47 double awards)', () => {
  it('master SIGKILLed under load: the groups read from the slave, the master returns with older offsets; a task that stayed up commits its own over them, a task restarted across the return re-forwards what it consumed from the slave; every order awarded exactly once', async () => {
    const result = await replaySwitchover(
      { rocketMq: rocketMq!, producer: producer!, probe: probe!, queueIds: QUEUE_IDS },
      { before: 40, backlog: 120, after: 40 },
    );
    const { staysUp, restarted } = result;
    console.log(
      `master/slave switchover on RocketMQ 4.7.1: ${JSON.stringify({
        orders: result.orders,
        messagesSent: result.sent.length,
        sendsRefusedDuringOutage: result.sendsRefused,
        outageMs: result.outageMs,
        slaveServedBeforeKill: result.slaveServed.beforeKill,
        slaveServedDuringOutage: result.slaveServed.atMasterReturn,
        slaveReadsBeganAfterMs: result.slaveReadsAfterMs,
        masterOffsetsBehindAfterReturnMs: result.recommitAfterMs,
        staysUp: figuresOf(result, staysUp),
        restarted: figuresOf(result, restarted),
      })}`,
    );

    // Assess: the switchover happened. Nothing was read from the slave before the kill; during the
    // outage it served both groups, and their offsets, committed to it, reached the queue ends.
    expect(result.slaveServed.beforeKill).toBe(0);
    expect(result.slaveServed.atMasterReturn).toBeGreaterThan(0);
    for (const group of [staysUp, restarted]) {
      expect(group.forwardedDuringOutage, `${group.group} forwarded during the outage`).toBeGreaterThan(0);
      // The master came back with older offsets than the slave held: the group's offset moved backwards.
      expect(sum(group.offsets.masterAfterReturn)).toBeLessThan(sum(group.offsets.slaveAtEnd));
    }
    // Nothing lost: every message a producer got a msgId for reached each group's queue.
    const sentIds = result.sent.map((s) => s.msgId);
    for (const group of [staysUp, restarted]) expect(sentIds.filter((id) => !group.forwards.has(id))).toEqual([]);

    // The restarted group's replacement read the master's older offsets back, on every queue, and
    // forwarded again exactly what the group had consumed from the slave.
    const readBack = new Set(restarted.staleReads.map((r) => `q${r.queueId}@${r.offset}`));
    expect([...readBack].sort()).toEqual(restarted.offsets.masterAfterReturn.map((offset, q) => `q${q}@${offset}`));
    expect(duplicatesOf(result, restarted)).toEqual({ offsetMovedBack: [...result.backlog].sort(), rebalance: [] });
    expect(rereadAfterStaleReads(result.sent, restarted)).toEqual([...result.backlog].sort());
    // The tasks that stayed up committed their offsets from memory over the master's within one
    // name-server poll (30 s) and one offset commit (5 s) of its return.
    expect(result.recommitAfterMs).toBeLessThan(45_000);
    // Whatever that group forwarded again below the slave's offsets follows from an older offset
    // one of its tasks read back from the returned master (in a rebalance against a master that
    // knew only the tasks that had sent it a heartbeat since its restart): none without one.
    const explained = rereadAfterStaleReads(result.sent, staysUp);
    expect(duplicatesOf(result, staysUp).offsetMovedBack.filter((id) => !explained.includes(id))).toEqual([]);

    // Every duplicate was suppressed: one award per order in each group, balances equal their ledgers.
    for (const group of [staysUp, restarted]) {
      await expectEveryOrderAwardedOnce(result, group);
      expect(group.taskExits.map((e) => e.code)).toEqual(group.taskExits.map(() => 0));
    }
  }, 420_000);
});

function started(lines: Record<string, unknown>[]): true | undefined {
  return lines.some((l) => l.message === 'bridge started') ? true : undefined;
}
