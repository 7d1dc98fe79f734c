import { createHash, type Hash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { OperationsError } from '../operations/index.ts';
import { checkLegacyRow, type LegacyRow } from './legacy-award.ts';
import type { LegacySource } from './legacy-source.ts';

/**
 * What an operator reviewed before `--ledger moved` raises balances: the dry run
 * (`ops migrate import --ledger moved --dry-run --plan <file>`) writes, per user, the awards and
 * points the import would move, and a digest of every award in the source's order; the applying
 * run (`--plan <file>`) reads the source again, up to where the dry run stopped, and writes nothing
 * unless it finds exactly the reviewed awards. The shape is `ops reverse --plan`'s
 * (packages/ops/src/operations/reversal-plan.ts): a file the dry run writes, an apply run bound to it.
 *
 * The source's end is fixed at the dry run (`upTo`: the table's last cursor value, the export's
 * size), so rows the legacy consumers add meanwhile are not in the plan nor read by its apply run:
 * the delta import plans them. The file holds one line per user.
 */
export interface ImportPlan {
  version: 1;
  createdAt: string;
  /** Source (without a password), mapping, `--since` and group: a plan applies to the import it was made for only. */
  planKey: string;
  source: string;
  /** Where the source ended at the dry run; the apply run reads no further. */
  upTo: string;
  awards: number;
  points: number;
  /** Rows refused as invalid (not moved; listed by the dry run's report). */
  invalid: number;
  users: ImportPlanUser[];
  /** SHA-256 of every award to move (order, user, points) in the source's order: what the operator quotes. */
  digest: string;
}

export interface ImportPlanUser {
  userId: string;
  awards: number;
  points: number;
}

/** The plan file cannot be read, was edited, is for another import, or the source no longer matches it. */
export class ImportPlanError extends OperationsError {
  override readonly name = 'ImportPlanError';
}

const planSchema = z.object({
  version: z.literal(1),
  createdAt: z.string(),
  planKey: z.string(),
  source: z.string(),
  upTo: z.string(),
  awards: z.number(),
  points: z.number(),
  invalid: z.number(),
  users: z.array(z.object({ userId: z.string(), awards: z.number(), points: z.number() })),
  digest: z.string(),
});

/** Awards to move, tallied page by page in the source's order (the dry run's pages, or the apply run's own read). */
export class PlanTally {
  private readonly hash: Hash = createHash('sha256');
  private readonly byUser = new Map<string, ImportPlanUser>();
  private invalid = 0;
  private awards = 0;
  private points = 0;

  add(rows: readonly LegacyRow[]): void {
    for (const row of rows) {
      const check = checkLegacyRow(row);
      if (!check.ok) {
        this.invalid++;
        continue;
      }
      const { orderNo, userId, points } = check.award;
      if (userId === undefined || !points) continue;
      this.hash.update(`${orderNo}\t${userId}\t${points}\n`);
      const user = this.byUser.get(userId) ?? { userId, awards: 0, points: 0 };
      this.byUser.set(userId, { userId, awards: user.awards + 1, points: user.points + points });
      this.awards++;
      this.points += points;
    }
  }

  plan(fields: Pick<ImportPlan, 'createdAt' | 'planKey' | 'source' | 'upTo'>): ImportPlan {
    const users = [...this.byUser.values()].sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0));
    return {
      version: 1,
      ...fields,
      awards: this.awards,
      points: this.points,
      invalid: this.invalid,
      users,
      digest: this.hash.copy().digest('hex').slice(0, 16),
    };
  }
}

/** The source's awards up to `upTo`, tallied as a plan's. */
export async function tallySource(source: LegacySource, upTo: string): Promise<PlanTally> {
  const tally = new PlanTally();
  for await (const page of source.pages(undefined, upTo)) tally.add(page.rows);
  return tally;
}

/** Refuses the apply run unless the source holds exactly the reviewed awards; names the users that differ. */
export function checkAgainstPlan(plan: ImportPlan, now: ImportPlan): void {
  if (now.digest === plan.digest && now.invalid === plan.invalid) return;
  const was = new Map(plan.users.map((u) => [u.userId, u]));
  const is = new Map(now.users.map((u) => [u.userId, u]));
  const differing = [...new Set([...was.keys(), ...is.keys()])]
    .filter((id) => was.get(id)?.points !== is.get(id)?.points || was.get(id)?.awards !== is.get(id)?.awards)
    .sort()
    .slice(0, 5)
    .map((id) => `user ${id}: ${describe(was.get(id))} in the plan, ${describe(is.get(id))} now`);
  throw new ImportPlanError(
    `the source no longer holds the reviewed awards (plan ${plan.digest}, now ${now.digest}; ` +
      `${plan.awards} awards and ${plan.invalid} invalid rows in the plan, ${now.awards} and ${now.invalid} now` +
      `${differing.length > 0 ? `; ${differing.join('; ')}` : ', the same totals per user, other orders'}): ` +
      'nothing was written. Review a new plan: the same command with --dry-run --plan <file>',
  );
}

const describe = (u: ImportPlanUser | undefined) => (u ? `${u.points} points in ${u.awards} awards` : 'nothing');

export async function writeImportPlan(path: string, plan: ImportPlan): Promise<void> {
  // One line per user: the file names users and what they are owed, so it is its owner's only.
  await writeFile(path, `${JSON.stringify(plan, null, 2)}\n`, { mode: 0o600 });
}

export async function readImportPlan(path: string): Promise<ImportPlan> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new ImportPlanError(`cannot read the plan ${path}: ${(error as Error).message}`);
  }
  const parsed = planSchema.safeParse(json);
  if (!parsed.success)
    throw new ImportPlanError(`${path} is not an import plan written by ops migrate import --dry-run --plan`);
  const plan = parsed.data;
  const sum = (f: (u: ImportPlanUser) => number) => plan.users.reduce((n, u) => n + f(u), 0);
  if (sum((u) => u.points) !== plan.points || sum((u) => u.awards) !== plan.awards)
    throw new ImportPlanError(
      `${path} was edited after the dry run wrote it (its users no longer add up to its totals)`,
    );
  return plan;
}

/** Refuses a plan made for another import (source, mapping, `--since`, group). */
export function checkPlanImport(plan: ImportPlan, planKey: string, path: string): void {
  if (plan.planKey !== planKey)
    throw new ImportPlanError(
      `${path} is the plan of another import (made against ${plan.source}, other mapping, --since or group): ` +
        'make one for this import with --dry-run --plan <file>',
    );
}
