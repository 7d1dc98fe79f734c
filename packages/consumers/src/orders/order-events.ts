import {
  InvalidPayloadError,
  identifier,
  parseJsonPayload,
  userIdSchema,
} from '@rocketmq-lambda/runtime/consumer/index.ts';
import { z } from 'zod';

/** Tags of ORDER_TOPIC that move an order's status. */
export const OrderEventTag = { PAID: 'PAID', FINISHED: 'FINISHED' } as const;
export type OrderEventTag = (typeof OrderEventTag)[keyof typeof OrderEventTag];

/**
 * `PAID`: `{"orderNo":"SO…","userId":88372,"points":300,"paidAt":"…"}`. The status and
 * coupon consumers need the order and the user; `points` belongs to the points consumer
 * and is only checked for type here, so a body the points consumer accepts is never
 * rejected by these two.
 */
const orderPaidSchema = z.object({
  orderNo: identifier('orderNo'),
  userId: userIdSchema,
  points: z.number().int().nonnegative().optional(),
  paidAt: z.iso.datetime({ offset: true }).optional(),
});

/**
 * `FINISHED`: `{"orderNo":"SO…","finishedAt":"…"}`; `userId` may be present (the order
 * service sends it when it has it) but nothing depends on it.
 */
const orderFinishedSchema = z.object({
  orderNo: identifier('orderNo'),
  userId: userIdSchema.optional(),
  finishedAt: z.iso.datetime({ offset: true }).optional(),
});

export type OrderPaidEvent = z.infer<typeof orderPaidSchema> & { kind: 'PAID' };
export type OrderFinishedEvent = z.infer<typeof orderFinishedSchema> & { kind: 'FINISHED' };
export type OrderEvent = OrderPaidEvent | OrderFinishedEvent;

export function parseOrderPaidEvent(body: string): OrderPaidEvent {
  return { ...parseJsonPayload(orderPaidSchema, body), kind: 'PAID' };
}

export function parseOrderFinishedEvent(body: string): OrderFinishedEvent {
  return { ...parseJsonPayload(orderFinishedSchema, body), kind: 'FINISHED' };
}

/** The message's tag decides what the body is; a tag outside `PAID || FINISHED` never gets here (filtered). */
export function parseOrderEvent(body: string, tag: string | undefined): OrderEvent {
  switch (tag) {
    case OrderEventTag.PAID:
      return parseOrderPaidEvent(body);
    case OrderEventTag.FINISHED:
      return parseOrderFinishedEvent(body);
    default:
      throw new InvalidPayloadError(`tag ${tag ?? '(none)'} is not an order status event`);
  }
}
