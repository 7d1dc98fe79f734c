import { z } from 'zod';
import { type PlannedReversal, ReversalReason, reversalKey } from './double-award-reversal.ts';
import { OperationsError } from './errors.ts';
import type { PointTableNames } from './operations-target.ts';
import { planDigest, readPlanFile, writePlanFile } from './reviewed-plan.ts';

/**
 * What an operator reviewed in a dry run (`ops reverse --plan <file>`), and the only set
 * `ops reverse --apply --plan <file>` may write: the apply run audits again and refuses if the
 * ledger now calls for a reversal the plan does not hold. The file names the ledger table by ARN,
 * so a plan reviewed on one account, region or deployment cannot be applied to another.
 */
export interface ReversalPlan {
  version: 1;
  createdAt: string;
  ledgerTableArn: string;
  tables: PointTableNames;
  /** The `--rightful` choices of the dry run; the apply run takes them from here. */
  rightful: Record<string, string>;
  reversals: PlannedReversal[];
  /** `--legacy-source` of the dry run (without a password): the apply run must audit against the same store. */
  legacySource?: string;
  /** Of the reversals: shown by the dry run and at the confirmation, so both name the same set. */
  digest: string;
}

/** The plan file cannot be read, was edited since the dry run, or is for another ledger. */
export class ReversalPlanError extends OperationsError {
  override readonly name = 'ReversalPlanError';
}

const reversalSchema = z.object({
  userId: z.string(),
  orderNo: z.string(),
  reversedEntryId: z.string(),
  reversalEntryId: z.string(),
  points: z.number(),
  reason: z.enum([ReversalReason.DOUBLE_AWARD, ReversalReason.CROSS_USER_AWARD]),
  keptUserId: z.string(),
  keptEntryId: z.string(),
});

const planSchema = z.object({
  version: z.literal(1),
  createdAt: z.string(),
  ledgerTableArn: z.string(),
  tables: z.object({ ledger: z.string(), accounts: z.string() }),
  rightful: z.record(z.string(), z.string()),
  reversals: z.array(reversalSchema),
  legacySource: z.string().optional(),
  digest: z.string(),
});

const digestOf = (reversals: readonly PlannedReversal[]) => planDigest(reversals.map(reversalKey));

export function reversalPlanOf(fields: Omit<ReversalPlan, 'version' | 'digest'>): ReversalPlan {
  return { version: 1, ...fields, digest: digestOf(fields.reversals) };
}

export async function writeReversalPlan(path: string, plan: ReversalPlan): Promise<void> {
  await writePlanFile(path, plan);
}

export function readReversalPlan(path: string): Promise<ReversalPlan> {
  return readPlanFile(path, {
    schema: planSchema,
    digestOf: (plan) => digestOf(plan.reversals),
    writtenBy: 'ops reverse --plan',
    refuse: (message) => new ReversalPlanError(message),
  });
}

/** Refuses a plan reviewed against another ledger (account, region or deployment) or other tables. */
export function checkPlanTarget(
  plan: ReversalPlan,
  ledgerTableArn: string,
  tables: PointTableNames,
  legacySource?: string,
): void {
  if (plan.legacySource !== legacySource) {
    throw new ReversalPlanError(
      `the plan was made against ${plan.legacySource ? `the legacy store ${plan.legacySource}` : 'no legacy store'}; this run audits ${legacySource ? `against ${legacySource}` : 'without --legacy-source'}`,
    );
  }
  if (plan.ledgerTableArn !== ledgerTableArn || plan.tables.accounts !== tables.accounts) {
    throw new ReversalPlanError(
      `the plan was made for ${plan.ledgerTableArn} and ${plan.tables.accounts}; this run targets ${ledgerTableArn} and ${tables.accounts}`,
    );
  }
}
