/**
 * The coupon group's part in the chaos run: lease mode (IN_PROGRESS → COMPLETED with a
 * fencing token) around a call to the coupon service.
 *
 * Invariants, from the idempotency table and the group's DLQ, against every PAID the bridge
 * sent to the group (the points and status plug-ins' orders too: same topic):
 * - every paid order has a COMPLETED coupon record holding the coupon the service granted;
 *   one left IN_PROGRESS or missing is a lost coupon (that the service granted one coupon
 *   per `Idempotency-Key` is its own contract, not visible in our tables);
 * - conflicting payments (another user) are dead-lettered as PAYLOAD_CONFLICT, invalid
 *   bodies as INVALID_PAYLOAD.
 */
import { scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import { recordId } from '@rocketmq-lambda/runtime/config/index.ts';
import { type DedupRecord, RecordStatus } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { seededRandom } from '../../local/seeded-random.ts';
import {
  type ChaosMessage,
  type ChaosPlugin,
  type ExpectedDeadLetter,
  type GroupVerdict,
  orderNoOf,
} from '../chaos-plugin.ts';
import { crashInsideLease } from '../crash-points.ts';
import { OrderTopicProducer, orderTopicFact } from '../order-topic.ts';
import { redeliverLater } from '../workload.ts';

const GROUP = 'coupon-consumer-group';

export const chaosPlugin: ChaosPlugin = {
  group: GROUP,
  crashPointName: 'inside a lease',

  /**
   * Orders in producer order, some re-sent by the application right behind their original
   * (new msgId, same order: the two copies race for the lease), some redelivered a few
   * messages later (same msgId).
   */
  workload({ seed, messages }) {
    const random = seededRandom(seed ^ 0xc0f0);
    const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
    const composition = { orders: 0, racingResends: share(0.05), redeliveries: share(0.06) };
    composition.orders = messages - composition.racingResends - composition.redeliveries;
    const producer = new OrderTopicProducer(seed, '0A0C0A07');
    const stream: ChaosMessage[] = [];
    for (const [i, order] of producer.orders(composition.orders, 'C', random).orders.entries()) {
      stream.push(producer.paid(order));
      // Spread evenly over the orders, exactly `racingResends` of them.
      if (
        Math.floor(((i + 1) * composition.racingResends) / composition.orders) >
        Math.floor((i * composition.racingResends) / composition.orders)
      ) {
        stream.push(
          producer.resent(
            order,
            new Date(producer.bornBase + 10_000_000 + i).toISOString(),
            'application re-send right behind its original (new msgId)',
          ),
        );
      }
    }
    redeliverLater(stream, composition.redeliveries, random);
    return { phases: [{ name: 'orders racing for their lease', messages: stream }], composition };
  },

  expect(received) {
    const orders = new Set<string>();
    const msgIds = new Set<string>();
    const deadLetters: ExpectedDeadLetter[] = [];
    for (const message of received) {
      const fact = orderTopicFact(GROUP, message);
      if (fact.kind === 'order-paid') {
        orders.add(fact.orderNo);
        msgIds.add(message.msgId!);
      } else if (fact.kind === 'conflicting-payment')
        deadLetters.push({ body: message.body, code: 'PAYLOAD_CONFLICT' });
      else if (fact.kind === 'invalid-body') deadLetters.push({ body: message.body, code: 'INVALID_PAYLOAD' });
    }
    return {
      deadLetters,
      crashTargets: { msgIds: [...msgIds], keys: [...orders] },
      judge: async ({ dynamoDb, tables, unsettled }): Promise<GroupVerdict> => {
        const records = new Map<string, Partial<DedupRecord>>();
        for (const r of await scanTable<Record<string, unknown>>(dynamoDb, tables.idempotency))
          if (r.group === GROUP) records.set(String(r.key), r as Partial<DedupRecord>);
        const pending = new Set(unsettled.map((m) => orderNoOf(m.fact)));
        const violations: string[] = [];
        let lostEffects = 0;
        let notJudged = 0;
        for (const orderNo of orders) {
          const r = records.get(orderNo);
          if (r?.status === RecordStatus.COMPLETED && r.result !== undefined && r.result !== null) continue;
          if (pending.has(orderNo)) {
            notJudged++;
            continue;
          }
          lostEffects++;
          violations.push(
            `order ${orderNo}: coupon record is ${r ? `${r.status} without a completed grant` : 'missing'}`,
          );
        }
        return { doubleEffects: 0, lostEffects, violations, notJudged, detail: { orders: orders.size } };
      },
    };
  },

  /**
   * The lease holder dies after the coupon call, before the `UpdateItem` that completes its record: the lease stays
   * IN_PROGRESS.
   */
  crashPoint(keys) {
    return crashInsideLease(keys, (key) => recordId(GROUP, key), 'coupon call');
  },
};
