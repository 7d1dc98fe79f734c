import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type ChaosMessage, orderNoOf } from '../chaos/chaos-plugin.ts';
import type { OrderTopicFact } from '../chaos/order-topic.ts';
import type { ChaosPhase } from '../chaos/workload.ts';
import { seededRandom } from './seeded-random.ts';
import { trafficMessage } from './traffic.ts';

/**
 * The incident's order, and what the incident made of it: the same 300 points awarded twice
 * (the re-send's new msgId passed a check keyed by msgId), 600 in all.
 */
export const INCIDENT_ORDER = {
  orderNo: 'SO202007051422310088',
  userId: '88372',
  points: 300,
  incidentAwarded: 600,
} as const;
const POINTS_GROUP = 'point-consumer-group';
const TOPIC = 'ORDER_TOPIC';

/** A fault the scenario injects: the invocation holding `msgId` dies after its commit, before the batch is deleted. */
export interface CrashAfterCommit {
  readonly group: string;
  readonly msgId: string;
}

export interface Scenario {
  readonly title: string;
  /** Each message with the fact it stands for, so every group's chaos plug-in can judge the run. */
  readonly phases: readonly ChaosPhase[];
  readonly crashes: readonly CrashAfterCommit[];
  /** The order the report follows message by message. */
  readonly focusOrderNo: string;
}

/** A scenario message: the bridge's view of it, and what its producer meant. */
function scenarioMessage(
  body: string,
  fact: OrderTopicFact,
  extra: Parameters<typeof trafficMessage>[1],
): ChaosMessage {
  return { ...trafficMessage(body, extra), fact };
}

/** An ORDER_TOPIC envelope as the order service sends it: keyed by its order number, born at `at`. */
function envelope(body: unknown, msgId: string, at: number, tags = 'PAID', orderNo?: string): string {
  return writeEnvelope({
    topic: TOPIC,
    msgId,
    tags,
    keys: orderNo ? [orderNo] : [],
    body: typeof body === 'string' ? body : JSON.stringify(body),
    bornTimestamp: at,
    queueId: 0,
  });
}

const INCIDENT_AT = Date.UTC(2020, 6, 5, 14, 22, 31);

/**
 * The incident, replayed: order SO202007051422310088 of user 88372 (300 points)
 * delivered twice with one msgId 2.4 s apart, then re-sent by the application with a new
 * msgId; a burst of ordinary orders, one of which crashes its consumer after the commit,
 * before the ack; one producer bug sends a truncated body; some orders then finish
 * (`FINISHED`, which the points and coupon groups filter); and once everything is
 * consumed a rebalance resets the points group's offsets and replays a block of
 * processed messages.
 */
export function incidentScenario(options: { seed?: number; burst?: number } = {}): Scenario {
  const random = seededRandom(options.seed ?? 20200705);
  const ids = new MsgIdGenerator('0A1B2C3D', 0x2a9f);
  const copies = incidentCopies(ids.next(INCIDENT_AT), ids.next(INCIDENT_AT + 3000));
  const burst = burstOrders(ids, random, options.burst ?? 80);
  const finished = finishedOrders(ids, burst);
  const crashed = burst[9]!;
  const replayed = burst.slice(20, 45).map((m) => ({
    ...m,
    label: 'rebalance replay: offsets reset, already processed',
    atMs: 0,
    groups: [POINTS_GROUP],
  }));
  const incident = [
    copies[0]!,
    ...burst.map((m, i) =>
      i === 9 ? { ...m, label: 'ordinary order; its consumer crashes after the commit, before the ack' } : m,
    ),
    malformedMessage(ids),
    ...copies.slice(1),
  ];
  return {
    title: `Incident replay: order ${INCIDENT_ORDER.orderNo} of user ${INCIDENT_ORDER.userId} (${INCIDENT_ORDER.points} points)`,
    phases: [
      { name: 'incident and burst', messages: incident },
      { name: 'orders finish', messages: finished, afterQuiet: true },
      { name: 'rebalance of the points group', messages: replayed, afterQuiet: true },
    ],
    crashes: [{ group: POINTS_GROUP, msgId: crashed.msgId! }],
    focusOrderNo: INCIDENT_ORDER.orderNo,
  };
}

/**
 * The incident's order three times: the original, the bridge's redelivery of it 2.4 s later
 * (same msgId), and the application's re-send after a timeout (new msgId, same order).
 */
function incidentCopies(original: string, resend: string): ChaosMessage[] {
  const { orderNo, userId, points } = INCIDENT_ORDER;
  const body = { orderNo, userId, points, paidAt: new Date(INCIDENT_AT).toISOString() };
  const paid = { kind: 'order-paid', orderNo, userId, points } as const;
  const firstCopy = envelope(body, original, INCIDENT_AT, 'PAID', orderNo);

  return [
    scenarioMessage(firstCopy, paid, { label: 'original delivery', atMs: 0 }),
    scenarioMessage(firstCopy, paid, {
      label: 'same message again, same msgId, 2.4 s later (bridge redelivery)',
      atMs: 2400,
    }),
    scenarioMessage(envelope(body, resend, INCIDENT_AT + 3000, 'PAID', orderNo), paid, {
      label: 'application re-send after a timeout: new msgId, same order',
      atMs: 2600,
    }),
  ];
}

/** `size` ordinary orders of 20 users, one paid every 7 ms after the incident's. */
function burstOrders(ids: MsgIdGenerator, random: () => number, size: number): ChaosMessage[] {
  return Array.from({ length: size }, (_, k) => {
    const i = k + 1;
    const at = INCIDENT_AT + 1000 + i * 7;
    const orderNo = `SO20200705142232${String(i).padStart(4, '0')}`;
    const userId = String(10001 + Math.floor(random() * 20));
    const points = 10 * (1 + Math.floor(random() * 50));
    return scenarioMessage(
      envelope({ orderNo, userId, points, paidAt: new Date(at).toISOString() }, ids.next(at), at, 'PAID', orderNo),
      { kind: 'order-paid', orderNo, userId, points },
      { label: 'ordinary order', atMs: 100 + i * 5 },
    );
  });
}

/** Every eighth order of the burst finished a minute later: the status group moves it, points and coupons filter the tag. */
function finishedOrders(ids: MsgIdGenerator, burst: readonly ChaosMessage[]): ChaosMessage[] {
  const finishedAt = INCIDENT_AT + 60_000;
  return burst
    .filter((_, i) => (i + 1) % 8 === 0)
    .map((m, i) => {
      const orderNo = orderNoOf(m.fact)!;
      return scenarioMessage(
        envelope(
          { orderNo, finishedAt: new Date(finishedAt + i).toISOString() },
          ids.next(finishedAt + i),
          finishedAt + i,
          'FINISHED',
          orderNo,
        ),
        { kind: 'order-finished', orderNo },
        { label: 'order finished', atMs: i * 5 },
      );
    });
}

/** A producer bug: a truncated body, in a valid envelope. */
function malformedMessage(ids: MsgIdGenerator): ChaosMessage {
  const at = INCIDENT_AT + 1500;
  return scenarioMessage(
    envelope('{"orderNo":"SO202007051422330001","userId":88373,"points":', ids.next(at), at),
    { kind: 'invalid-body' },
    { label: 'malformed body (truncated JSON from a producer bug)', atMs: 1500 },
  );
}
