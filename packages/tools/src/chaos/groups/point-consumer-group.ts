/**
 * The points group's part in the chaos run: transactional (dedup record, ledger entry and
 * balance in one transaction, batch-packed).
 *
 * Invariants, from the ledger, the accounts and the group's DLQ, against every PAID the
 * bridge sent to the group (the coupon and status plug-ins' orders too: same topic):
 * - every paid order has exactly one AWARD entry, for its user and amount; a second one, or
 *   one matching no paid order, is a double award, a missing one a lost award;
 * - every balance equals the sum of its ledger (above it: an increment applied twice; below:
 *   one lost) and the sum of its user's paid orders;
 * - conflicting payments are dead-lettered as PAYLOAD_CONFLICT, invalid bodies as INVALID_PAYLOAD.
 */

import { LedgerEntryKind } from '@rocketmq-lambda/consumers/points/index.ts';
import { scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import { seededRandom, shuffle } from '../../local/seeded-random.ts';
import {
  type ChaosMessage,
  type ChaosPlugin,
  type ExpectedDeadLetter,
  type GroupReadout,
  type GroupVerdict,
  orderNoOf,
} from '../chaos-plugin.ts';
import { plainAttribute } from '../crash-points.ts';
import { type OrderPaid, OrderTopicProducer, orderTopicFact } from '../order-topic.ts';

const GROUP = 'point-consumer-group';

export const chaosPlugin: ChaosPlugin = {
  group: GROUP,
  crashPointName: 'before commit',

  /** Every award of points in the ledger is announced once (a 0-point order awards, and announces, nothing). */
  async announcedEffects({ dynamoDb, tables }) {
    return (await scanTable<Record<string, unknown>>(dynamoDb, tables.ledger))
      .filter((e) => e.kind === 'AWARD' && Number(e.points) > 0 && e.origin === undefined)
      .map((e) => String(e.orderNo));
  },

  /**
   * Phases: (1) orders with redeliveries (same msgId), application re-sends (new msgId, same
   * order), malformed envelopes and invalid bodies, shuffled; (2) once quiet, conflicting
   * payloads, so the original is always the one that won and the conflict is the one
   * dead-lettered; (3) once quiet, a rebalance replays a block of processed messages to this
   * group only.
   */
  workload({ seed, messages }) {
    const random = seededRandom(seed);
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
    const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
    const composition = {
      orders: 0,
      redeliveries: share(0.06),
      resends: share(0.05),
      malformedEnvelopes: share(0.01),
      invalidBodies: share(0.015),
      conflicts: share(0.005),
      replayed: share(0.04),
    };
    composition.orders = messages - Object.values(composition).reduce((n, v) => n + v, 0);
    const producer = new OrderTopicProducer(seed, '0A0C0A05');
    const { orders, users } = producer.orders(composition.orders, 'X', random);
    const originals = orders.map((o) => producer.paid(o));

    const phase1: ChaosMessage[] = [...originals];
    for (let i = 0; i < composition.redeliveries; i++)
      phase1.push({ ...pick(originals), label: 'redelivery (same msgId)' });
    for (let i = 0; i < composition.resends; i++)
      phase1.push(producer.resent(pick(orders), new Date(producer.bornBase + 10_000_000 + i).toISOString()));
    for (let i = 0; i < composition.malformedEnvelopes; i++) phase1.push(producer.malformedEnvelope(i));
    for (let i = 0; i < composition.invalidBodies; i++) phase1.push(producer.invalidPaid(i, pick(users)));
    shuffle(phase1, random);

    const phase2 = Array.from({ length: composition.conflicts }, (_, i) => {
      const o = orders[Math.floor((i + 0.5) * (orders.length / composition.conflicts))]!;
      return producer.conflicting(o, users.find((u) => u !== o.userId)!);
    });
    const blockStart = Math.floor(random() * Math.max(1, originals.length - composition.replayed));
    const phase3 = Array.from({ length: composition.replayed }, (_, i) => ({
      ...originals[(blockStart + i) % originals.length]!,
      label: 'rebalance replay (same msgId)',
      groups: [GROUP],
    }));
    return {
      phases: [
        { name: 'orders with duplicates, re-sends and poison', messages: phase1 },
        { name: 'conflicting payloads', messages: phase2 },
        { name: 'rebalance of the points group', messages: phase3 },
      ],
      composition,
    };
  },

  expect(received) {
    const orders = new Map<string, OrderPaid>();
    const msgIds = new Set<string>();
    const deadLetters: ExpectedDeadLetter[] = [];
    for (const message of received) {
      const fact = orderTopicFact(GROUP, message);
      if (fact.kind === 'order-paid') {
        orders.set(fact.orderNo, fact);
        msgIds.add(message.msgId!);
      } else if (fact.kind === 'conflicting-payment')
        deadLetters.push({ body: message.body, code: 'PAYLOAD_CONFLICT' });
      else if (fact.kind === 'invalid-body') deadLetters.push({ body: message.body, code: 'INVALID_PAYLOAD' });
    }
    return {
      deadLetters,
      crashTargets: { msgIds: [...msgIds], keys: [...orders.keys()] },
      judge: (readout) => judgePoints(orders, readout),
    };
  },

  /**
   * The process dies right before the `TransactWriteItems` that would commit the order: its dedup record (`key`) or its
   * ledger entry (`orderNo`).
   */
  crashPoint(keys) {
    const pending = new Set(keys);
    return (command, input) => {
      if (command !== 'TransactWriteItemsCommand' || pending.size === 0) return undefined;
      for (const action of (input.TransactItems as Array<{ Put?: { Item?: Record<string, unknown> } }>) ?? []) {
        for (const key of [plainAttribute(action.Put?.Item?.key), plainAttribute(action.Put?.Item?.orderNo)]) {
          if (typeof key === 'string' && pending.delete(key)) return { why: `crash before commit of ${key}` };
        }
      }
      return undefined;
    };
  },
};

/** A verdict being reached: what is found wrong as the ledger, the orders and the accounts are read in turn. */
interface PointsFindings {
  readonly violations: string[];
  doubleEffects: number;
  lostEffects: number;
  notJudged: number;
  balanceMismatches: number;
}

/** The points group's verdict, from its ledger and its accounts against the paid orders it was sent. */
async function judgePoints(
  orders: ReadonlyMap<string, OrderPaid>,
  { dynamoDb, tables, unsettled }: GroupReadout,
): Promise<GroupVerdict> {
  const found: PointsFindings = {
    violations: [],
    doubleEffects: 0,
    lostEffects: 0,
    notJudged: 0,
    balanceMismatches: 0,
  };
  const pendingOrders = new Set(unsettled.flatMap((m) => orderNoOf(m.fact) ?? []));
  const pendingUsers = new Set([...pendingOrders].map((o) => orders.get(o)?.userId));
  const ledger = readLedger(orders, await scanTable<Record<string, unknown>>(dynamoDb, tables.ledger), found);
  const expectedBalances = checkAwards(orders, ledger.awarded, pendingOrders, found);
  const accounts = new Map(
    (await scanTable<Record<string, unknown>>(dynamoDb, tables.accounts)).map((a) => [
      String(a.userId),
      Number(a.balance ?? 0),
    ]),
  );
  checkBalances({ accounts, ledgerSum: ledger.ledgerSum, expectedBalances, pendingUsers }, found);
  const { violations, doubleEffects, lostEffects, notJudged, balanceMismatches } = found;
  return {
    doubleEffects,
    lostEffects,
    violations,
    notJudged,
    detail: { orders: orders.size, users: expectedBalances.size, balanceMismatches },
  };
}

/** Each user's ledger sum, and how many AWARD entries each paid order has; an award matching no paid order is a double. */
function readLedger(
  orders: ReadonlyMap<string, OrderPaid>,
  entries: readonly Record<string, unknown>[],
  found: PointsFindings,
): { awarded: Map<string, number>; ledgerSum: Map<string, number> } {
  const awarded = new Map<string, number>();
  const ledgerSum = new Map<string, number>();
  for (const e of entries) {
    const userId = String(e.userId);
    ledgerSum.set(userId, (ledgerSum.get(userId) ?? 0) + Number(e.points));
    if (e.kind !== LedgerEntryKind.AWARD) continue;
    const order = orders.get(String(e.orderNo));
    if (!order || order.userId !== userId || order.points !== Number(e.points)) {
      found.doubleEffects++;
      found.violations.push(`award ${e.entryId} of ${e.points} to ${userId} matches no paid order of the workload`);
      continue;
    }
    awarded.set(order.orderNo, (awarded.get(order.orderNo) ?? 0) + 1);
  }
  return { awarded, ledgerSum };
}

/** Every paid order awarded exactly once (unless one of its copies is unsettled); returns each user's expected balance. */
function checkAwards(
  orders: ReadonlyMap<string, OrderPaid>,
  awarded: ReadonlyMap<string, number>,
  pendingOrders: ReadonlySet<string>,
  found: PointsFindings,
): Map<string, number> {
  const expectedBalances = new Map<string, number>();
  for (const order of orders.values()) {
    expectedBalances.set(order.userId, (expectedBalances.get(order.userId) ?? 0) + order.points);
    const times = awarded.get(order.orderNo) ?? 0;
    if (times > 1) {
      found.doubleEffects += times - 1;
      found.violations.push(`order ${order.orderNo} was awarded ${times} times`);
    }
    if (times === 0 && pendingOrders.has(order.orderNo)) found.notJudged++;
    else if (times === 0) {
      found.lostEffects++;
      found.violations.push(`order ${order.orderNo} (${order.points} points to ${order.userId}) was never awarded`);
    }
  }
  return expectedBalances;
}

/** Every balance equals its ledger's sum, and its user's paid orders' unless one of them is unsettled. */
function checkBalances(
  sums: {
    accounts: ReadonlyMap<string, number>;
    ledgerSum: ReadonlyMap<string, number>;
    expectedBalances: ReadonlyMap<string, number>;
    pendingUsers: ReadonlySet<string | undefined>;
  },
  found: PointsFindings,
): void {
  const { accounts, ledgerSum, expectedBalances, pendingUsers } = sums;
  for (const userId of new Set([...accounts.keys(), ...ledgerSum.keys(), ...expectedBalances.keys()])) {
    const balance = accounts.get(userId) ?? 0;
    const sum = ledgerSum.get(userId) ?? 0;
    const expected = expectedBalances.get(userId) ?? 0;
    if (balance !== sum) {
      found.balanceMismatches++;
      // An increment without its entry is an award applied twice; an entry without its increment, one lost.
      if (balance > sum) found.doubleEffects++;
      else found.lostEffects++;
      found.violations.push(`account ${userId}: balance ${balance} but its ledger sums to ${sum}`);
    } else if (balance !== expected && !pendingUsers.has(userId)) {
      found.balanceMismatches++;
      found.violations.push(
        `account ${userId}: balance ${balance} but the workload's paid orders add up to ${expected}`,
      );
    }
  }
}
