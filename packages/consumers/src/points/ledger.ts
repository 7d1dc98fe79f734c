import type { DeclaredWrite } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { OrderPaid } from './order-paid.ts';

export const LedgerEntryKind = { AWARD: 'AWARD', REVERSAL: 'REVERSAL' } as const;
export type LedgerEntryKind = (typeof LedgerEntryKind)[keyof typeof LedgerEntryKind];

/** One line of a user's point ledger. Awards are keyed by order, so one order can be awarded once per user. */
export interface LedgerEntry {
  userId: string;
  /** `AWARD#<orderNo>` for awards, `REVERSAL#<entryId it reverses>` for reversals. */
  entryId: string;
  kind: LedgerEntryKind;
  orderNo: string;
  points: number;
  msgId?: string;
  paidAt?: string;
  createdAt: string;
  /** Reversals: the entry they compensate. */
  reverses?: string;
  /**
   * Awards: the payload fingerprint of the message that awarded it (conflicts are told from duplicates by it after the
   * dedup record expired).
   */
  fingerprint?: string;
  /** `legacy-import`: an award the legacy consumer made, moved here by `ops migrate import --ledger moved`. */
  origin?: 'legacy-import';
}

export interface PointAccount {
  userId: string;
  balance: number;
  updatedAt: string;
}

export interface PointTables {
  ledger: string;
  accounts: string;
}

export const awardEntryId = (orderNo: string) => `AWARD#${orderNo}`;
export const reversalEntryId = (reversedEntryId: string) => `REVERSAL#${reversedEntryId}`;

/** The ledger entry attribute that holds the awarding message's payload fingerprint. */
export const AWARD_FINGERPRINT_ATTRIBUTE = 'fingerprint';

/**
 * The writes of one award: the ledger entry and the balance increment. The ledger put
 * is conditional on its own, so the ledger can never hold one order twice for a user
 * even if the dedup record is gone (expired, deleted by hand); and it carries the
 * payload fingerprint, so a copy with other points arriving after that is still a
 * conflict, not a duplicate. An order of 0 points (fully discounted) awards nothing:
 * no writes, and only its dedup record says it was consumed.
 */
export function awardWrites(
  award: OrderPaid,
  message: { msgId: string; fingerprint: string },
  tables: PointTables,
  now: Date,
): DeclaredWrite[] {
  if (award.points === 0) return [];
  return [
    awardEntryPut(tables.ledger, awardEntry(award, message, now)),
    { item: balanceIncrement(tables.accounts, award.userId, award.points, now) },
  ];
}

/** The ledger entry of one award, as the consumer writes it. */
export function awardEntry(
  award: OrderPaid,
  message: { msgId: string; fingerprint: string },
  createdAt: Date,
): LedgerEntry {
  return {
    userId: award.userId,
    entryId: awardEntryId(award.orderNo),
    kind: LedgerEntryKind.AWARD,
    orderNo: award.orderNo,
    points: award.points,
    msgId: message.msgId,
    paidAt: award.paidAt,
    createdAt: createdAt.toISOString(),
    fingerprint: message.fingerprint,
  };
}

/** The conditional put of an award entry: never twice for one (user, order); the existing one comes back on refusal. */
export function awardEntryPut(ledgerTable: string, entry: LedgerEntry): DeclaredWrite {
  return {
    item: {
      Put: {
        TableName: ledgerTable,
        Item: entry,
        ConditionExpression: 'attribute_not_exists(entryId)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    conditionFailureMeansDone: true,
    fingerprintAttribute: AWARD_FINGERPRINT_ATTRIBUTE,
  };
}

export function balanceIncrement(
  accountsTable: string,
  userId: string,
  points: number,
  now: Date,
): DeclaredWrite['item'] {
  return {
    Update: {
      TableName: accountsTable,
      Key: { userId },
      UpdateExpression: 'ADD balance :points SET updatedAt = :now',
      ExpressionAttributeValues: { ':points': points, ':now': now.toISOString() },
    },
  };
}
