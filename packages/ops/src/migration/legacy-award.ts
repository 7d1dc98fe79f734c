import { MAX_POINTS_PER_ORDER, orderPaidFingerprintFields } from '@rocketmq-lambda/consumers/points/index.ts';
import { identifier, userIdSchema } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { fingerprintOf } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { z } from 'zod';

/**
 * One row of a legacy dedup store as a source read it, before validation. `userId` and `points`
 * are absent when the store keeps no content (a Redis key, a key-only table); a present field
 * holding nothing (SQL NULL, an empty cell) is `null`.
 */
export interface LegacyRow {
  /** Names the row in reports and in the record it becomes: `t_point_record#42`, `line 17`, `mq:dedup:point:SO1`. */
  readonly ref: string;
  readonly orderNo: unknown;
  readonly userId?: unknown;
  readonly points?: unknown;
  /** When the legacy consumer processed the message; `undefined` when the store does not say. */
  readonly awardedAt?: Date;
  /** The source could not read the row (not JSON, a field missing): why. */
  readonly invalid?: string;
}

/** A legacy award, validated as the points consumer validates an order: same key, same fingerprint. */
export interface LegacyAward {
  readonly ref: string;
  readonly orderNo: string;
  /** Both present, or neither (a store without content). */
  readonly userId?: string;
  readonly points?: number;
  /**
   * The consumer's fingerprint of (orderNo, userId, points): a copy with other content is a
   * PAYLOAD_CONFLICT. Absent without content: such a record suppresses copies unchecked.
   */
  readonly fingerprint?: string;
  readonly awardedAt: Date | undefined;
}

export type RowCheck =
  | { readonly ok: true; readonly award: LegacyAward }
  | { readonly ok: false; readonly reason: string };

const points = z
  .number({ error: 'points must be a number' })
  .int('points must be a whole number')
  .nonnegative('points must not be negative')
  .max(MAX_POINTS_PER_ORDER, `points above ${MAX_POINTS_PER_ORDER}`);
const orderNo = identifier('orderNo');

/** SQL drivers and CSV give numbers as text; the consumer's rules then apply to the number. */
function numeric(value: unknown): unknown {
  return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
}

function issueOf(result: { success: false; error: z.ZodError }): string {
  return result.error.issues[0]!.message;
}

/**
 * Validates a row with the consumer's own rules (packages/consumers/src/points/order-paid.ts): an order number the
 * consumer would take as its key, a user id and points it would accept. A user id from a BIGINT
 * column comes as text, so ids above 2^53 keep their digits.
 */
export function checkLegacyRow(row: LegacyRow): RowCheck {
  if (row.invalid !== undefined) return { ok: false, reason: row.invalid };
  // A number past 2^53 − 1 lost digits before it got here: its text is another order's key. Sources
  // keep such digits as text (BIGINT as strings, JSON by its source text); this refuses any that did not.
  if (typeof row.orderNo === 'number' && Number.isInteger(row.orderNo) && !Number.isSafeInteger(row.orderNo))
    return { ok: false, reason: 'orderNo above 2^53 - 1 lost digits as a number: export it as text' };
  const key = orderNo.safeParse(typeof row.orderNo === 'number' ? String(row.orderNo) : row.orderNo);
  if (!key.success) return { ok: false, reason: row.orderNo == null ? 'orderNo is empty' : issueOf(key) };
  const hasUser = row.userId !== undefined;
  const hasPoints = row.points !== undefined;
  if (!hasUser && !hasPoints) return { ok: true, award: { ref: row.ref, orderNo: key.data, awardedAt: row.awardedAt } };
  if (row.userId == null) return { ok: false, reason: 'userId is empty' };
  if (row.points == null) return { ok: false, reason: 'points is empty' };
  // A BIGINT column comes as text (no digits lost above 2^53); as text the consumer's rules would let a sign through.
  if (typeof row.userId === 'string' && /^-\d+$/.test(row.userId.trim()))
    return { ok: false, reason: 'userId must not be negative' };
  const user = userIdSchema.safeParse(row.userId);
  if (!user.success) return { ok: false, reason: issueOf(user) };
  const awarded = points.safeParse(numeric(row.points));
  if (!awarded.success) return { ok: false, reason: issueOf(awarded) };
  const fingerprint = fingerprintOf(
    orderPaidFingerprintFields({ orderNo: key.data, userId: user.data, points: awarded.data }),
  );
  return {
    ok: true,
    award: {
      ref: row.ref,
      orderNo: key.data,
      userId: user.data,
      points: awarded.data,
      fingerprint,
      awardedAt: row.awardedAt,
    },
  };
}
