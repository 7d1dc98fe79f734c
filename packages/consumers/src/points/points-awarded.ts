import {
  identifier,
  type OutgoingMessage,
  parseJsonPayload,
  userIdSchema,
} from '@rocketmq-lambda/runtime/consumer/index.ts';
import { z } from 'zod';
import type { OrderPaid } from './order-paid.ts';

/** Where the points consumer announces an award (its catalogue entry's `publishes`). */
export const POINTS_TOPIC = 'POINTS_TOPIC';
export const POINTS_AWARDED_TAG = 'POINTS_AWARDED';

/** The body of a POINTS_TOPIC `POINTS_AWARDED` message: who got how many points for which order. */
const pointsAwardedSchema = z.object({
  orderNo: identifier('orderNo'),
  userId: userIdSchema,
  points: z.number().int('points must be a whole number').positive('an announced award has points'),
});

export type PointsAwarded = z.infer<typeof pointsAwardedSchema>;

/**
 * The announcement of one award, as the points business publishes it: keyed by its order, so a
 * RocketMQ consumer can find it by key; the relay puts the event id before that key.
 */
export function pointsAwardedMessage(award: OrderPaid): OutgoingMessage {
  const body: PointsAwarded = { orderNo: award.orderNo, userId: award.userId, points: award.points };
  return { topic: POINTS_TOPIC, tag: POINTS_AWARDED_TAG, keys: [award.orderNo], body };
}

/** What an award announces: one `POINTS_AWARDED` per award with points, nothing for a 0-point order. */
export function awardAnnouncements(award: OrderPaid): OutgoingMessage[] {
  return award.points > 0 ? [pointsAwardedMessage(award)] : [];
}

export function parsePointsAwarded(body: string): PointsAwarded {
  return parseJsonPayload(pointsAwardedSchema, body);
}
