import { mapLimit } from '../concurrency.ts';

/**
 * A batch split into its message groups, each in arrival order (the order SQS FIFO keeps
 * within a group), the groups in the order of their first item. An item without a group is a
 * group of its own: nothing orders it against the others.
 */
export function messageGroups<T>(items: readonly T[], groupOf: (item: T) => string | undefined): T[][] {
  const byId = new Map<string, T[]>();
  const groups: T[][] = [];
  for (const item of items) {
    const id = groupOf(item);
    const existing = id === undefined ? undefined : byId.get(id);
    if (existing) {
      existing.push(item);
      continue;
    }
    const group = [item];
    groups.push(group);
    if (id !== undefined) byId.set(id, group);
  }
  return groups;
}

/** What an item's turn came to: its group goes on to the next item, or stops behind it. */
export type Turn = 'continue' | 'block';

/**
 * Consumes each group in order, one item at a time, and the groups concurrently (at most
 * `limit` at once). The first item whose turn blocks stops its group: every later item of that
 * group goes to `holdBack`, never to `consume`. Powertools' `SqsFifoPartialProcessor` with
 * `skipGroupOnError` skips the rest of a failed group the same way, but consumes the groups one
 * after another.
 */
export async function consumeInOrder<T>(
  groups: readonly (readonly T[])[],
  limit: number,
  consume: (item: T) => Promise<Turn>,
  holdBack: (item: T, blockedBy: T) => void,
): Promise<void> {
  await mapLimit(groups, limit, async (group) => {
    for (const [i, item] of group.entries()) {
      if ((await consume(item)) === 'continue') continue;
      for (const later of group.slice(i + 1)) holdBack(later, item);
      return;
    }
  });
}
