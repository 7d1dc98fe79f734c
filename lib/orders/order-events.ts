import { z } from 'zod';
import { InvalidPayloadError } from '../idempotency/errors.ts';

/** Tags of ORDER_TOPIC that move an order's status. */
export const OrderEventTag = { PAID: 'PAID', FINISHED: 'FINISHED' } as const;
export type OrderEventTag = (typeof OrderEventTag)[keyof typeof OrderEventTag];

const identifier = (what: string) =>
  z
    .string()
    .trim()
    .min(1, `${what} is empty`)
    .max(64, `${what} is longer than 64 characters`)
    .regex(/^[\x21-\x7E]+$/, `${what} must be printable ASCII without spaces`);

const userId = z.union([z.string(), z.number().int().nonnegative()]).transform(String).pipe(identifier('userId'));

/**
 * `PAID`: `{"orderNo":"SO…","userId":88372,"points":300,"paidAt":"…"}`. The status and
 * coupon consumers need the order and the user; `points` belongs to the points consumer
 * and is only checked for type here, so a body the points consumer accepts is never
 * rejected by these two.
 */
const orderPaidSchema = z.object({
  orderNo: identifier('orderNo'),
  userId,
  points: z.number().int().nonnegative().optional(),
  paidAt: z.iso.datetime({ offset: true }).optional(),
});

/**
 * `FINISHED`: `{"orderNo":"SO…","finishedAt":"…"}`; `userId` may be present (the order
 * service sends it when it has it) but nothing depends on it.
 */
const orderFinishedSchema = z.object({
  orderNo: identifier('orderNo'),
  userId: userId.optional(),
  finishedAt: z.iso.datetime({ offset: true }).optional(),
});

export type OrderPaidEvent = z.infer<typeof orderPaidSchema> & { kind: 'PAID' };
export type OrderFinishedEvent = z.infer<typeof orderFinishedSchema> & { kind: 'FINISHED' };
export type OrderEvent = OrderPaidEvent | OrderFinishedEvent;

export function parseOrderPaidEvent(body: string): OrderPaidEvent {
  return { ...parseWith(orderPaidSchema, body), kind: 'PAID' };
}

export function parseOrderFinishedEvent(body: string): OrderFinishedEvent {
  return { ...parseWith(orderFinishedSchema, body), kind: 'FINISHED' };
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

function parseWith<S extends z.ZodType>(schema: S, body: string): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidPayloadError('body is not JSON');
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new InvalidPayloadError(`${issue.path.join('.') || 'body'}: ${issue.message}`);
  }
  return result.data;
}
