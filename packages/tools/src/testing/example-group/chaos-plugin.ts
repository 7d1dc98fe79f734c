/**
 * The example group's part in the chaos run, written as docs/adding-a-consumer-group.md says:
 * a product group's plug-in would be `packages/tools/src/chaos/groups/refund-consumer-group.ts`; this one
 * stays with its fixture and the test hands it to the run.
 *
 * Invariants, from the orders table and the group's DLQ, against every REFUNDED the bridge
 * sent to the group:
 * - every order refunded is REFUNDED (the order service had created it FINISHED), however
 *   many copies came;
 * - a refund of an order that was never finished is dead-lettered as ILLEGAL_TRANSITION and
 *   leaves no row behind; invalid bodies are dead-lettered as INVALID_PAYLOAD.
 */
import { scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  type ChaosMessage,
  type ChaosPlugin,
  type ExpectedDeadLetter,
  type GroupVerdict,
  orderNoOf,
  UnexpectedFactError,
} from '../../chaos/chaos-plugin.ts';
import { ChaosProducer } from '../../chaos/chaos-producer.ts';
import { crashInsideConditionalUpdate, updateAttribute } from '../../chaos/crash-points.ts';
import { redeliverLater } from '../../chaos/workload.ts';
import { seedOrders } from '../../local/order-seeding.ts';
import { seededRandom, shuffle } from '../../local/seeded-random.ts';
import { REFUNDS } from './handler.ts';

/** REFUND_TOPIC as this plug-in produces it. */
type RefundFact =
  /** A refund of an order the order service created FINISHED: it moves to REFUNDED. */
  | { kind: 'order-refunded'; orderNo: string }
  /** A refund of an order that never finished (it does not exist): illegal. */
  | { kind: 'refund-of-unfinished-order'; orderNo: string }
  /** A body the refund schema rejects. */
  | { kind: 'invalid-body' };

const KINDS: ReadonlySet<string> = new Set<RefundFact['kind']>([
  'order-refunded',
  'refund-of-unfinished-order',
  'invalid-body',
]);

function refundFact(message: ChaosMessage): RefundFact {
  if (!KINDS.has(message.fact.kind)) throw new UnexpectedFactError(REFUNDS.group, message);
  return message.fact as RefundFact;
}

export const chaosPlugin: ChaosPlugin = {
  group: REFUNDS.group,
  crashPointName: 'inside its conditional update',

  /**
   * Refunds, some redelivered (same msgId) or re-sent (new msgId), refunds of orders that never finished, invalid
   * bodies; shuffled.
   */
  workload({ seed, messages }) {
    const random = seededRandom(seed ^ 0x4ef0);
    const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
    const composition = {
      refunds: 0,
      redeliveries: share(0.06),
      resends: share(0.05),
      unfinished: share(0.02),
      invalidBodies: share(0.02),
    };
    composition.refunds =
      messages - composition.redeliveries - composition.resends - composition.unfinished - composition.invalidBodies;
    const producer = new ChaosProducer(REFUNDS.topic, seed, '0A0C0A09');
    const refund = (orderNo: string, fact: RefundFact, label: string) =>
      producer.send('REFUNDED', JSON.stringify({ orderNo }), fact, label, [orderNo]);
    const orderNo = (series: string, i: number) =>
      `RF${Math.abs(seed).toString(36).toUpperCase()}${series}${String(i).padStart(6, '0')}`;
    const orders = Array.from({ length: composition.refunds }, (_, i) => orderNo('R', i));
    const stream = orders.map((o) => refund(o, { kind: 'order-refunded', orderNo: o }, 'order refunded'));
    for (let i = 0; i < composition.resends; i++) {
      const again = orders[Math.floor(random() * orders.length)]!;
      stream.push(refund(again, { kind: 'order-refunded', orderNo: again }, 'application re-send (new msgId)'));
    }
    for (let i = 0; i < composition.unfinished; i++)
      stream.push(
        refund(
          orderNo('U', i),
          { kind: 'refund-of-unfinished-order', orderNo: orderNo('U', i) },
          'refund of an order that never finished',
        ),
      );
    for (let i = 0; i < composition.invalidBodies; i++)
      stream.push(
        producer.send(
          'REFUNDED',
          JSON.stringify({ refund: i }),
          { kind: 'invalid-body' } satisfies RefundFact,
          'bad body',
        ),
      );
    shuffle(stream, random);
    redeliverLater(stream, composition.redeliveries, random);
    return { phases: [{ name: 'refunds', messages: stream }], composition };
  },

  expect(received) {
    const refunded = new Set<string>();
    const unfinished = new Set<string>();
    const msgIds = new Set<string>();
    const deadLetters: ExpectedDeadLetter[] = [];
    for (const message of received) {
      const fact = refundFact(message);
      if (fact.kind === 'order-refunded') {
        refunded.add(fact.orderNo);
        msgIds.add(message.msgId!);
      } else if (fact.kind === 'refund-of-unfinished-order') {
        unfinished.add(fact.orderNo);
        deadLetters.push({ body: message.body, code: 'ILLEGAL_TRANSITION' });
      } else deadLetters.push({ body: message.body, code: 'INVALID_PAYLOAD' });
    }
    return {
      deadLetters,
      crashTargets: { msgIds: [...msgIds], keys: [...refunded].map((o) => `${o}#REFUNDED`) },
      // The order service finished these orders before anyone asked for a refund.
      seedTables: (dynamoDb, tables) => seedOrders(dynamoDb, tables.orders, [...refunded], 'FINISHED'),
      judge: async ({ dynamoDb, tables, unsettled }): Promise<GroupVerdict> => {
        const status = new Map(
          (await scanTable<{ orderNo: string; status?: string }>(dynamoDb, tables.orders)).map((r) => [
            r.orderNo,
            r.status,
          ]),
        );
        const pending = new Set(unsettled.map((m) => orderNoOf(m.fact)));
        const violations: string[] = [];
        let lostEffects = 0;
        let notJudged = 0;
        for (const orderNo of refunded) {
          if (status.get(orderNo) === 'REFUNDED') continue;
          if (pending.has(orderNo)) notJudged++;
          else {
            lostEffects++;
            violations.push(`order ${orderNo}: refunded, but its status is ${status.get(orderNo) ?? 'gone'}`);
          }
        }
        const refundedUnfinished = [...unfinished].filter((o) => status.has(o));
        for (const orderNo of refundedUnfinished)
          violations.push(`order ${orderNo}: never finished, yet it has a row (${status.get(orderNo)})`);
        return {
          doubleEffects: refundedUnfinished.length,
          lostEffects,
          violations,
          notJudged,
          detail: { refunded: refunded.size - lostEffects - notJudged, refusedUnfinished: unfinished.size },
        };
      },
    };
  },

  crashPoint: (keys) =>
    crashInsideConditionalUpdate(
      keys,
      (update) =>
        `${String(updateAttribute(update, 'Key', 'orderNo'))}#${String(updateAttribute(update, 'ExpressionAttributeValues', ':refunded'))}`,
    ),
};
