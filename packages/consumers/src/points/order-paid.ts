import { identifier, parseJsonPayload, userIdSchema } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { z } from 'zod';

/** Upper bound for one award: far above any real order, low enough to catch a unit mix-up (cents vs points). */
export const MAX_POINTS_PER_ORDER = 1_000_000;

/** The body of an ORDER_TOPIC `PAID` message as the points consumer reads it. */
const orderPaidSchema = z.object({
  orderNo: identifier('orderNo'),
  userId: userIdSchema,
  points: z
    .number()
    .int('points must be a whole number')
    .nonnegative('points must not be negative')
    .max(MAX_POINTS_PER_ORDER, `points above ${MAX_POINTS_PER_ORDER}`),
  paidAt: z.iso.datetime({ offset: true }).optional(),
});

export type OrderPaid = z.infer<typeof orderPaidSchema>;

export function parseOrderPaid(body: string): OrderPaid {
  return parseJsonPayload(orderPaidSchema, body);
}

/** What tells a duplicate (same) from a conflict (different) for one order: who gets how many points. */
export const orderPaidFingerprintFields = (order: OrderPaid) => ({
  orderNo: order.orderNo,
  userId: order.userId,
  points: order.points,
});
