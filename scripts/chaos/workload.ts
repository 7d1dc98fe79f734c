import { seededRandom } from '../local/seeded-random.ts';
import { trafficMessage, type TrafficMessage, type TrafficPhase } from '../local/traffic.ts';
import { MsgIdGenerator, writeEnvelope } from '../../lib/rocketmq/envelope-writer.ts';

export const CHAOS_POINTS_GROUP = 'point-consumer-group';
export const CHAOS_COUPON_GROUP = 'coupon-consumer-group';
/** The groups the chaos run drives: a transactional consumer (points) and a lease consumer (coupons). */
export const CHAOS_GROUPS = [CHAOS_POINTS_GROUP, CHAOS_COUPON_GROUP] as const;

export class InvalidWorkloadError extends Error {
  override readonly name = 'InvalidWorkloadError';
}

/** What a valid order must come to: one award of `points` to `userId`, one coupon. */
export interface ExpectedOrder {
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
  /** The msgId of the copy the producer sent first. */
  readonly msgId: string;
}

/** A poison copy and the DLQ code each group must give it. */
export interface ExpectedDeadLetter {
  readonly body: string;
  readonly kind: 'malformed-envelope' | 'bad-body' | 'conflicting-payload';
  /** group → `failure-code` the group's DLQ copy must carry. */
  readonly codes: Readonly<Record<string, string>>;
}

/** How the workload's messages break down (they add up to `messages`). */
export interface WorkloadComposition {
  originals: number;
  /** Same msgId, same body again: a lost ack, a bridge retry. */
  redeliveries: number;
  /** The application sent the order again after a timeout: new msgId, same content. */
  resends: number;
  /** `FINISHED` events: both groups subscribe to `PAID` only. */
  filtered: number;
  malformedEnvelopes: number;
  badBodies: number;
  /** Same order, another user and amount, new msgId, after the original settled. */
  conflicts: number;
  /** A rebalance resets the points group's offsets: a block of processed messages again. */
  replayed: number;
}

export interface ChaosWorkload {
  readonly seed: number;
  readonly messages: number;
  readonly phases: readonly TrafficPhase[];
  readonly orders: ReadonlyMap<string, ExpectedOrder>;
  /** Expected balance per user: the sum of its valid orders' points. */
  readonly balances: Readonly<Record<string, number>>;
  readonly deadLetters: readonly ExpectedDeadLetter[];
  readonly composition: WorkloadComposition;
}

const ORDER_TOPIC = 'ORDER_TOPIC';
const MIN_MESSAGES = 40;

/**
 * The chaos run's traffic, from the seed alone: valid orders, the copies the transport
 * and the application add (redeliveries, re-sends, a rebalance replay), other tags, and
 * poison. Everything the invariants are checked against is derived here from what was
 * generated, never from what the run reports.
 *
 * Phases: (1) everything except conflicts and the replay, shuffled; (2) once quiet, the
 * conflicting payloads, so the original is always the one that won and the conflict is
 * the one dead-lettered; (3) once quiet, the rebalance replay to the points group only.
 */
export function generateWorkload(options: { seed: number; messages: number }): ChaosWorkload {
  const { seed, messages } = options;
  if (!Number.isInteger(messages) || messages < MIN_MESSAGES) throw new InvalidWorkloadError(`messages must be an integer >= ${MIN_MESSAGES}, got ${messages}`);
  if (!Number.isInteger(seed)) throw new InvalidWorkloadError(`seed must be an integer, got ${seed}`);
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));

  const composition: WorkloadComposition = {
    originals: 0,
    redeliveries: share(0.06),
    resends: share(0.05),
    filtered: share(0.02),
    malformedEnvelopes: share(0.01),
    badBodies: share(0.015),
    conflicts: share(0.005),
    replayed: share(0.04),
  };
  const extras = Object.values(composition).reduce((n, v) => n + v, 0);
  composition.originals = messages - extras;

  // Born timestamps follow the seed, not the wall clock, so one seed gives the same bytes.
  const bornBase = Date.UTC(2024, 0, 1) + (Math.abs(seed) % 1_000_000) * 1000;
  const ids = new MsgIdGenerator('0A0C0A05', seed & 0xffff);
  let clock = 0;
  const envelope = (body: string, tags: string, keys: string[] = []) => {
    const born = bornBase + clock++;
    const msgId = ids.next(born);
    return { msgId, body: writeEnvelope({ topic: ORDER_TOPIC, msgId, tags, keys, body, bornTimestamp: born }) };
  };

  const users = Array.from({ length: Math.max(5, Math.floor(composition.originals / 15)) }, (_, i) => `u${seed}-${i}`);
  const orders = new Map<string, ExpectedOrder>();
  const originals: TrafficMessage[] = [];
  for (let i = 0; i < composition.originals; i++) {
    const orderNo = `SO${Math.abs(seed).toString(36).toUpperCase()}X${String(i).padStart(6, '0')}`;
    const userId = pick(users);
    const points = 1 + Math.floor(random() * 500);
    const paidAt = new Date(bornBase + i).toISOString();
    const e = envelope(JSON.stringify({ orderNo, userId, points, paidAt }), 'PAID', [orderNo]);
    orders.set(orderNo, { orderNo, userId, points, msgId: e.msgId });
    originals.push(trafficMessage(e.body, { label: 'order paid' }));
  }
  const orderList = [...orders.values()];
  const originalOf = new Map(orderList.map((o, i) => [o.orderNo, originals[i]!]));

  const phase1: TrafficMessage[] = [...originals];
  for (let i = 0; i < composition.redeliveries; i++) phase1.push({ ...pick(originals), label: 'redelivery (same msgId)' });
  for (let i = 0; i < composition.resends; i++) {
    const o = pick(orderList);
    const original = JSON.parse(JSON.parse(originalOf.get(o.orderNo)!.body).data.body) as Record<string, unknown>;
    // A re-send is the same order; the producer may stamp a new paidAt, which is not part of the award's identity.
    phase1.push(trafficMessage(envelope(JSON.stringify({ ...original, paidAt: new Date(bornBase + 10_000_000 + i).toISOString() }), 'PAID', [o.orderNo]).body, { label: 'application re-send (new msgId)' }));
  }
  for (let i = 0; i < composition.filtered; i++) {
    const o = pick(orderList);
    phase1.push(trafficMessage(envelope(JSON.stringify({ orderNo: o.orderNo, finishedAt: new Date(bornBase + 20_000_000 + i).toISOString() }), 'FINISHED', [o.orderNo]).body, { label: 'order finished (other tag)' }));
  }

  const deadLetters: ExpectedDeadLetter[] = [];
  const everyGroup = (code: string) => Object.fromEntries(CHAOS_GROUPS.map((g) => [g, code]));
  for (let i = 0; i < composition.malformedEnvelopes; i++) {
    const body = malformedEnvelope(i, envelope);
    deadLetters.push({ body, kind: 'malformed-envelope', codes: everyGroup('INVALID_ENVELOPE') });
    phase1.push(trafficMessage(body, { label: 'malformed envelope' }));
  }
  for (let i = 0; i < composition.badBodies; i++) {
    const body = envelope(badBody(i, pick(users)), 'PAID').body;
    deadLetters.push({ body, kind: 'bad-body', codes: everyGroup('INVALID_PAYLOAD') });
    phase1.push(trafficMessage(body, { label: 'bad body' }));
  }
  shuffle(phase1, random);

  const phase2: TrafficMessage[] = [];
  for (let i = 0; i < composition.conflicts; i++) {
    const o = orderList[Math.floor((i + 0.5) * (orderList.length / composition.conflicts))]!;
    const other = users.find((u) => u !== o.userId)!;
    const body = envelope(JSON.stringify({ orderNo: o.orderNo, userId: other, points: o.points + 1 }), 'PAID', [o.orderNo]).body;
    deadLetters.push({ body, kind: 'conflicting-payload', codes: everyGroup('PAYLOAD_CONFLICT') });
    phase2.push(trafficMessage(body, { label: 'conflicting payload for an existing order' }));
  }

  const blockStart = Math.floor(random() * Math.max(1, originals.length - composition.replayed));
  const phase3 = Array.from({ length: composition.replayed }, (_, i) => ({
    ...originals[(blockStart + i) % originals.length]!,
    label: 'rebalance replay (same msgId)',
    groups: [CHAOS_POINTS_GROUP],
  }));

  const balances: Record<string, number> = {};
  for (const o of orderList) balances[o.userId] = (balances[o.userId] ?? 0) + o.points;
  return {
    seed,
    messages,
    phases: [
      { name: 'traffic with duplicates, re-sends and poison', messages: phase1 },
      { name: 'conflicting payloads', messages: phase2, afterQuiet: true },
      { name: 'rebalance of the points group', messages: phase3, afterQuiet: true },
    ],
    orders,
    balances,
    deadLetters,
    composition,
  };
}

/** Bodies a producer bug or a broken bridge could put on the queue; each one unique so its DLQ copy can be found. */
function malformedEnvelope(i: number, envelope: (body: string, tags: string) => { body: string }): string {
  switch (i % 4) {
    case 0:
      return `{"specversion":"1.0","id":"broken-${i}","data":{"topic":"ORDER_TOPIC"`;
    case 1:
      return JSON.stringify({ hello: 'not an envelope', n: i });
    case 2: {
      const e = JSON.parse(envelope(JSON.stringify({ orderNo: `SOBADID${i}`, userId: 'u', points: 1 }), 'PAID').body);
      e.data.msgId = `not-a-msg-id-${i}`;
      e.id = e.data.msgId;
      e.data.systemProperties.UNIQ_KEY = e.data.msgId;
      return JSON.stringify(e);
    }
    default:
      return JSON.stringify([i, 'an array']);
  }
}

/** Envelopes are fine, bodies are not: both consumers' schemas reject each of these. */
function badBody(i: number, userId: string): string {
  switch (i % 6) {
    case 0:
      return `{"orderNo":"SOTRUNC${i}","userId":`;
    case 1:
      return JSON.stringify({ userId, points: 10, n: i });
    case 2:
      return JSON.stringify({ orderNo: `SO BAD ${i}`, userId, points: 10 });
    case 3:
      return JSON.stringify({ orderNo: `SONEG${i}`, userId, points: -5 });
    case 4:
      return JSON.stringify({ orderNo: `SOFRAC${i}`, userId, points: 1.5 });
    default:
      return JSON.stringify({ orderNo: `SONOUSER${i}`, userId: '', points: 10 });
  }
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
