import { jitter } from '../concurrency.ts';
import { ContentionError } from '../failures/errors.ts';
import type { Settlement } from '../settlement.ts';

/** How the runtime retries contention within an invocation. */
export interface ContentionPolicy {
  /** Retries after the first commit before a contended record fails (as transient, retried on the schedule). */
  readonly retries: number;
  /** Base of the exponential backoff between rounds, jittered. */
  readonly backoffMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * The one place contention is retried. Commits `items`, then commits again, after an
 * exponential, jittered backoff, the items that met contention (a failed settlement with a
 * `ContentionError`; nothing was written for them), until they settle otherwise or the retries
 * are spent. Items with the same `retryTogether` go back in one commit, the others alone.
 *
 *   commit [SO1 SO2 SO3]      SO2 and SO3 conflict on account u7 (retryTogether u7)
 *   wait ~25 ms, commit [SO2 SO3]
 *   wait ~50 ms, commit …     until settled, or `retries` rounds spent: fails as TransactionConflict
 *
 * TransactionConflict cancels without effect and the SDK does not retry cancellations; a
 * throttled packed transaction is retried here smaller (the packer halves it).
 */
export async function commitRetryingContention<T>(
  items: readonly T[],
  commit: (items: readonly T[]) => Promise<Settlement[]>,
  policy: ContentionPolicy,
  round = 0,
): Promise<Settlement[]> {
  const settlements = await commit(items);
  if (round >= policy.retries) return settlements;
  const retries = contendedGroups(settlements);
  if (retries.length === 0) return settlements;
  await policy.sleep(jitter(policy.backoffMs * 2 ** round));
  await Promise.all(
    retries.map(async (indexes) => {
      const again = await commitRetryingContention(
        indexes.map((i) => items[i]!),
        commit,
        policy,
        round + 1,
      );
      for (const [j, i] of indexes.entries()) settlements[i] = again[j]!;
    }),
  );
  return settlements;
}

/** The indexes of contended settlements, grouped by `retryTogether` (each alone without one), in order. */
function contendedGroups(settlements: readonly Settlement[]): number[][] {
  const groups = new Map<string | number, number[]>();
  for (const [i, s] of settlements.entries()) {
    if (s.outcome !== 'failed' || !(s.error instanceof ContentionError)) continue;
    const together = s.error.retryTogether ?? i;
    groups.set(together, [...(groups.get(together) ?? []), i]);
  }
  return [...groups.values()];
}
