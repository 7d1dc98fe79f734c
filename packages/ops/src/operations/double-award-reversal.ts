import {
  type DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  balanceIncrement,
  type LedgerEntry,
  LedgerEntryKind,
  reversalEntryId,
} from '@rocketmq-lambda/consumers/points/index.ts';
import { messageOf, OperationsError } from './errors.ts';
import type { CrossUserAward, DoubleAward } from './ledger-audit.ts';
import type { PointTableNames } from './operations-target.ts';

/** Why a reversal entry exists, kept on the entry for whoever reads the ledger later. */
export const ReversalReason = {
  /** The same user was awarded the order more than once. */
  DOUBLE_AWARD: 'DOUBLE_AWARD',
  /** Another user was awarded the order too; the operator named the rightful one. */
  CROSS_USER_AWARD: 'CROSS_USER_AWARD',
} as const;
export type ReversalReason = (typeof ReversalReason)[keyof typeof ReversalReason];

/** One compensating entry (冲正): minus the points of one excess award. */
export interface PlannedReversal {
  userId: string;
  orderNo: string;
  reversedEntryId: string;
  reversalEntryId: string;
  /** Points taken back: the reversed award's points (written as a negative entry). */
  points: number;
  reason: ReversalReason;
  /** The award that stays in force (it must still be there, unreversed, when the reversal commits). */
  keptUserId: string;
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
  /** The award meant to stay is gone or reversed (another run chose differently): nothing written. */
  KEPT_AWARD_CHANGED: 'kept-award-changed',
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
  /** Orders awarded to several users for which no rightful user was named: nothing reversed, a person decides. */
  undecided: CrossUserAward[];
  /**
   * Orders named with `--rightful` that the audit no longer shows as awarded to several users (settled by an earlier
   * run, or a typo).
   */
  rightfulUnused: string[];
}

/**
 * A rightful user named for an order the audit does not show as awarded to several users, or who holds no award of it.
 */
export class RightfulAwardError extends OperationsError {
  override readonly name = 'RightfulAwardError';
}

/** What identifies a planned reversal: two plans hold the same reversal when every field agrees. */
export function reversalKey(r: PlannedReversal): string {
  return JSON.stringify([
    r.userId,
    r.orderNo,
    r.reversedEntryId,
    r.reversalEntryId,
    r.points,
    r.reason,
    r.keptUserId,
    r.keptEntryId,
  ]);
}

/**
 * The audit now plans reversals the operator did not review (new double awards, changed points, another
 * kept award): nothing is written; a new dry run shows the current set for review.
 */
export class PlanChangedError extends OperationsError {
  override readonly name = 'PlanChangedError';
  constructor(readonly unreviewed: readonly PlannedReversal[]) {
    const listed = unreviewed
      .slice(0, 5)
      .map((r) => `${r.userId}/${r.reversedEntryId} (${r.points} points, ${r.reason})`);
    super(
      `the ledger changed since the plan was reviewed: ${unreviewed.length} reversal(s) not in it, e.g. ${listed.join(', ')}. Nothing written; run the dry run again and review the new plan`,
    );
  }
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

/**
 * Every excess award of every double award, then, for each order awarded to several users
 * whose rightful user was named, every award of the other users; in a stable order, each
 * award at most once.
 */
export function planReversals(
  doubleAwards: readonly DoubleAward[],
  crossUserAwards: readonly CrossUserAward[] = [],
  rightful: ReadonlyMap<string, string> = new Map(),
): PlannedReversal[] {
  const planned = new Map<string, PlannedReversal>();
  const add = (reversal: Omit<PlannedReversal, 'reversalEntryId'>) => {
    const key = `${reversal.userId}\u0000${reversal.reversedEntryId}`;
    if (!planned.has(key))
      planned.set(key, { ...reversal, reversalEntryId: reversalEntryId(reversal.reversedEntryId) });
  };
  for (const d of doubleAwards) {
    for (const award of d.excess) {
      add({
        userId: d.userId,
        orderNo: d.orderNo,
        reversedEntryId: award.entryId,
        points: award.points,
        reason: ReversalReason.DOUBLE_AWARD,
        keptUserId: d.userId,
        keptEntryId: d.kept.entryId,
      });
    }
  }
  for (const order of crossUserAwards) {
    const user = rightful.get(order.orderNo);
    if (user === undefined) continue;
    const kept = order.awards.find((a) => a.userId === user)!;
    for (const award of order.awards.filter((a) => a.userId !== user)) {
      add({
        userId: award.userId,
        orderNo: order.orderNo,
        reversedEntryId: award.entryId,
        points: award.points,
        reason: ReversalReason.CROSS_USER_AWARD,
        keptUserId: user,
        keptEntryId: kept.entryId,
      });
    }
  }
  return [...planned.values()];
}

/** Refuses a choice the audit cannot back: a user who holds none of the order's awards in force. */
function checkRightful(crossUserAwards: readonly CrossUserAward[], rightful: ReadonlyMap<string, string>): void {
  for (const [orderNo, user] of rightful) {
    const order = crossUserAwards.find((o) => o.orderNo === orderNo);
    if (order && !order.users.includes(user)) {
      throw new RightfulAwardError(
        `--rightful ${orderNo}=${user}: ${user} holds no award of ${orderNo} in force (awarded to ${order.users.join(', ')})`,
      );
    }
  }
}

export interface ReversalRunOptions {
  dynamoDb: DynamoDBDocumentClient;
  tables: PointTableNames;
  doubleAwards: readonly DoubleAward[];
  /** Orders awarded to several users (from the audit); only those named in `rightful` are reversed. */
  crossUserAwards?: readonly CrossUserAward[];
  /** Order → the user whose award stays: an explicit choice, never guessed. */
  rightful?: ReadonlyMap<string, string>;
  apply: boolean;
  /**
   * With `apply`: the reversals the operator reviewed (a dry run's plan). The run refuses to write
   * any other; reviewed reversals no longer planned (written since, award gone) are simply not written.
   */
  reviewed?: readonly PlannedReversal[];
  /**
   * With `apply`: sees the reversals about to be written before the first write; throwing stops the run with nothing
   * written.
   */
  confirm?: (planned: readonly PlannedReversal[]) => Promise<void>;
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
  const crossUser = options.crossUserAwards ?? [];
  const rightful = options.rightful ?? new Map<string, string>();
  checkRightful(crossUser, rightful);
  const planned = planReversals(options.doubleAwards, crossUser, rightful);
  if (options.apply && options.reviewed) {
    const reviewed = new Set(options.reviewed.map(reversalKey));
    const unreviewed = planned.filter((r) => !reviewed.has(reversalKey(r)));
    if (unreviewed.length > 0) throw new PlanChangedError(unreviewed);
  }
  if (options.apply && planned.length > 0) await options.confirm?.(planned);
  const undecided = crossUser.filter((o) => !rightful.has(o.orderNo));
  const unused = [...rightful.keys()].filter((orderNo) => !crossUser.some((o) => o.orderNo === orderNo));
  const summarise = (outcomes: ReversalOutcome[]) => ({
    ...summariseRun(options.apply, outcomes, options.doubleAwards),
    undecided,
    rightfulUnused: unused,
  });
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
      throw new ReversalInterruptedError(summarise(outcomes), planned.length - index, error);
    }
  }
  return summarise(outcomes);
}

async function writeReversal(options: ReversalRunOptions, reversal: PlannedReversal): Promise<ReversalStatus> {
  const now = (options.now ?? (() => new Date()))();
  const entry: LedgerEntry & { reason: string; keptUserId: string; keptEntryId: string } = {
    userId: reversal.userId,
    entryId: reversal.reversalEntryId,
    kind: LedgerEntryKind.REVERSAL,
    orderNo: reversal.orderNo,
    points: -reversal.points,
    reverses: reversal.reversedEntryId,
    createdAt: now.toISOString(),
    reason: reversal.reason,
    keptUserId: reversal.keptUserId,
    keptEntryId: reversal.keptEntryId,
  };
  const actions = reversalActions(options.tables, reversal, entry, now);
  try {
    await options.dynamoDb.send(new TransactWriteCommand({ TransactItems: actions.map((a) => a.item) }));
    return ReversalStatus.WRITTEN;
  } catch (error) {
    const reasons = cancellationReasons(error);
    const failed = (tag: Action['tag']) =>
      actions.some((a, i) => a.tag === tag && reasons?.[i] === 'ConditionalCheckFailed');
    if (failed('reversal')) return ReversalStatus.ALREADY_REVERSED;
    if (failed('award')) return ReversalStatus.AWARD_CHANGED;
    if (failed('kept')) return ReversalStatus.KEPT_AWARD_CHANGED;
    throw error;
  }
}

type Action = {
  tag: 'reversal' | 'award' | 'balance' | 'kept';
  item: NonNullable<TransactWriteCommandInput['TransactItems']>[number];
};

/**
 * The reversal's transaction:
 *   1. Put `REVERSAL#<award entryId>` if it does not exist: the key is derived from the
 *      reversed entry, so no run, crashed or concurrent, can ever reverse an award twice;
 *   2. ConditionCheck that the award is still the AWARD of the points the audit read;
 *   3. the balance decrement (the award's increment, negated);
 *   4. never below one award: the award that stays must still be there and unreversed,
 *      whatever another run (with another choice of the rightful user) did meanwhile.
 * An award in the legacy store (`LEGACY#<row>`, from `ops audit --legacy-source`) has no item
 * here to check (2 or 4): the run re-read the legacy store just before. The project never writes it.
 */
function reversalActions(tables: PointTableNames, reversal: PlannedReversal, entry: LedgerEntry, now: Date): Action[] {
  const inLedger = (entryId: string) => !entryId.startsWith('LEGACY#');
  const kept = { userId: reversal.keptUserId, entryId: reversal.keptEntryId };
  const check = (
    tag: Action['tag'],
    key: Record<string, string>,
    condition: string,
    values?: Record<string, unknown>,
  ) => ({
    tag,
    item: {
      ConditionCheck: {
        TableName: tables.ledger,
        Key: key,
        ConditionExpression: condition,
        ...(values ? { ExpressionAttributeValues: values } : {}),
      },
    },
  });
  return [
    {
      tag: 'reversal',
      item: { Put: { TableName: tables.ledger, Item: entry, ConditionExpression: 'attribute_not_exists(entryId)' } },
    },
    ...(inLedger(reversal.reversedEntryId)
      ? [
          check(
            'award',
            { userId: reversal.userId, entryId: reversal.reversedEntryId },
            'kind = :award AND points = :points',
            {
              ':award': LedgerEntryKind.AWARD,
              ':points': reversal.points,
            },
          ),
        ]
      : []),
    { tag: 'balance', item: balanceIncrement(tables.accounts, reversal.userId, -reversal.points, now) },
    ...(inLedger(kept.entryId)
      ? [
          check('kept', kept, 'kind = :award', { ':award': LedgerEntryKind.AWARD }),
          check(
            'kept',
            { userId: kept.userId, entryId: reversalEntryId(kept.entryId) },
            'attribute_not_exists(entryId)',
          ),
        ]
      : []),
  ];
}

function cancellationReasons(error: unknown): Array<string | undefined> | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons;
  return reasons?.map((r) => r.Code);
}

function summariseRun(
  applied: boolean,
  outcomes: ReversalOutcome[],
  doubleAwards: readonly DoubleAward[],
): Omit<ReversalReport, 'undecided' | 'rightfulUnused'> {
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
