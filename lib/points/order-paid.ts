import { z } from 'zod';
import { InvalidPayloadError } from '../idempotency/errors.ts';

/** Upper bound for one award: far above any real order, low enough to catch a unit mix-up (cents vs points). */
export const MAX_POINTS_PER_ORDER = 1_000_000;

const identifier = (what: string) =>
  z
    .string()
    .trim()
    .min(1, `${what} is empty`)
    .max(64, `${what} is longer than 64 characters`)
    .regex(/^[\x21-\x7E]+$/, `${what} must be printable ASCII without spaces`);

/** The body of an ORDER_TOPIC `PAID` message as the points consumer reads it. */
const orderPaidSchema = z.object({
  orderNo: identifier('orderNo'),
  userId: z.union([z.string(), z.number().int().nonnegative()]).transform(String).pipe(identifier('userId')),
  points: z.number().int('points must be a whole number').positive('points must be positive').max(MAX_POINTS_PER_ORDER, `points above ${MAX_POINTS_PER_ORDER}`),
  paidAt: z.iso.datetime({ offset: true }).optional(),
});

export type OrderPaid = z.infer<typeof orderPaidSchema>;

export function parseOrderPaid(body: string): OrderPaid {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidPayloadError('body is not JSON');
  }
  const result = orderPaidSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new InvalidPayloadError(`${issue.path.join('.') || 'body'}: ${issue.message}`);
  }
  return result.data;
}
