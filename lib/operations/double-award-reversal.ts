import { TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { balanceIncrement, LedgerEntryKind, reversalEntryId, type LedgerEntry } from '../points/ledger.ts';
import { messageOf, OperationsError } from './errors.ts';
import type { DoubleAward } from './ledger-audit.ts';
import type { PointTableNames } from './operations-target.ts';

/** Why a reversal entry exists, kept on the entry for whoever reads the ledger later. */
export const DOUBLE_AWARD_REASON = 'DOUBLE_AWARD';

/** One compensating entry (冲正): minus the points of one excess award. */
export interface PlannedReversal {
  userId: string;
  orderNo: string;
  reversedEntryId: string;
  reversalEntryId: string;
  /** Points taken back: the reversed award's points (written as a negative entry). */
  points: number;
  keptEntryId: string;
}

export const ReversalStatus = {
  /** Dry run: would be written. */
  PLANNED: 'planned',
  WRITTEN: 'written',
  /** The reversal entry already existed (another run got there first): nothing written. */
  ALREADY_REVERSED: 'already-reversed',
  /** The award is gone or no longer what the audit read: nothing written, look at it by hand. */
  AWARD_CHANGED: 'award-changed',
} as const;
export type ReversalStatus = (typeof ReversalStatus)[keyof typeof ReversalStatus];

export interface ReversalOutcome extends PlannedReversal {
  status: ReversalStatus;
}

export interface UserReversalTotal {
  userId: string;
  reversals: number;
  points: number;
}

export interface ReversalReport {
  applied: boolean;
  outcomes: ReversalOutcome[];
  /** Per user, what was (apply) or would be (dry run) taken back. */
  perUser: UserReversalTotal[];
  /** Double awards whose awards carry different points: reversed as planned, but flagged. */
  pointsDiffer: Array<{ userId: string; orderNo: string }>;
}

/**
 * A reversal run stopped on an unexpected failure. Everything in `report` with status
 * `written` is durable; the run is safe to repeat because each reversal is keyed by the
 * entry it reverses.
 */
export class ReversalInterruptedError extends OperationsError {
  override readonly name = 'ReversalInterruptedError';
  constructor(
    readonly report: ReversalReport,
    readonly remaining: number,
    override readonly cause: unknown,
  ) {
    const written = report.outcomes.filter((o) => o.status === ReversalStatus.WRITTEN).length;
    super(`reversal run interrupted after ${written} written reversal(s), ${remaining} not done: ${messageOf(cause)}`);
  }
}

/** Every excess award of every double award, in a stable order. */
export function planReversals(doubleAwards: readonly DoubleAward[]): PlannedReversal[] {
  return doubleAwards.flatMap((d) =>
    d.excess.map((award) => ({
      userId: d.userId,
      orderNo: d.orderNo,
      reversedEntryId: award.entryId,
      reversalEntryId: reversalEntryId(award.entryId),
      points: award.points,
      keptEntryId: d.kept.entryId,
    })),
  );
}

export interface ReversalRunOptions {
  dynamoDb: DynamoDBDocumentClient;
  tables: PointTableNames;
  doubleAwards: readonly DoubleAward[];
  apply: boolean;
  now?: () => Date;
  onOutcome?: (outcome: ReversalOutcome) => void;
}

/**
 * Compensates double awards, one transaction per reversal. Dry run by default: nothing
 * is written. With `apply`, each reversal is one TransactWriteItems of
 *   1. Put `REVERSAL#<award entryId>` if it does not exist: the key is derived from the
 *      reversed entry, so no run, crashed or concurrent, can ever reverse an award twice;
 *   2. ConditionCheck that the award is still the AWARD of the points the audit read:
 *      a ledger edited since the audit is left for a person, not compensated blindly;
 *   3. the balance decrement (the award's increment, negated).
 * Runs are sequential: there are tens of double awards after an incident, not millions,
 * and one failure stops the run with everything before it durable.
 */
export async function reverseDoubleAwards(options: ReversalRunOptions): Promise<ReversalReport> {
  const planned = planReversals(options.doubleAwards);
  const outcomes: ReversalOutcome[] = [];
  const record = (outcome: ReversalOutcome) => {
    outcomes.push(outcome);
    options.onOutcome?.(outcome);
  };
  for (const [index, reversal] of planned.entries()) {
    if (!options.apply) {
      record({ ...reversal, status: ReversalStatus.PLANNED });
      continue;
    }
    try {
      record({ ...reversal, status: await writeReversal(options, reversal) });
    } catch (error) {
      throw new ReversalInterruptedError(summarise(options.apply, outcomes, options.doubleAwards), planned.length - index, error);
    }
  }
  return summarise(options.apply, outcomes, options.doubleAwards);
}

async function writeReversal(options: ReversalRunOptions, reversal: PlannedReversal): Promise<ReversalStatus> {
  const now = (options.now ?? (() => new Date()))();
  const entry: LedgerEntry & { reason: string; keptEntryId: string } = {
    userId: reversal.userId,
    entryId: reversal.reversalEntryId,
    kind: LedgerEntryKind.REVERSAL,
    orderNo: reversal.orderNo,
    points: -reversal.points,
    reverses: reversal.reversedEntryId,
    createdAt: now.toISOString(),
    reason: DOUBLE_AWARD_REASON,
    keptEntryId: reversal.keptEntryId,
  };
  try {
    await options.dynamoDb.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: options.tables.ledger, Item: entry, ConditionExpression: 'attribute_not_exists(entryId)' } },
          {
            ConditionCheck: {
              TableName: options.tables.ledger,
              Key: { userId: reversal.userId, entryId: reversal.reversedEntryId },
              ConditionExpression: 'kind = :award AND points = :points',
              ExpressionAttributeValues: { ':award': LedgerEntryKind.AWARD, ':points': reversal.points },
            },
          },
          balanceIncrement(options.tables.accounts, reversal.userId, -reversal.points, now),
        ],
      }),
    );
    return ReversalStatus.WRITTEN;
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (reasons?.[0] === 'ConditionalCheckFailed') return ReversalStatus.ALREADY_REVERSED;
    if (reasons?.[1] === 'ConditionalCheckFailed') return ReversalStatus.AWARD_CHANGED;
    throw error;
  }
}

function cancellationReasons(error: unknown): Array<string | undefined> | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons;
  return reasons?.map((r) => r.Code);
}

function summarise(applied: boolean, outcomes: ReversalOutcome[], doubleAwards: readonly DoubleAward[]): ReversalReport {
  const totals = new Map<string, UserReversalTotal>();
  for (const o of outcomes) {
    if (o.status !== ReversalStatus.WRITTEN && o.status !== ReversalStatus.PLANNED) continue;
    const t = totals.get(o.userId) ?? { userId: o.userId, reversals: 0, points: 0 };
    t.reversals++;
    t.points += o.points;
    totals.set(o.userId, t);
  }
  return {
    applied,
    outcomes,
    perUser: [...totals.values()].sort((a, b) => (a.userId < b.userId ? -1 : 1)),
    pointsDiffer: doubleAwards.filter((d) => d.pointsDiffer).map((d) => ({ userId: d.userId, orderNo: d.orderNo })),
  };
}
