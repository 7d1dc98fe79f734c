import {
  IllegalTransitionError,
  NotYetApplicableError,
  type Settlement,
  TransientFailureError,
  type TransitionRequest,
} from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { OrderEvent, OrderEventTag } from './order-events.ts';

/** Status of an order, as stored in the `orders` table's `status` attribute. */
export const OrderStatus = { WAIT_PAY: 'WAIT_PAY', PAID: 'PAID', FINISHED: 'FINISHED' } as const;
export type OrderStatus = (typeof OrderStatus)[keyof typeof OrderStatus];

/** An item of the `orders` table (pk `orderNo`) as far as the status consumer knows it. */
export interface Order {
  orderNo: string;
  status: string;
  userId?: string;
  paidAt?: string;
  finishedAt?: string;
  /** When the last transition was applied, and by which message (audit). */
  statusUpdatedAt?: string;
  statusMsgId?: string;
}

/** One allowed move of the status, triggered by one ORDER_TOPIC tag. */
export interface OrderTransition {
  readonly event: OrderEventTag;
  readonly from: OrderStatus;
  readonly to: OrderStatus;
  /** The attribute that records when the business event happened. */
  readonly stampedAt: 'paidAt' | 'finishedAt';
}

/** The whole state machine, as data: the tag decides the target state. */
export const ORDER_TRANSITIONS: Readonly<Record<OrderEventTag, OrderTransition>> = {
  PAID: { event: 'PAID', from: OrderStatus.WAIT_PAY, to: OrderStatus.PAID, stampedAt: 'paidAt' },
  FINISHED: { event: 'FINISHED', from: OrderStatus.PAID, to: OrderStatus.FINISHED, stampedAt: 'finishedAt' },
};

/** The lifecycle in order. An order at or past a transition's target has already seen that event. */
const LIFECYCLE: readonly string[] = [OrderStatus.WAIT_PAY, OrderStatus.PAID, OrderStatus.FINISHED];

/** Why a transition's precondition failed, judged from the item as it was (pure; no I/O). */
export type RejectionVerdict =
  | { kind: 'already-advanced'; status: string }
  | { kind: 'absent' }
  /** The order is at an earlier lifecycle state than the event needs (FINISHED overtook PAID): retry. */
  | { kind: 'not-yet'; status: string }
  /** A status outside the lifecycle (or none): no retry can make the event apply. */
  | { kind: 'illegal'; status: string | undefined }
  /** The item was in `from` after all: it changed between the write and its check; try again. */
  | { kind: 'raced'; status: string };

export function judgeRejection(transition: OrderTransition, current: Partial<Order> | undefined): RejectionVerdict {
  if (!current) return { kind: 'absent' };
  const status = typeof current.status === 'string' ? current.status : undefined;
  if (status === transition.from) return { kind: 'raced', status };
  const at = status === undefined ? -1 : LIFECYCLE.indexOf(status);
  if (at >= LIFECYCLE.indexOf(transition.to)) return { kind: 'already-advanced', status: status! };
  if (at >= 0 && at < LIFECYCLE.indexOf(transition.from)) return { kind: 'not-yet', status: status! };
  return { kind: 'illegal', status };
}

/**
 * Reads a failed precondition: the order already moved on → a duplicate or late event
 * (success, nothing to do); the order does not exist yet, or is at an earlier state than
 * the event needs → the event overtook another one (standard queues reorder), retry on
 * the schedule and dead-letter only when it is spent; a status outside the lifecycle →
 * an illegal transition, dead-letter it now.
 */
export function explainRejection(
  transition: OrderTransition,
  orderNo: string,
  current: Partial<Order> | undefined,
): Settlement {
  const verdict = judgeRejection(transition, current);
  switch (verdict.kind) {
    case 'already-advanced':
      return {
        outcome: 'duplicate',
        reason: 'state-already-advanced',
        ...(current?.statusMsgId ? { winnerMsgId: current.statusMsgId } : {}),
      };
    case 'absent':
      throw new NotYetApplicableError(`order ${orderNo} does not exist yet; ${transition.event} will be retried`);
    case 'not-yet':
      throw new NotYetApplicableError(
        `order ${orderNo} is ${verdict.status}: ${transition.event} needs ${transition.from} first and will be retried`,
      );
    case 'raced':
      throw new TransientFailureError(`order ${orderNo} changed while ${transition.event} was applied`, 'STATUS_RACED');
    case 'illegal':
      throw new IllegalTransitionError(
        `order ${orderNo} is ${verdict.status ?? 'without status'}: ${transition.event} needs ${transition.from} (${transition.from} → ${transition.to})`,
      );
  }
}

export interface TransitionContext {
  tableName: string;
  msgId: string;
  /** When the broker received the message: the stamp when the body carries none. */
  bornTimestamp?: number;
  now: Date;
}

/**
 * The conditional update for one order event. The precondition (`status = from`) is the
 * idempotency check: a replay finds the status already moved on and changes nothing,
 * so no dedup record is needed. `attribute_exists` keeps the update from creating an
 * order that does not exist.
 */
export function transitionRequest(event: OrderEvent, context: TransitionContext): TransitionRequest {
  const transition = ORDER_TRANSITIONS[event.kind];
  const stamp =
    (event.kind === 'PAID' ? event.paidAt : event.finishedAt) ??
    new Date(context.bornTimestamp ?? context.now.getTime()).toISOString();
  return {
    update: {
      TableName: context.tableName,
      Key: { orderNo: event.orderNo },
      UpdateExpression: 'SET #status = :to, #stampedAt = :stamp, statusUpdatedAt = :now, statusMsgId = :msgId',
      ConditionExpression: 'attribute_exists(orderNo) AND #status = :from',
      ExpressionAttributeNames: { '#status': 'status', '#stampedAt': transition.stampedAt },
      ExpressionAttributeValues: {
        ':from': transition.from,
        ':to': transition.to,
        ':stamp': stamp,
        ':now': context.now.toISOString(),
        ':msgId': context.msgId,
      },
    },
    explainRejection: (current) => explainRejection(transition, event.orderNo, current as Partial<Order> | undefined),
  };
}
