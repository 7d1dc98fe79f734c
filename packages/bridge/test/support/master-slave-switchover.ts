import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import type { LocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { Message, type Producer } from 'ali-ons';
import { BridgeChildProcess, bridgeEnv, forwardedMsgIds } from './bridge-child-process.ts';
import { bridgeSigningKey } from './bridge-signing-key.ts';
import type { BrokerProbe } from './broker-probe.ts';
import { allocationOf, offsetReads } from './client-rebalance.ts';
import { remotingBridgeConfig } from './remoting-bridge-config.ts';

/**
 * The incident's failover as it happened: one 4.7.1 broker group of an `ASYNC_MASTER` and a
 * `SLAVE`, the master killed with SIGKILL while orders flow, consumption going on from the slave,
 * the master coming back on its store. Two consumer groups of the bridge live through the same
 * switchover, each feeding a points consumer of its own (tables and queue):
 * - "stays up": two tasks (the service's default count) run across the whole switchover; once
 *   the master is back and has their offsets again, one of them is replaced, as a rolling deploy
 *   does: the new task and the remaining one read the queues they take over back from the broker;
 * - "restarted": its task is stopped (SIGTERM) during the outage, after it consumed the backlog
 *   from the slave, and its replacement starts once the master is back, reading every offset back
 *   from the broker, as a consumer restarted during the incident would.
 * The points consumers poll their queues the whole time, as Lambda's event source mapping would.
 */
/** The topic of the orders, and the one the points consumer subscribes to. */
export const ORDER_TOPIC = 'ORDER_TOPIC';

export interface SwitchoverCluster {
  readonly rocketMq: LocalRocketMQ4;
  readonly producer: Producer;
  readonly probe: BrokerProbe;
  readonly queueIds: readonly number[];
}

export interface SentOrder {
  readonly msgId: string;
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
  readonly queueId: number;
  readonly queueOffset: number;
}

/** What one consumer group went through. */
export interface GroupSwitchover {
  readonly group: string;
  /**
   * Its committed offsets per queue: on the master just before the kill (flushed to its store
   * too), on the slave at the end of the outage, on the master right after its return.
   */
  readonly offsets: {
    readonly masterBeforeKill: number[];
    readonly slaveAtEnd: number[];
    readonly masterAfterReturn: number[];
  };
  /** Every `forwarded` line of every task of the group, per msgId: when each copy reached SQS (epoch ms). */
  readonly forwards: ReadonlyMap<string, readonly number[]>;
  /** Messages forwarded while the master was down. */
  readonly forwardedDuringOutage: number;
  /**
   * Offsets a task of the group read back from the broker after the master's return that were
   * below the group's offset on the slave at the end of the outage: the offset moved backwards.
   */
  readonly staleReads: readonly { queueId: number; offset: number; at: number }[];
  /** From the kill until every message stored before it was forwarded. */
  readonly backlogForwardedAfterMs: number;
  readonly points: Awaited<ReturnType<typeof pointsFixture>>;
  readonly taskExits: readonly { code: number | null; signal: NodeJS.Signals | null }[];
}

export interface SwitchoverResult {
  readonly sent: readonly SentOrder[];
  /** The messages stored while the groups were paused, right before the kill: what they read from the slave. */
  readonly backlog: readonly string[];
  readonly orders: number;
  /** Sends the producers retried while the master was down (each retry a new message, with a new msgId). */
  readonly sendsRefused: number;
  /** Messages the slave had served to consumers before the kill, and by the time the master returned. */
  readonly slaveServed: { readonly beforeKill: number; readonly atMasterReturn: number };
  /** From the kill until the slave first served a message. */
  readonly slaveReadsAfterMs: number;
  /** From the kill until the master was registered again. */
  readonly outageMs: number;
  /** When the master was registered again (epoch ms). */
  readonly masterReturnedAt: number;
  /** From the master's return until it had the offsets of the group that stayed up back where the slave had them. */
  readonly recommitAfterMs: number;
  readonly staysUp: GroupSwitchover;
  readonly restarted: GroupSwitchover;
}

const USERS = 8;

/** Waits for `probe` to return a value, checking every 250 ms; fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

export async function replaySwitchover(
  cluster: SwitchoverCluster,
  options: { before: number; backlog: number; after: number },
): Promise<SwitchoverResult> {
  const { rocketMq, probe, queueIds } = cluster;
  const master = rocketMq.brokerAddr;
  const slave = rocketMq.slaveAddr!;
  const suffix = randomUUID().slice(0, 6);
  const staysUp = await groupOf(`points-stays-up-${suffix}`, rocketMq);
  const restarted = await groupOf(`points-restarted-${suffix}`, rocketMq);
  const groups = [staysUp, restarted];
  const allTasks = () => groups.flatMap((g) => g.tasks);
  const producer = new OrderProducer(cluster.producer, suffix);
  let consuming = true;
  const offsets = (addr: string, group: GroupRun) => probe.consumerOffsets(addr, group.name, ORDER_TOPIC, queueIds);
  const everyGroupForwarded = (msgIds: readonly string[]) =>
    groups.every((g) => g.forwardedAll(msgIds)) ? true : undefined;

  try {
    // Both groups have consumed whatever the topic already holds, as the incident's long-lived
    // group had: their offsets stand at the queue ends.
    const start = await probe.maxOffsets(master, ORDER_TOPIC, queueIds);
    for (const g of groups) await probe.commitOffsets(master, g.name, ORDER_TOPIC, start);
    await Promise.all([staysUp.start(), staysUp.start(), restarted.start()]);
    // Two tasks started together pull the same queues until both have rebalanced (within 10 s):
    // the switchover starts once each holds queues of its own and together they hold them all.
    await until(
      'the two tasks that stay up holding their own queues',
      async () => {
        const held = staysUp.tasks.map((t) => allocationOf(t.lines, ORDER_TOPIC) ?? []);
        const all = held.flat().sort((a, b) => a - b);
        return held.every((queues) => queues.length > 0) && all.join() === queueIds.join() ? true : undefined;
      },
      30_000,
    );
    const consumers = groups.map(async (g) => {
      while (consuming) if ((await g.poll()) === 0) await sleep(200);
    });

    // Before: orders flow and both groups forward them from the master, commit their offsets,
    // and the master flushes them: what it comes back with after the kill is then exactly what
    // the groups had consumed from it, no older.
    await producer.sendOrders(0, options.before);
    const beforeIds = producer.sent.map((s) => s.msgId);
    await until('both groups forwarding from the master', async () => everyGroupForwarded(beforeIds), 60_000);
    const consumed = await probe.maxOffsets(master, ORDER_TOPIC, queueIds);
    await until(
      'the master flushing both groups’ offsets',
      async () => {
        const flushed = groups.map((g) => flushedOffsets(rocketMq.storeDir, g.name, queueIds));
        return flushed.every((f) => f.every((o, q) => o === consumed[q])) ? true : undefined;
      },
      30_000,
    );

    // A backlog the groups have not read yet when the master dies: every task paused while it is sent.
    for (const task of allTasks()) task.kill('SIGSTOP');
    await producer.sendOrders(options.before, options.backlog);
    const storedBeforeKill = producer.sent.map((s) => s.msgId);
    const ends = await until(
      'the slave holding every message',
      async () => {
        const [onMaster, onSlave] = await Promise.all([
          probe.maxOffsets(master, ORDER_TOPIC, queueIds),
          probe.maxOffsets(slave, ORDER_TOPIC, queueIds),
        ]);
        return onMaster.every((o, q) => onSlave[q] === o) ? onMaster : undefined;
      },
      15_000,
    );
    const slaveServedBeforeKill = await probe.messagesServed(slave);
    const masterBeforeKill = await Promise.all(groups.map((g) => offsets(master, g)));

    // The switchover: the master dies, the tasks go on; nothing can be written until the master is
    // back (no second broker group), and the producers keep retrying.
    await rocketMq.killBroker();
    const killedAt = Date.now();
    for (const task of allTasks()) task.kill('SIGCONT');
    const producing = producer.sendOrders(options.before + options.backlog, options.after);
    const slaveReadsAfterMs = await until(
      'the slave serving the groups',
      async () => ((await probe.messagesServed(slave)) > slaveServedBeforeKill ? Date.now() - killedAt : undefined),
      90_000,
    );
    const backlogForwardedAfterMs = await Promise.all(
      groups.map(async (g) => {
        await until(
          `${g.name} forwarding the backlog`,
          async () => (g.forwardedAll(storedBeforeKill) ? true : undefined),
          90_000,
        );
        return Date.now() - killedAt;
      }),
    );

    // The restarted group's task is stopped during the outage; it commits its offsets to the only broker it knows.
    const stopped = restarted.tasks[0]!;
    stopped.kill('SIGTERM');
    await stopped.exited;
    const slaveAtEnd = await Promise.all(
      groups.map((g) =>
        until(
          `${g.name}'s offsets on the slave reaching the queue ends`,
          async () => {
            const onSlave = await offsets(slave, g);
            return onSlave.every((o, q) => o === ends[q]) ? onSlave : undefined;
          },
          20_000,
        ),
      ),
    );
    const slaveServedAtReturn = await probe.messagesServed(slave);

    await rocketMq.restartBroker();
    const backAt = Date.now();
    const masterAfterReturn = await Promise.all(groups.map((g) => offsets(master, g)));
    // The replacement reads every offset back from the broker: from the master, now in the route.
    const replacement = restarted.start();
    // The tasks that stayed up commit their offsets from memory, to the master once their route has it again.
    const recommitAfterMs = await until(
      'the tasks that stayed up committing their offsets to the returned master',
      async () => {
        const onMaster = await offsets(master, staysUp);
        return onMaster.every((o, q) => o >= slaveAtEnd[0]![q]!) ? Date.now() - backAt : undefined;
      },
      90_000,
    );
    // Then one of them is replaced as ECS replaces a task (the new one first): the new task reads
    // its share of the queues back from the broker, the remaining one the rest once the old one left.
    const leaving = staysUp.tasks[0]!;
    await staysUp.start();
    leaving.kill('SIGTERM');
    await leaving.exited;
    await replacement;

    await producing;
    const everything = producer.sent.map((s) => s.msgId);
    await until('both groups forwarding every order sent', async () => everyGroupForwarded(everything), 120_000);
    consuming = false;
    await Promise.all(consumers);
    await Promise.all(groups.map((g) => g.points.drain()));
    for (const task of allTasks()) task.kill('SIGTERM');
    const exits = await Promise.all(groups.map((g) => Promise.all(g.tasks.map((t) => t.exited))));

    const outcome = (index: number): GroupSwitchover => {
      const group = groups[index]!;
      return {
        group: group.name,
        offsets: {
          masterBeforeKill: masterBeforeKill[index]!,
          slaveAtEnd: slaveAtEnd[index]!,
          masterAfterReturn: masterAfterReturn[index]!,
        },
        forwards: forwardsOf(group.tasks),
        forwardedDuringOutage: forwardedBetween(group.tasks, killedAt, backAt),
        staleReads: group.tasks
          .flatMap((t) => offsetReads(t.lines, ORDER_TOPIC))
          .filter((read) => read.at >= backAt && read.offset < slaveAtEnd[index]![read.queueId]!),
        backlogForwardedAfterMs: backlogForwardedAfterMs[index]!,
        points: group.points,
        taskExits: exits[index]!,
      };
    };
    return {
      sent: producer.sent,
      backlog: storedBeforeKill.slice(beforeIds.length),
      orders: options.before + options.backlog + options.after,
      sendsRefused: producer.refused,
      slaveServed: { beforeKill: slaveServedBeforeKill, atMasterReturn: slaveServedAtReturn },
      slaveReadsAfterMs,
      outageMs: backAt - killedAt,
      masterReturnedAt: backAt,
      recommitAfterMs,
      staysUp: outcome(0),
      restarted: outcome(1),
    };
  } finally {
    consuming = false;
    for (const task of allTasks()) {
      task.kill('SIGCONT');
      task.kill('SIGKILL');
    }
    await Promise.all(allTasks().map((t) => t.exited));
  }
}

/** PAID orders as the order service sends them, with the Java producer's UNIQ_KEY, re-sent until accepted. */
class OrderProducer {
  readonly sent: SentOrder[] = [];
  refused = 0;
  readonly #ids = new MsgIdGenerator('7F000001', process.pid & 0xffff);

  constructor(
    private readonly producer: Producer,
    private readonly prefix: string,
  ) {}

  async sendOrders(from: number, count: number): Promise<void> {
    for (let i = from; i < from + count; i++) await this.#send(i);
  }

  async #send(i: number): Promise<void> {
    const order = {
      orderNo: `SO-${this.prefix}-${String(i).padStart(4, '0')}`,
      userId: `u${i % USERS}`,
      points: 1 + (i % 5),
    };
    for (;;) {
      const message = new Message(ORDER_TOPIC, 'PAID', JSON.stringify(order));
      message.keys = [order.orderNo];
      // A new UNIQ_KEY per send call: a send the application repeats after a failure is a new message.
      message.properties.UNIQ_KEY = this.#ids.next();
      try {
        const result = await this.producer.send(message);
        this.sent.push({
          ...order,
          msgId: message.properties.UNIQ_KEY,
          queueId: Number(result.messageQueue.queueId),
          queueOffset: Number(result.queueOffset),
        });
        return;
      } catch {
        this.refused += 1;
        await sleep(500);
      }
    }
  }
}

interface GroupRun {
  readonly name: string;
  readonly tasks: BridgeChildProcess[];
  readonly points: Awaited<ReturnType<typeof pointsFixture>>;
  /** Starts one more bridge task of the group; resolves once it consumes. */
  start(): Promise<void>;
  /** Whether the group's tasks, together, forwarded every one of these msgIds. */
  forwardedAll(msgIds: readonly string[]): boolean;
  /** One Lambda-like poll of the group's points queue; resolves with the number of records received. */
  poll(): Promise<number>;
}

async function groupOf(name: string, rocketMq: LocalRocketMQ4): Promise<GroupRun> {
  const signing = await bridgeSigningKey();
  const points = await pointsFixture({ envelopeKeys: signing.ring });
  const queue = points.resources.queues[POINTS_GROUP]!;
  const unsigned = remotingBridgeConfig(rocketMq, [
    {
      group: name,
      topic: ORDER_TOPIC,
      tagExpression: 'PAID',
      target: { kind: 'sqs', queueUrl: queue.source.url },
      dlqUrl: queue.deadLetter.url,
    },
  ]);
  const config = { ...unsigned, signing: { secretId: signing.secretId } };
  const tasks: BridgeChildProcess[] = [];
  return {
    name,
    tasks,
    points,
    start: async () => {
      // The client's own lines (allocations, offsets read back) are logged at debug.
      const task = new BridgeChildProcess(bridgeEnv(config, { POWERTOOLS_LOG_LEVEL: 'DEBUG' }));
      tasks.push(task);
      await task.waitFor(
        'bridge started',
        (lines) => (lines.some((l) => l.message === 'bridge started') ? true : undefined),
        120_000,
      );
    },
    forwardedAll: (msgIds) => {
      const forwarded = new Set(tasks.flatMap((t) => forwardedMsgIds(t.lines)));
      return msgIds.every((id) => forwarded.has(id));
    },
    poll: async () =>
      (
        await pollOnce({
          sqs: points.sqs,
          queueUrl: queue.source.url,
          queueArn: queue.source.arn,
          handler: points.handler,
          functionName: 'points-consumer',
        })
      ).received,
  };
}

/**
 * The group's offsets in the broker's `consumerOffset.json` (fastjson, integer keys unquoted:
 * `"ORDER_TOPIC@group":{0:10,1:10}`), `-1` where it has none.
 */
function flushedOffsets(storeDir: string, group: string, queueIds: readonly number[]): number[] {
  const file = join(storeDir, 'config', 'consumerOffset.json');
  const table = existsSync(file)
    ? new RegExp(`"${ORDER_TOPIC}@${group}":\\{([^}]*)\\}`).exec(readFileSync(file, 'utf8'))
    : null;
  const offsets = new Map(
    (table?.[1] ?? '')
      .split(',')
      .filter((entry) => entry.includes(':'))
      .map((entry) => entry.split(':').map((n) => Number(n.replace(/"/g, ''))) as [number, number]),
  );
  return queueIds.map((q) => offsets.get(q) ?? -1);
}

function forwardsOf(tasks: readonly BridgeChildProcess[]): Map<string, number[]> {
  const forwards = new Map<string, number[]>();
  for (const line of tasks.flatMap((t) => t.lines).filter((l) => l.message === 'forwarded'))
    for (const id of line.msgIds as string[])
      forwards.set(id, [...(forwards.get(id) ?? []), Date.parse(String(line.timestamp))]);
  return forwards;
}

function forwardedBetween(tasks: readonly BridgeChildProcess[], from: number, to: number): number {
  return tasks
    .flatMap((t) => t.lines)
    .filter((l) => {
      const at = Date.parse(String(l.timestamp));
      return l.message === 'forwarded' && at >= from && at < to;
    })
    .reduce((n, l) => n + (l.msgIds as string[]).length, 0);
}
