import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import type { ConsumerMessage } from '../settlement.ts';
import { canonicalJson } from './record.ts';
import type { TransactItem, TransactionalResult } from './transactional.ts';

/**
 * The packer's pure part: how the commits of one SQS batch are laid out in
 * `TransactWriteItems` (which records share a transaction, which increments merge into
 * one action, how a cancellation or a refusal is split). No I/O here: the strategy in
 * `packed-transactional.ts` sends what this plans and reads DynamoDB's answers.
 */

/** Cancellation codes that say "not now", not "not this": the record is retried, never settled from them. */
export const CONTENTION_CODES = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
]);

export interface PackEntry<P> {
  readonly index: number;
  readonly msg: ConsumerMessage<P>;
  readonly result: TransactionalResult;
}

export interface PackedAction {
  item: TransactItem;
  /** Set for merged increments: the merge key. */
  readonly mergeKey?: string;
}

export interface PackedTransaction<P> {
  readonly actions: PackedAction[];
  readonly entries: PackEntry<P>[];
  /** Per record (by batch index): the action index of each of its slots (dedup put, then its writes in order). */
  readonly slots: Map<number, number[]>;
}

export interface PackLimits<P> {
  maxActions: number;
  maxBytes: number;
  identify: (item: TransactItem) => string;
  dedupPut: (msg: ConsumerMessage<P>) => TransactItem;
}

/** Greedy first-fit in batch order; a record never spans two transactions. */
export function pack<P>(entries: readonly PackEntry<P>[], limits: PackLimits<P>): PackedTransaction<P>[] {
  const out: PackedTransaction<P>[] = [];
  let current = emptyTransaction<P>();
  let bytes = 0;
  let identities = new Map<string, number>();
  for (const entry of entries) {
    const items = [limits.dedupPut(entry.msg), ...entry.result.writes.map((w) => w.item)];
    let placed = tryPlace(current, identities, bytes, entry, items, limits);
    if (!placed && current.entries.length > 0) {
      out.push(current);
      current = emptyTransaction<P>();
      identities = new Map();
      bytes = 0;
      placed = tryPlace(current, identities, bytes, entry, items, limits);
    }
    // A record too big for a transaction of its own still gets one: DynamoDB rejects it
    // exactly as it would in per-record mode.
    if (!placed) placed = place(current, identities, entry, items, limits.identify, true);
    bytes += placed.bytes;
  }
  if (current.entries.length > 0) out.push(current);
  return out;
}

export function emptyTransaction<P>(): PackedTransaction<P> {
  return { actions: [], entries: [], slots: new Map() };
}

function tryPlace<P>(
  tx: PackedTransaction<P>,
  identities: Map<string, number>,
  bytes: number,
  entry: PackEntry<P>,
  items: TransactItem[],
  limits: PackLimits<P>,
) {
  const plan = planPlacement(tx, identities, items, limits.identify);
  if (!plan) return undefined;
  if (tx.actions.length + plan.newActions > limits.maxActions) return undefined;
  if (tx.entries.length > 0 && bytes + plan.bytes > limits.maxBytes) return undefined;
  return place(tx, identities, entry, items, limits.identify, false);
}

/** Would `items` fit without a second non-mergeable action on an item already in `tx`? */
export function planPlacement<P>(
  tx: PackedTransaction<P>,
  identities: Map<string, number>,
  items: TransactItem[],
  identify: (i: TransactItem) => string,
) {
  let newActions = 0;
  let bytes = 0;
  const own = new Set<string>();
  for (const item of items) {
    const identity = identify(item);
    const existing = identities.get(identity);
    bytes += estimatedBytes(item);
    if (existing !== undefined && !own.has(identity)) {
      const key = mergeKeyOf(item);
      if (!key || tx.actions[existing]!.mergeKey !== key) return undefined;
      continue;
    }
    own.add(identity);
    newActions++;
  }
  return { newActions, bytes };
}

export function place<P>(
  tx: PackedTransaction<P>,
  identities: Map<string, number>,
  entry: PackEntry<P>,
  items: TransactItem[],
  identify: (i: TransactItem) => string,
  force: boolean,
) {
  const slots: number[] = [];
  let bytes = 0;
  const own = new Set<string>();
  for (const item of items) {
    const identity = identify(item);
    const existing = identities.get(identity);
    bytes += estimatedBytes(item);
    if (existing !== undefined && !own.has(identity) && !force) {
      const action = tx.actions[existing]!;
      action.item = mergeIncrements(action.item, item);
      slots.push(existing);
      continue;
    }
    own.add(identity);
    identities.set(identity, tx.actions.length);
    slots.push(tx.actions.length);
    tx.actions.push({ item, mergeKey: mergeKeyOf(item) });
  }
  tx.entries.push(entry);
  tx.slots.set(entry.index, slots);
  return { bytes };
}

/**
 * Records that increment the same item are placed next to each other, so a batch larger
 * than one transaction still merges what can be merged and its transactions rarely touch
 * the same item (which would conflict with each other in DynamoDB).
 */
export function affinityOrder<P>(entries: PackEntry<P>[]): PackEntry<P>[] {
  const firstIncrement = (e: PackEntry<P>) => e.result.writes.map((w) => mergeKeyOf(w.item)).find(Boolean) ?? '';
  return entries
    .map((entry, order) => ({ entry, order, key: firstIncrement(entry) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.order - b.order))
    .map((x) => x.entry);
}

/** Table plus key: what DynamoDB means by "one item" in a transaction. */
export function itemIdentity(keyAttributes: Readonly<Record<string, readonly string[]>>) {
  return (item: TransactItem): string => {
    if (item.Put) {
      const names = keyAttributes[item.Put.TableName!];
      const key = names ? Object.fromEntries(names.map((n) => [n, item.Put!.Item![n]])) : item.Put.Item;
      return `${item.Put.TableName}|${canonicalJson(key)}`;
    }
    const op = item.Update ?? item.Delete ?? item.ConditionCheck;
    return `${op?.TableName}|${canonicalJson(op?.Key)}`;
  };
}

const INCREMENT_EXPRESSION = /^\s*ADD\s+(.+?)(?:\s+SET\s+(.+?))?\s*$/s;

/**
 * An update that can be summed with another on the same item: no condition, only `ADD`
 * of numeric placeholders and `SET path = :placeholder`. Two such updates with the same
 * expression equal one update whose `ADD` values are the sums (addition commutes) and
 * whose `SET` values are the later ones (what applying them in batch order leaves).
 */
export function mergeKeyOf(item: TransactItem): string | undefined {
  const update = item.Update;
  if (!update || update.ConditionExpression || !update.UpdateExpression) return undefined;
  const parsed = parseIncrement(update.UpdateExpression);
  if (!parsed) return undefined;
  const values = update.ExpressionAttributeValues ?? {};
  if (!parsed.add.every(([, v]) => typeof values[v] === 'number')) return undefined;
  return `${update.TableName}|${canonicalJson(update.Key)}|${update.UpdateExpression}|${canonicalJson(update.ExpressionAttributeNames ?? {})}`;
}

export function parseIncrement(expression: string): { add: [string, string][]; set: [string, string][] } | undefined {
  const match = INCREMENT_EXPRESSION.exec(expression);
  if (!match) return undefined;
  const add = match[1]!.split(',').map((part) => part.trim().split(/\s+/));
  if (!add.every((p) => p.length === 2 && p[1]!.startsWith(':'))) return undefined;
  const set = (match[2] ?? '')
    .split(',')
    .filter((p) => p.trim() !== '')
    .map((part) => part.split('=').map((s) => s.trim()));
  if (!set.every((p) => p.length === 2 && /^:\w+$/.test(p[1]!))) return undefined;
  return { add: add as [string, string][], set: set as [string, string][] };
}

export function mergeIncrements(into: TransactItem, next: TransactItem): TransactItem {
  const { add } = parseIncrement(into.Update!.UpdateExpression!)!;
  const values: Record<string, unknown> = {
    ...into.Update!.ExpressionAttributeValues,
    ...next.Update!.ExpressionAttributeValues,
  };
  for (const [, placeholder] of add) {
    values[placeholder] =
      (into.Update!.ExpressionAttributeValues![placeholder] as number) +
      (next.Update!.ExpressionAttributeValues![placeholder] as number);
  }
  return { Update: { ...into.Update!, ExpressionAttributeValues: values } };
}

/** Item bytes as DynamoDB counts them, approximated from the JSON (names plus values); generous for numbers. */
export function estimatedBytes(item: TransactItem): number {
  const body =
    item.Put?.Item ?? item.Update?.ExpressionAttributeValues ?? item.Delete?.Key ?? item.ConditionCheck?.Key ?? {};
  return Buffer.byteLength(JSON.stringify(body)) + 100;
}

export function contendedCode(reasons: CancellationReason[]): string {
  const codes = reasons.map((r) => r.Code ?? 'None');
  return codes.includes('TransactionConflict')
    ? 'TransactionConflict'
    : (codes.find((c) => CONTENTION_CODES.has(c)) ?? 'TransactionCanceled');
}

export function isValidation(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationException';
}

export function halves<T>(items: readonly T[]): [T[], T[]] {
  const mid = Math.ceil(items.length / 2);
  return [items.slice(0, mid), items.slice(mid)];
}
