import { trafficMessage } from '../local/traffic.ts';
import { type ChaosFact, type ChaosMessage, MALFORMED_ENVELOPE, UnexpectedFactError } from './chaos-plugin.ts';
import { ChaosProducer } from './chaos-producer.ts';

/**
 * ORDER_TOPIC as the chaos run produces it: the kinds of message its three groups (points,
 * coupons, order status) send and judge, and one producer per plug-in. Each group gets every
 * kind (clustering), so each plug-in says what its group must make of each.
 */
export const ORDER_TOPIC = 'ORDER_TOPIC';

/** A valid `PAID`: one award of `points` to `userId`, one coupon, and the order moves WAIT_PAY → PAID. */
export interface OrderPaid extends ChaosFact {
  readonly kind: 'order-paid';
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
}

/** A valid `FINISHED`: the order moves PAID → FINISHED; groups subscribed to `PAID` filter it. */
export interface OrderFinished extends ChaosFact {
  readonly kind: 'order-finished';
  readonly orderNo: string;
}

/** A `PAID` for an order paid before, for another user and amount, sent once the original settled. */
export interface ConflictingPayment extends ChaosFact {
  readonly kind: 'conflicting-payment';
  readonly orderNo: string;
}

/** A valid envelope whose body no ORDER_TOPIC consumer accepts (not JSON, no order number, negative points …). */
export interface InvalidBody extends ChaosFact {
  readonly kind: 'invalid-body';
}

export type OrderTopicFact = OrderPaid | OrderFinished | ConflictingPayment | InvalidBody;

const KINDS: ReadonlySet<string> = new Set<OrderTopicFact['kind']>([
  'order-paid',
  'order-finished',
  'conflicting-payment',
  'invalid-body',
]);

/** The fact of an ORDER_TOPIC copy `group` received; a kind the topic does not know refuses the run. */
export function orderTopicFact(group: string, message: ChaosMessage): OrderTopicFact {
  if (!KINDS.has(message.fact.kind)) throw new UnexpectedFactError(group, message);
  return message.fact as OrderTopicFact;
}

/** An order as a plug-in generates it, with the `paidAt` its PAID carries. */
export interface GeneratedOrder {
  readonly orderNo: string;
  readonly userId: string;
  readonly points: number;
  readonly paidAt: string;
}

/** One plug-in's producer of ORDER_TOPIC messages. */
export class OrderTopicProducer extends ChaosProducer {
  constructor(seed: number, msgIdPrefix: string) {
    super(ORDER_TOPIC, seed, msgIdPrefix);
  }

  /**
   * `count` orders, numbered in the plug-in's own `series` (one letter), each for a random user
   * of the seed's users (every plug-in draws from the same ones, so a balance sums orders of
   * several plug-ins) and 1–500 points.
   */
  orders(count: number, series: string, random: () => number): { orders: GeneratedOrder[]; users: string[] } {
    const users = Array.from({ length: Math.max(5, Math.floor(count / 15)) }, (_, i) => `u${this.seed}-${i}`);
    const orders = Array.from({ length: count }, (_, i) => ({
      orderNo: `SO${Math.abs(this.seed).toString(36).toUpperCase()}${series}${String(i).padStart(6, '0')}`,
      userId: users[Math.floor(random() * users.length)]!,
      points: 1 + Math.floor(random() * 500),
      paidAt: new Date(this.bornBase + i).toISOString(),
    }));
    return { orders, users };
  }

  paid(order: GeneratedOrder, label = 'order paid'): ChaosMessage<OrderPaid> {
    const { orderNo, userId, points } = order;
    return this.send<OrderPaid>('PAID', JSON.stringify(order), { kind: 'order-paid', orderNo, userId, points }, label, [
      orderNo,
    ]);
  }

  /**
   * The application sends an order again after a timeout: new msgId, same order; the producer may stamp a new `paidAt`,
   * which is not part of the order's identity.
   */
  resent(order: GeneratedOrder, paidAt: string, label = 'application re-send (new msgId)'): ChaosMessage<OrderPaid> {
    return this.paid({ ...order, paidAt }, label);
  }

  finished(orderNo: string, finishedAt: string, label = 'order finished'): ChaosMessage<OrderFinished> {
    return this.send<OrderFinished>(
      'FINISHED',
      JSON.stringify({ orderNo, finishedAt }),
      { kind: 'order-finished', orderNo },
      label,
      [orderNo],
    );
  }

  conflicting(order: GeneratedOrder, otherUserId: string): ChaosMessage<ConflictingPayment> {
    const body = JSON.stringify({ orderNo: order.orderNo, userId: otherUserId, points: order.points + 1 });
    return this.send<ConflictingPayment>(
      'PAID',
      body,
      { kind: 'conflicting-payment', orderNo: order.orderNo },
      'conflicting payload for an existing order',
      [order.orderNo],
    );
  }

  /** The i-th of the PAID bodies a producer bug could send: each unique, so its DLQ copy can be found. */
  invalidPaid(i: number, userId: string): ChaosMessage<InvalidBody> {
    return this.send<InvalidBody>('PAID', invalidPaidBody(i, userId), { kind: 'invalid-body' }, 'bad body');
  }

  /** The i-th of the FINISHED bodies a producer bug could send. */
  invalidFinished(i: number): ChaosMessage<InvalidBody> {
    return this.send<InvalidBody>('FINISHED', invalidFinishedBody(i), { kind: 'invalid-body' }, 'bad FINISHED body');
  }

  /** The i-th of the bodies a producer bug or a broken bridge could put on the queue instead of an envelope. */
  malformedEnvelope(i: number): ChaosMessage {
    return {
      ...trafficMessage(this.malformedEnvelopeBody(i), { label: 'malformed envelope' }),
      fact: { kind: MALFORMED_ENVELOPE },
    };
  }

  private malformedEnvelopeBody(i: number): string {
    switch (i % 4) {
      case 0:
        return `{"specversion":"1.0","id":"broken-${i}","data":{"topic":"ORDER_TOPIC"`;
      case 1:
        return JSON.stringify({ hello: 'not an envelope', n: i });
      case 2: {
        const e = JSON.parse(this.envelope('PAID', JSON.stringify({ orderNo: `SOBADID${i}`, userId: 'u', points: 1 })));
        e.data.msgId = `not-a-msg-id-${i}`;
        e.id = e.data.msgId;
        e.data.systemProperties.UNIQ_KEY = e.data.msgId;
        return JSON.stringify(e);
      }
      default:
        return JSON.stringify([i, 'an array']);
    }
  }
}

/** Every ORDER_TOPIC consumer's PAID schema rejects each of these (points, coupons and status alike). */
function invalidPaidBody(i: number, userId: string): string {
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

/** The status consumer's FINISHED schema rejects each of these. */
function invalidFinishedBody(i: number): string {
  switch (i % 3) {
    case 0:
      return JSON.stringify({ finishedAt: '2024-01-01T00:00:00Z', n: i });
    case 1:
      return JSON.stringify({ orderNo: `SO FIN ${i}` });
    default:
      return JSON.stringify({ orderNo: `SOFINDATE${i}`, finishedAt: `yesterday ${i}` });
  }
}
