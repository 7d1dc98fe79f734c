/**
 * The order-status group's part in the chaos run: state transition (one conditional update
 * per event, WAIT_PAY → PAID → FINISHED, no dedup record), an orderly group: the local run
 * gives it FIFO queues and sends each order's events as one message group (the order number),
 * so the events of one order reach the consumer in producer order, one at a time.
 *
 * The ordering invariant, per order, against every distinct event (msgId) the bridge sent the
 * group, in producer order (the points and coupon plug-ins' PAIDs too: the group subscribes to
 * `PAID || FINISHED` on ORDER_TOPIC):
 * 1. The final status equals the last event in producer order, as the lifecycle applies them:
 *    each event moves the order one step (WAIT_PAY → PAID → FINISHED), an event at or behind
 *    the status is a duplicate, an event ahead of it can never apply (only a producer that
 *    sends FINISHED before PAID makes one) and is dead-lettered RETRIES_EXHAUSTED. From the
 *    orders table: the status, and `statusMsgId`, the message that made the last transition,
 *    which must be that event's and not a later duplicate's.
 * 2. No event was applied after a later one, and none was attempted before an earlier one was
 *    applied: from the consumer's reports (the table keeps only the last transition), no
 *    applied event of an order was received only after the invocation that applied a later one
 *    had ended (invocations that overlap are not ordered by when they end: the one that applied
 *    the PAID may end after the one that applied the FINISHED), and no event that has a
 *    predecessor in producer order ever found its order not yet at its predecessor's state
 *    (NOT_YET_APPLICABLE): the group let it overtake.
 * 3. No ILLEGAL_TRANSITION dead letter, no FINISHED dead-lettered but those rule 1 predicts;
 *    invalid bodies dead-lettered as INVALID_PAYLOAD (malformed envelopes as
 *    INVALID_ENVELOPE); nothing else in the DLQ and nothing left in the source queue (the run
 *    checks both for every group).
 *
 * The fault plan's transient failures fail the first attempt of some PAIDs whose FINISHED
 * follows: the middleware must hold the FINISHED back (HELD_BACK) until its PAID is applied.
 */

import { ORDER_TRANSITIONS, type Order, OrderStatus } from '@rocketmq-lambda/consumers/orders/index.ts';
import { scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import { DEAD_LETTER_ATTRIBUTES } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import type { Delivery } from '../../local/delivery-account.ts';
import { seedOrders } from '../../local/order-seeding.ts';
import { seededRandom } from '../../local/seeded-random.ts';
import {
  type ChaosMessage,
  type ChaosPlugin,
  type ExpectedDeadLetter,
  type GroupVerdict,
  orderNoOf,
} from '../chaos-plugin.ts';
import { crashInsideConditionalUpdate, updateAttribute } from '../crash-points.ts';
import { OrderTopicProducer, orderTopicFact } from '../order-topic.ts';
import { redeliverLater } from '../workload.ts';

const GROUP = 'order-status-consumer-group';
const LIFECYCLE: readonly string[] = [OrderStatus.WAIT_PAY, OrderStatus.PAID, OrderStatus.FINISHED];

/** One distinct event of an order (its first copy), in producer order. */
interface OrderEvent {
  readonly msgId: string;
  readonly body: string;
  readonly to: typeof OrderStatus.PAID | typeof OrderStatus.FINISHED;
}

/** What the lifecycle makes of an order's events applied one at a time in producer order. */
interface ExpectedOrder {
  readonly status: string;
  /** The event that made the last transition (`statusMsgId`); none when the order stays WAIT_PAY. */
  readonly lastTransition?: string;
  /** Events ahead of the status when their turn came: they can never apply, so they are dead-lettered. */
  readonly neverApplicable: readonly OrderEvent[];
}

export const chaosPlugin: ChaosPlugin = {
  group: GROUP,
  crashPointName: 'inside its conditional update',

  /**
   * Phase 1: a PAID and a FINISHED per order in producer order, the FINISHED one to four orders
   * after its PAID, so one message group's events are spread over batches and interleaved with
   * other groups'; redeliveries (same msgId) a few messages later, which FIFO deduplication
   * absorbs; invalid FINISHED bodies. Phase 2, once quiet: PAIDs delivered again after their
   * order finished (absorbed too while within the five minutes, a duplicate after).
   */
  workload({ seed, messages }) {
    const random = seededRandom(seed ^ 0x57a7);
    const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
    const composition = { orders: 0, redeliveries: share(0.06), invalidBodies: share(0.015), latePaid: share(0.03) };
    const lifecycles = messages - composition.redeliveries - composition.invalidBodies - composition.latePaid;
    composition.orders = Math.floor(lifecycles / 2);
    composition.redeliveries += lifecycles % 2;
    const producer = new OrderTopicProducer(seed, '0A0C0A08');
    const { orders } = producer.orders(composition.orders, 'S', random);
    const slotted = orders.flatMap((order, i) => [
      { slot: 3 * i, message: producer.paid(order) },
      {
        slot: 3 * i + 3 * (1 + Math.floor(random() * 4)) + 1,
        message: producer.finished(order.orderNo, new Date(producer.bornBase + 20_000_000 + i).toISOString()),
      },
    ]);
    const stream: ChaosMessage[] = slotted.sort((a, b) => a.slot - b.slot).map((s) => s.message);
    redeliverLater(stream, composition.redeliveries, random);
    for (let i = 0; i < composition.invalidBodies; i++)
      stream.splice(Math.floor(random() * (stream.length + 1)), 0, producer.invalidFinished(i));
    const paidOf = new Map(stream.filter((m) => m.fact.kind === 'order-paid').map((m) => [orderNoOf(m.fact), m]));
    const late = Array.from({ length: composition.latePaid }, (_, i) => ({
      ...paidOf.get(orders[Math.floor((i + 0.5) * (orders.length / composition.latePaid))]!.orderNo)!,
      label: 'PAID delivered again after its order finished (same msgId)',
    }));
    return {
      phases: [
        { name: 'order lifecycles in producer order', messages: stream },
        { name: 'late PAIDs of finished orders', messages: late },
      ],
      composition,
    };
  },

  expect(received) {
    const events = new Map<string, OrderEvent[]>();
    const seen = new Set<string>();
    const committing: string[] = [];
    const deadLetters: ExpectedDeadLetter[] = [];
    for (const message of received) {
      const fact = orderTopicFact(GROUP, message);
      if (fact.kind === 'invalid-body') {
        deadLetters.push({ body: message.body, code: 'INVALID_PAYLOAD' });
        continue;
      }
      if (events.get(fact.orderNo) === undefined) events.set(fact.orderNo, []);
      // A copy with a msgId already seen is the same event again, not a new one.
      if (seen.has(message.msgId!)) continue;
      seen.add(message.msgId!);
      if (fact.kind !== 'conflicting-payment') committing.push(message.msgId!);
      events.get(fact.orderNo)!.push({
        msgId: message.msgId!,
        body: message.body,
        to: fact.kind === 'order-finished' ? OrderStatus.FINISHED : OrderStatus.PAID,
      });
    }
    const expected = new Map([...events].map(([orderNo, list]) => [orderNo, applyInOrder(list)]));
    for (const order of expected.values())
      for (const e of order.neverApplicable) deadLetters.push({ body: e.body, code: 'RETRIES_EXHAUSTED' });
    const keys = [...events].flatMap(([orderNo, list]) => [...new Set(list.map((e) => transitionKey(orderNo, e.to)))]);
    return {
      deadLetters,
      crashTargets: {
        msgIds: committing,
        keys,
        // A PAID followed by its FINISHED: failing it must hold the FINISHED back.
        failures: [...events]
          .filter(([, list]) => list[0]?.to === OrderStatus.PAID && list.some((e) => e.to === OrderStatus.FINISHED))
          .map(([orderNo]) => transitionKey(orderNo, OrderStatus.PAID)),
      },
      // The order service created every order before it was paid or finished.
      seedTables: (dynamoDb, tables) => seedOrders(dynamoDb, tables.orders, [...events.keys()]),
      judge: async ({ dynamoDb, tables, deadLetters: letters, unsettled, deliveries }): Promise<GroupVerdict> => {
        const rows = new Map(
          (await scanTable<Partial<Order>>(dynamoDb, tables.orders)).map((r) => [String(r.orderNo), r]),
        );
        const pending = new Set(unsettled.map((m) => orderNoOf(m.fact)));
        const attempts = attemptsByOrder(deliveries, events);
        const verdict = { doubleEffects: 0, lostEffects: 0, violations: [] as string[], notJudged: 0 };
        const detail = {
          orders: 0,
          paid: 0,
          finished: 0,
          appliedOutOfOrder: 0,
          overtaken: 0,
          heldBack: deliveries.filter((d) => d.outcome.kind === 'retried' && d.outcome.code === 'HELD_BACK').length,
          illegalTransitionDeadLetters: letters.filter(
            (l) => l.attributes[DEAD_LETTER_ATTRIBUTES.code] === 'ILLEGAL_TRANSITION',
          ).length,
        };
        for (const orderNo of events.keys()) {
          if (pending.has(orderNo)) {
            verdict.notJudged++;
            continue;
          }
          const row = rows.get(orderNo);
          detail.orders++;
          if (row?.status === OrderStatus.PAID) detail.paid++;
          if (row?.status === OrderStatus.FINISHED) detail.finished++;
          const findings = orderingFindings(orderNo, expected.get(orderNo)!, row, attempts.get(orderNo) ?? []);
          detail.appliedOutOfOrder += findings.outOfOrder;
          detail.overtaken += findings.overtaken;
          verdict.doubleEffects += findings.double.length;
          verdict.lostEffects += findings.lost.length;
          verdict.violations.push(...findings.double, ...findings.lost, ...findings.other);
        }
        return { ...verdict, detail };
      },
    };
  },

  /**
   * Keys are the consumer's own (`SO1#PAID`): the update moving the order to that state is applied, and the process
   * dies.
   */
  crashPoint: (keys) =>
    crashInsideConditionalUpdate(keys, (update) => {
      const orderNo = updateAttribute(update, 'Key', 'orderNo');
      // The group's other updates (its failure counts) are keyed by `id`.
      return typeof orderNo === 'string'
        ? transitionKey(orderNo, String(updateAttribute(update, 'ExpressionAttributeValues', ':to')))
        : undefined;
    }),
};

/** The status consumer's business key: one per order and event, the event named by the state it moves to. */
function transitionKey(orderNo: string, to: string): string {
  return `${orderNo}#${to}`;
}

/** The lifecycle applied to an order's events one at a time, in producer order (rule 1). */
function applyInOrder(events: readonly OrderEvent[]): ExpectedOrder {
  let at = 0;
  let lastTransition: string | undefined;
  const neverApplicable: OrderEvent[] = [];
  for (const event of events) {
    const target = LIFECYCLE.indexOf(event.to);
    if (LIFECYCLE.indexOf(ORDER_TRANSITIONS[event.to].from) === at) {
      at = target;
      lastTransition = event.msgId;
    } else if (target > at) neverApplicable.push(event);
  }
  return { status: LIFECYCLE[at]!, ...(lastTransition ? { lastTransition } : {}), neverApplicable };
}

/**
 * An attempt of one of an order's events, as the consumer reported it: its place in producer order and what it came to.
 */
interface Attempt {
  readonly index: number;
  readonly delivery: Delivery;
}

/** Each order's attempts in the order their invocations ended. */
function attemptsByOrder(
  deliveries: readonly Delivery[],
  events: ReadonlyMap<string, readonly OrderEvent[]>,
): Map<string, Attempt[]> {
  const where = new Map<string, { orderNo: string; index: number }>();
  for (const [orderNo, list] of events) for (const [index, e] of list.entries()) where.set(e.msgId, { orderNo, index });
  const out = new Map<string, Attempt[]>();
  for (const delivery of deliveries) {
    const at = delivery.msgId ? where.get(delivery.msgId) : undefined;
    if (!at) continue;
    out.set(at.orderNo, [...(out.get(at.orderNo) ?? []), { index: at.index, delivery }]);
  }
  return out;
}

/** One order judged by the ordering invariant (rules 1 and 2 above); each finding is a violation. */
function orderingFindings(
  orderNo: string,
  expected: ExpectedOrder,
  row: Partial<Order> | undefined,
  attempts: readonly Attempt[],
) {
  const double: string[] = [];
  const lost: string[] = [];
  const other: string[] = [];
  const status = row?.status;
  // 1. The final status is the last event's in producer order, made by that very event.
  if (!row) lost.push(`order ${orderNo}: its row is gone`);
  else if (!LIFECYCLE.includes(String(status)))
    other.push(`order ${orderNo}: status ${status} is not in the lifecycle`);
  else if (status !== expected.status) {
    const behind = LIFECYCLE.indexOf(String(status)) < LIFECYCLE.indexOf(expected.status);
    // Behind, yet stamped with the expected state's time: it got there and was moved back.
    const movedBack =
      behind && row[ORDER_TRANSITIONS[expected.status as keyof typeof ORDER_TRANSITIONS].stampedAt] !== undefined;
    (behind && !movedBack ? lost : double).push(
      movedBack
        ? `order ${orderNo}: moved back from ${expected.status} to ${status}`
        : `order ${orderNo}: is ${status}, but its events in producer order end at ${expected.status}`,
    );
  } else if (expected.lastTransition && row.statusMsgId !== expected.lastTransition) {
    other.push(
      `order ${orderNo}: ${status} was set by ${row.statusMsgId}, not by ${expected.lastTransition}, the first event in producer order to move it there`,
    );
  }
  // 2. Applied in producer order, never attempted ahead of a predecessor. An event was applied
  // after a later one when a later event's invocation had ended before this one's batch was even
  // received. The order invocations end in says nothing more: one that applied the PAID can end
  // after the one that applied the FINISHED (it returned slowly, or outlived its visibility
  // timeout while the next delivery ran), and then the FINISHED's precondition proves the PAID came first.
  let outOfOrder = 0;
  let overtaken = 0;
  const applied: Array<{ index: number; endedAt: number }> = [];
  for (const { index, delivery } of attempts) {
    const { outcome } = delivery;
    if (outcome.kind === 'processed') {
      const before = applied.filter((a) => a.index > index && a.endedAt < delivery.receivedAt);
      if (before.length > 0) {
        outOfOrder++;
        const latest = Math.max(...before.map((a) => a.index));
        other.push(
          `order ${orderNo}: event ${index + 1} (${delivery.msgId}) was applied after event ${latest + 1}, a later one in producer order`,
        );
      }
      applied.push({ index, endedAt: delivery.endedAt });
    }
    if (index > 0 && outcome.kind === 'retried' && outcome.code === 'NOT_YET_APPLICABLE') {
      overtaken++;
      other.push(
        `order ${orderNo}: event ${index + 1} (${delivery.msgId}) was attempted on attempt ${delivery.attempt} before an earlier event was applied`,
      );
    }
  }
  return { double, lost, other, outOfOrder, overtaken };
}
