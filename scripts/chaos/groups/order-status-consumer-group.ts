/**
 * The order-status group's part in the chaos run: state transition (one conditional update
 * per event, WAIT_PAY → PAID → FINISHED, no dedup record). The group is orderly, but the
 * local run creates standard queues (docs/ordered-consumption.md, "Limits") and its bridge
 * sets no message group, so here events of one order may arrive out of order, as on a
 * concurrent group. A FINISHED that overtook its PAID finds the order WAIT_PAY: it is not
 * illegal, only not yet applicable, so it is retried and dead-lettered (RETRIES_EXHAUSTED)
 * only if its PAID has still not been applied when its attempts are spent.
 *
 * Invariants, per order, from the orders table and the group's DLQ, against every copy the
 * bridge sent to the group (the points and coupon plug-ins' PAIDs too: the group subscribes
 * to `PAID || FINISHED` on ORDER_TOPIC):
 * 1. Forward only: the status is WAIT_PAY, PAID or FINISHED and never moved back: an order
 *    stamped `finishedAt` is FINISHED (no late or duplicate PAID overwrote it), one stamped
 *    `paidAt` is PAID or FINISHED.
 * 2. The final status is the furthest state whose event was applied: every order that
 *    received a PAID is at least PAID (a PAID of an existing order is never dead-lettered);
 *    every order that received a FINISHED is FINISHED unless every copy of that FINISHED is in
 *    the DLQ; no order is past a state whose event it never received.
 * 3. A FINISHED is dead-lettered only for overtaking its PAID for all its attempts: its dead
 *    letter carries RETRIES_EXHAUSTED, was sent on its last attempt (the schedule's maximum),
 *    and its reason is NOT_YET_APPLICABLE (that attempt found the order not yet PAID). No
 *    ILLEGAL_TRANSITION: every status of this run is in the lifecycle.
 * 4. Nothing lost silently: invalid bodies are dead-lettered as INVALID_PAYLOAD (malformed
 *    envelopes as INVALID_ENVELOPE), nothing else is in the DLQ, nothing is left in the
 *    source queue (the run checks both for every group).
 *
 * Once the local run feeds the group FIFO queues with one message group per order,
 * `standardQueueFindings` gives way to the ordering invariant: the final status equals the
 * last event in producer order, and no event is applied after a later one.
 */
import { scanTable } from '../../../lib/aws/table-scan.ts';
import { DEAD_LETTER_ATTRIBUTES } from '../../../lib/idempotency/failure-router.ts';
import { OrderStatus, type Order } from '../../../lib/orders/order-status.ts';
import type { RetrySchedule } from '../../../lib/rocketmq/retry-schedule.ts';
import { seedOrders } from '../../local/order-seeding.ts';
import type { PeekedMessage } from '../../local/run-readout.ts';
import { seededRandom } from '../../local/seeded-random.ts';
import { orderNoOf, type ChaosMessage, type ChaosPlugin, type ExpectedDeadLetter, type GroupVerdict } from '../chaos-plugin.ts';
import { crashInsideConditionalUpdate, updateAttribute } from '../crash-points.ts';
import { orderTopicFact, OrderTopicProducer } from '../order-topic.ts';
import { redeliverLater } from '../workload.ts';

const GROUP = 'order-status-consumer-group';
/** Of the group's own orders, this share has its FINISHED sent a few messages before its PAID. */
const OVERTAKEN_SHARE = 0.1;

/** Every event one order received, as the bridge sent them to the group. */
interface OrderHistory {
  /** Copies of a PAID for the order (conflicting payments included: for this group they are PAIDs). */
  paid: number;
  /** Each FINISHED body of the order, and how many copies of it were sent. */
  readonly finished: Map<string, number>;
}

export const chaosPlugin: ChaosPlugin = {
  group: GROUP,
  crashPointName: 'inside its conditional update',

  /**
   * Phase 1: a PAID and a FINISHED per order in producer order, the FINISHED one to four
   * orders after its PAID, or, for one order in ten, one to three orders before it (a
   * standard queue's reorder); redeliveries (same msgId) a few messages later; invalid
   * FINISHED bodies. Phase 2, once quiet: PAIDs delivered again after their order finished.
   */
  workload({ seed, messages }) {
    const random = seededRandom(seed ^ 0x57a7);
    const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
    const composition = { orders: 0, overtaken: 0, redeliveries: share(0.06), invalidBodies: share(0.015), latePaid: share(0.03) };
    const lifecycles = messages - composition.redeliveries - composition.invalidBodies - composition.latePaid;
    composition.orders = Math.floor(lifecycles / 2);
    composition.redeliveries += lifecycles % 2;
    const producer = new OrderTopicProducer(seed, '0A0C0A08');
    const { orders } = producer.orders(composition.orders, 'S', random);
    const slotted: Array<{ slot: number; message: ChaosMessage }> = [];
    for (const [i, order] of orders.entries()) {
      const overtaken = random() < OVERTAKEN_SHARE;
      if (overtaken) composition.overtaken++;
      const finishedSlot = overtaken ? 3 * i - 3 * (1 + Math.floor(random() * 3)) - 1 : 3 * i + 3 * (1 + Math.floor(random() * 4)) + 1;
      slotted.push({ slot: 3 * i, message: producer.paid(order) });
      slotted.push({ slot: finishedSlot, message: producer.finished(order.orderNo, new Date(producer.bornBase + 20_000_000 + i).toISOString(), overtaken ? 'order finished, sent before its PAID' : 'order finished') });
    }
    const stream = slotted.sort((a, b) => a.slot - b.slot).map((s) => s.message);
    redeliverLater(stream, composition.redeliveries, random);
    for (let i = 0; i < composition.invalidBodies; i++) stream.splice(Math.floor(random() * (stream.length + 1)), 0, producer.invalidFinished(i));
    const paidOf = new Map(stream.filter((m) => m.fact.kind === 'order-paid').map((m) => [orderNoOf(m.fact), m]));
    const late = Array.from({ length: composition.latePaid }, (_, i) => ({
      ...paidOf.get(orders[Math.floor((i + 0.5) * (orders.length / composition.latePaid))]!.orderNo)!,
      label: 'PAID delivered again after its order finished (same msgId)',
    }));
    return {
      phases: [
        { name: 'order lifecycles, some FINISHED ahead of their PAID', messages: stream },
        { name: 'late PAIDs of finished orders', messages: late },
      ],
      composition,
    };
  },

  expect(received) {
    const history = new Map<string, OrderHistory>();
    const of = (orderNo: string) => history.get(orderNo) ?? history.set(orderNo, { paid: 0, finished: new Map() }).get(orderNo)!;
    const msgIds = new Set<string>();
    const keys = new Set<string>();
    const deadLetters: ExpectedDeadLetter[] = [];
    for (const message of received) {
      const fact = orderTopicFact(GROUP, message);
      if (fact.kind === 'invalid-body') {
        deadLetters.push({ body: message.body, code: 'INVALID_PAYLOAD' });
        continue;
      }
      const order = of(fact.orderNo);
      if (fact.kind === 'order-finished') {
        order.finished.set(message.body, (order.finished.get(message.body) ?? 0) + 1);
        deadLetters.push({ body: message.body, code: 'RETRIES_EXHAUSTED', optional: true });
      } else order.paid++;
      if (fact.kind !== 'conflicting-payment') {
        msgIds.add(message.msgId!);
        keys.add(transitionKey(fact.orderNo, fact.kind === 'order-paid' ? OrderStatus.PAID : OrderStatus.FINISHED));
      }
    }
    return {
      deadLetters,
      crashTargets: { msgIds: [...msgIds], keys: [...keys] },
      // The order service created every order before it was paid or finished.
      seedTables: (dynamoDb, tables) => seedOrders(dynamoDb, tables.orders, [...history.keys()]),
      judge: async ({ dynamoDb, tables, deadLetters: letters, unsettled, schedule }): Promise<GroupVerdict> => {
        const rows = new Map((await scanTable<Partial<Order>>(dynamoDb, tables.orders)).map((r) => [String(r.orderNo), r]));
        const lettersOf = new Map<string, PeekedMessage[]>();
        for (const letter of letters) lettersOf.set(letter.body, [...(lettersOf.get(letter.body) ?? []), letter]);
        const pending = new Set(unsettled.map((m) => orderNoOf(m.fact)));
        const verdict = { doubleEffects: 0, lostEffects: 0, violations: [] as string[], notJudged: 0 };
        const detail = { orders: 0, paid: 0, finished: 0, finishedDeadLettered: 0 };
        for (const [orderNo, order] of history) {
          if (pending.has(orderNo)) {
            verdict.notJudged++;
            continue;
          }
          const row = rows.get(orderNo);
          detail.orders++;
          if (row?.status === OrderStatus.PAID) detail.paid++;
          if (row?.status === OrderStatus.FINISHED) detail.finished++;
          const deadLettered = [...order.finished.keys()].filter((body) => lettersOf.has(body));
          detail.finishedDeadLettered += deadLettered.length;
          const findings = standardQueueFindings(orderNo, order, row, lettersOf, schedule);
          verdict.doubleEffects += findings.double.length;
          verdict.lostEffects += findings.lost.length;
          verdict.violations.push(...findings.double, ...findings.lost, ...findings.other);
        }
        return { ...verdict, detail };
      },
    };
  },

  /** Keys are the consumer's own (`SO1#PAID`): the update moving the order to that state is applied, and the process dies. */
  crashPoint: (keys) =>
    crashInsideConditionalUpdate(keys, (update) => {
      const orderNo = updateAttribute(update, 'Key', 'orderNo');
      // The group's other updates (its failure counts) are keyed by `id`.
      return typeof orderNo === 'string' ? transitionKey(orderNo, String(updateAttribute(update, 'ExpressionAttributeValues', ':to'))) : undefined;
    }),
};

/** The status consumer's business key: one per order and event, the event named by the state it moves to. */
function transitionKey(orderNo: string, to: string): string {
  return `${orderNo}#${to}`;
}

/** One order judged by the rules of a standard queue (invariants 1–3 above); each finding is a violation. */
function standardQueueFindings(orderNo: string, order: OrderHistory, row: Partial<Order> | undefined, lettersOf: ReadonlyMap<string, readonly PeekedMessage[]>, schedule: RetrySchedule) {
  const double: string[] = [];
  const lost: string[] = [];
  const other: string[] = [];
  const status = row?.status;
  const receivedFinished = order.finished.size > 0;
  if (!row) lost.push(`order ${orderNo}: its row is gone`);
  else if (status !== OrderStatus.WAIT_PAY && status !== OrderStatus.PAID && status !== OrderStatus.FINISHED) other.push(`order ${orderNo}: status ${status} is not in the lifecycle`);
  // 1. Forward only.
  if (row?.finishedAt !== undefined && status !== OrderStatus.FINISHED) double.push(`order ${orderNo}: moved back from FINISHED to ${status}`);
  else if (row?.paidAt !== undefined && status === OrderStatus.WAIT_PAY) double.push(`order ${orderNo}: moved back from PAID to WAIT_PAY`);
  // 2. The furthest state whose event was applied, and no further.
  if (status === OrderStatus.FINISHED && (!receivedFinished || order.paid === 0)) double.push(`order ${orderNo}: FINISHED without ${order.paid === 0 ? 'a PAID' : 'a FINISHED'}`);
  if (status === OrderStatus.PAID && order.paid === 0) double.push(`order ${orderNo}: PAID without a PAID`);
  // An event whose stamp is on the row was applied: if the status says otherwise, rule 1 has found it moved back.
  if (order.paid > 0 && status === OrderStatus.WAIT_PAY && row?.paidAt === undefined) lost.push(`order ${orderNo}: ${order.paid} PAID cop${order.paid === 1 ? 'y' : 'ies'} received, still WAIT_PAY`);
  if (receivedFinished && status !== OrderStatus.FINISHED && row?.finishedAt === undefined) {
    for (const [body, copies] of order.finished) {
      const letters = lettersOf.get(body)?.length ?? 0;
      // Each copy not applied must be in the DLQ; more letters than copies are repeats of a dead-lettered copy whose invocation died.
      if (letters < copies) lost.push(`order ${orderNo}: is ${status}, yet ${copies - letters} of ${copies} FINISHED cop${copies === 1 ? 'y' : 'ies'} neither applied nor dead-lettered`);
    }
  }
  // 3. A FINISHED dead-lettered only once its schedule was spent waiting for its PAID.
  for (const body of order.finished.keys()) {
    for (const letter of lettersOf.get(body) ?? []) {
      const code = letter.attributes[DEAD_LETTER_ATTRIBUTES.code];
      // A copy SQS's redrive policy moved (no code) repeats one the consumer dead-lettered; the run counts those.
      if (code === undefined) continue;
      const attempt = Number(letter.attributes[DEAD_LETTER_ATTRIBUTES.attempt]);
      const reason = letter.attributes[DEAD_LETTER_ATTRIBUTES.reason] ?? '';
      if (attempt < schedule.maxDeliveries || !reason.startsWith('NOT_YET_APPLICABLE')) {
        other.push(`order ${orderNo}: FINISHED dead-lettered as ${code} on attempt ${attempt} of ${schedule.maxDeliveries} (${reason.slice(0, 100)}), not for overtaking its PAID for all its attempts`);
      }
    }
  }
  return { double, lost, other };
}
