import { TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { jitter, mapLimit, sleep as wait } from '../concurrency.ts';
import { classify, TransientFailureError, type ConsumptionError } from '../errors.ts';
import { canonicalJson } from '../record.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import type { ConsumptionStrategy } from '../strategy.ts';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  dedupRecordPut,
  explainCancellation,
  transactionalStrategy,
  type TransactionalOptions,
  type TransactionalResult,
  type TransactItem,
} from './transactional.ts';

/** DynamoDB's limits for one `TransactWriteItems`: 100 actions, 4 MB of items. */
export const MAX_TRANSACTION_ACTIONS = 100;
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

export interface PackedTransactionalOptions extends TransactionalOptions {
  /**
   * Key attributes per physical table name. A `Put` names its item only through its
   * attributes, so without this the packer cannot see that two records put the same item
   * (DynamoDB rejects two actions on one item); it then learns it from the rejection and
   * splits, which costs round trips. `Update`/`Delete`/`ConditionCheck` carry their key.
   */
  keyAttributes?: Readonly<Record<string, readonly string[]>>;
  /** Actions per transaction; default (and at most) 100. */
  maxActions?: number;
  /** Estimated item bytes per transaction; default 3.5 MB, headroom under the 4 MB limit. */
  maxBytes?: number;
  /** Rounds of split-and-retry after `TransactionConflict` or throttling before a record fails; default 3 (the middleware's default). */
  contentionRetries?: number;
  /** Base of the exponential backoff between those rounds; default 25 ms, jittered. */
  backoffMs?: number;
  /** Transactions of one batch in flight at once (only batches beyond one transaction have more). Default 4. */
  concurrency?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** Cancellation codes that say "not now", not "not this": the record is retried, never settled from them. */
const CONTENTION_CODES = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);

/** Whole-request errors that mean "too fast": retried smaller and later. */
const THROTTLING_ERRORS = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/**
 * Batch packing: the commits of the records of one SQS batch go into as few
 * `TransactWriteItems` as the limits allow, instead of one per record.
 *
 *   per record:  T1 [dedup SO1, ledger SO1, balance u7]   T2 [dedup SO2, ledger SO2, balance u7]   …
 *   packed:      T  [dedup SO1, ledger SO1, dedup SO2, ledger SO2, balance u7 (+SO1 +SO2)]
 *
 * Each record keeps its own dedup record in the same transaction as its own writes, so
 * "recorded" and "done" still commit together. Unconditional `ADD`/`SET` updates of one
 * item (balance increments of one account) are merged into one action: the sum is what
 * the separate increments would have added, and DynamoDB rejects two actions on one item
 * anyway. Anything else that touches an item already in the transaction goes to another one.
 *
 * A transaction is all or nothing, so one duplicate cancels its batch-mates too. The
 * cancellation says which action failed and why (in action order, with the existing dedup
 * record on `ALL_OLD`): those records are settled exactly as per-record mode settles them
 * (duplicate, conflict, effect already present, rejected), and the records whose actions
 * all say `None` are committed in a follow-up transaction. A batch of duplicates therefore
 * costs one round trip. `TransactionConflict` and throttling settle nothing: the records
 * they touch are split and retried with exponential backoff, and fail as transient (the
 * same outcome as per-record mode) when the retries are spent.
 */
export function packedTransactionalStrategy(options: PackedTransactionalOptions): ConsumptionStrategy<TransactionalResult> {
  const perRecord = transactionalStrategy(options);
  const now = options.now ?? Date.now;
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_RECORD_TTL_SECONDS;
  const maxActions = Math.min(options.maxActions ?? MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_ACTIONS);
  const maxBytes = Math.min(options.maxBytes ?? 3.5 * 1024 * 1024, MAX_TRANSACTION_BYTES);
  const contentionRetries = options.contentionRetries ?? 3;
  const backoffMs = options.backoffMs ?? 25;
  const concurrency = options.concurrency ?? 4;
  const sleep = options.sleep ?? wait;
  const identify = itemIdentity(options.keyAttributes ?? {});

  return {
    ...perRecord,
    async commitBatch<P>(msgs: readonly ConsumerMessage<P>[], results: readonly TransactionalResult[]): Promise<Settlement[]> {
      const settlements: Settlement[] = new Array(msgs.length);
      const entries: PackEntry<P>[] = msgs.map((msg, index) => ({ index, msg, result: results[index]! }));

      const fail = (entry: PackEntry<P>, error: ConsumptionError) => {
        settlements[entry.index] = { outcome: 'failed', error };
      };

      /** Commits `batch`: packs it, sends the transactions, and follows up until every record is settled. */
      const run = async (batch: PackEntry<P>[], attempt: number): Promise<void> => {
        const transactions = pack(batch, { maxActions, maxBytes, identify, dedupPut: (m) => dedupRecordPut(m, options, ttlSeconds, now()) });
        await mapLimit(transactions, concurrency, (tx) => send(tx, attempt));
      };

      const send = async (tx: PackedTransaction<P>, attempt: number): Promise<void> => {
        try {
          await options.client.send(new TransactWriteCommand({ TransactItems: tx.actions.map((a) => a.item) }));
          for (const entry of tx.entries) settlements[entry.index] = { outcome: 'processed' };
          return;
        } catch (error) {
          if (error instanceof TransactionCanceledException && error.CancellationReasons?.length === tx.actions.length) {
            return explain(tx, error.CancellationReasons, attempt, error);
          }
          const failure = classify(error);
          if (tx.entries.length > 1 && isValidation(error)) {
            // Two actions on one item the packer could not see (a Put on a table without
            // declared key attributes): halve until each record stands alone, no backoff.
            const [a, b] = halves(tx.entries);
            await Promise.all([run(a, attempt), run(b, attempt)]);
            return;
          }
          if (THROTTLING_ERRORS.has(failure.code)) {
            // Throttled even after the SDK's own retries: smaller transactions, later. (A
            // timeout is not retried here: the transaction may have committed, and the
            // redelivery settles that from the dedup records, as in per-record mode.)
            return retryContended(tx.entries, attempt, failure, true);
          }
          for (const entry of tx.entries) fail(entry, failure);
        }
      };

      /** Reads the cancellation reasons action by action and gives each record its share. */
      const explain = async (tx: PackedTransaction<P>, reasons: CancellationReason[], attempt: number, error: unknown) => {
        const innocent: PackEntry<P>[] = [];
        // Contended records grouped by the first contended item they touch: records that share
        // a hot item (merged into one increment) are retried together, because two smaller
        // transactions on that item at once would only conflict with each other.
        const contended = new Map<number, PackEntry<P>[]>();
        for (const entry of tx.entries) {
          const slots = tx.slots.get(entry.index)!;
          const codes = slots.map((action) => reasons[action]?.Code ?? 'None');
          if (codes.every((c) => c === 'None')) innocent.push(entry);
          else if (codes.every((c) => c === 'None' || CONTENTION_CODES.has(c))) {
            const hot = slots[codes.findIndex((c) => c !== 'None')]!;
            contended.set(hot, [...(contended.get(hot) ?? []), entry]);
          } else {
            try {
              settlements[entry.index] = explainCancellation(entry.msg, entry.result, slots.map((action) => reasons[action] ?? {}));
            } catch (explained) {
              fail(entry, classify(explained));
            }
          }
        }
        if (innocent.length === tx.entries.length) {
          // Cancelled with nothing to blame: retry as contention so the loop spends its budget and ends.
          return retryContended(innocent, attempt, classify(error), true);
        }
        const failure = new TransientFailureError(`transaction cancelled: ${reasons.map((r) => r.Code ?? 'None').join(', ')}`, contendedCode(reasons));
        await Promise.all([
          innocent.length > 0 ? run(innocent, attempt) : undefined,
          ...[...contended.values()].map((group) => retryContended(group, attempt, failure, false)),
        ]);
      };

      /**
       * Retries records that met contention, after an exponential, jittered backoff. A
       * whole-request throttle (`halve`) is retried in two smaller transactions; records
       * grouped on one hot item stay together (see above).
       */
      const retryContended = async (batch: PackEntry<P>[], attempt: number, failure: ConsumptionError, halve: boolean): Promise<void> => {
        if (attempt >= contentionRetries) {
          for (const entry of batch) fail(entry, failure);
          return;
        }
        await sleep(jitter(backoffMs * 2 ** attempt));
        const parts = halve && batch.length > 1 ? halves(batch) : [batch];
        await Promise.all(parts.map((part) => run(part, attempt + 1)));
      };

      await run(affinityOrder(entries), 0);
      // Every path above settles each record; this only guards the contract (one settlement per record).
      for (const entry of entries) settlements[entry.index] ??= { outcome: 'failed', error: new TransientFailureError(`record ${entry.msg.key} was not settled by packing`, 'PACKING_UNSETTLED') };
      return settlements;
    },
  };
}

interface PackEntry<P> {
  readonly index: number;
  readonly msg: ConsumerMessage<P>;
  readonly result: TransactionalResult;
}

interface PackedAction {
  item: TransactItem;
  /** Set for merged increments: the merge key. */
  readonly mergeKey?: string;
}

interface PackedTransaction<P> {
  readonly actions: PackedAction[];
  readonly entries: PackEntry<P>[];
  /** Per record (by batch index): the action index of each of its slots (dedup put, then its writes in order). */
  readonly slots: Map<number, number[]>;
}

interface PackLimits<P> {
  maxActions: number;
  maxBytes: number;
  identify: (item: TransactItem) => string;
  dedupPut: (msg: ConsumerMessage<P>) => TransactItem;
}

/** Greedy first-fit in batch order; a record never spans two transactions. */
function pack<P>(entries: readonly PackEntry<P>[], limits: PackLimits<P>): PackedTransaction<P>[] {
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

function emptyTransaction<P>(): PackedTransaction<P> {
  return { actions: [], entries: [], slots: new Map() };
}

function tryPlace<P>(tx: PackedTransaction<P>, identities: Map<string, number>, bytes: number, entry: PackEntry<P>, items: TransactItem[], limits: PackLimits<P>) {
  const plan = planPlacement(tx, identities, items, limits.identify);
  if (!plan) return undefined;
  if (tx.actions.length + plan.newActions > limits.maxActions) return undefined;
  if (tx.entries.length > 0 && bytes + plan.bytes > limits.maxBytes) return undefined;
  return place(tx, identities, entry, items, limits.identify, false);
}

/** Would `items` fit without a second non-mergeable action on an item already in `tx`? */
function planPlacement<P>(tx: PackedTransaction<P>, identities: Map<string, number>, items: TransactItem[], identify: (i: TransactItem) => string) {
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

function place<P>(tx: PackedTransaction<P>, identities: Map<string, number>, entry: PackEntry<P>, items: TransactItem[], identify: (i: TransactItem) => string, force: boolean) {
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
function affinityOrder<P>(entries: PackEntry<P>[]): PackEntry<P>[] {
  const firstIncrement = (e: PackEntry<P>) => e.result.writes.map((w) => mergeKeyOf(w.item)).find(Boolean) ?? '';
  return entries
    .map((entry, order) => ({ entry, order, key: firstIncrement(entry) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.order - b.order))
    .map((x) => x.entry);
}

/** Table plus key: what DynamoDB means by "one item" in a transaction. */
function itemIdentity(keyAttributes: Readonly<Record<string, readonly string[]>>) {
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
function mergeKeyOf(item: TransactItem): string | undefined {
  const update = item.Update;
  if (!update || update.ConditionExpression || !update.UpdateExpression) return undefined;
  const parsed = parseIncrement(update.UpdateExpression);
  if (!parsed) return undefined;
  const values = update.ExpressionAttributeValues ?? {};
  if (!parsed.add.every(([, v]) => typeof values[v] === 'number')) return undefined;
  return `${update.TableName}|${canonicalJson(update.Key)}|${update.UpdateExpression}|${canonicalJson(update.ExpressionAttributeNames ?? {})}`;
}

function parseIncrement(expression: string): { add: [string, string][]; set: [string, string][] } | undefined {
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

function mergeIncrements(into: TransactItem, next: TransactItem): TransactItem {
  const { add } = parseIncrement(into.Update!.UpdateExpression!)!;
  const values: Record<string, unknown> = { ...into.Update!.ExpressionAttributeValues, ...next.Update!.ExpressionAttributeValues };
  for (const [, placeholder] of add) {
    values[placeholder] = (into.Update!.ExpressionAttributeValues![placeholder] as number) + (next.Update!.ExpressionAttributeValues![placeholder] as number);
  }
  return { Update: { ...into.Update!, ExpressionAttributeValues: values } };
}

/** Item bytes as DynamoDB counts them, approximated from the JSON (names plus values); generous for numbers. */
function estimatedBytes(item: TransactItem): number {
  const body = item.Put?.Item ?? item.Update?.ExpressionAttributeValues ?? item.Delete?.Key ?? item.ConditionCheck?.Key ?? {};
  return Buffer.byteLength(JSON.stringify(body)) + 100;
}

function contendedCode(reasons: CancellationReason[]): string {
  const codes = reasons.map((r) => r.Code ?? 'None');
  return codes.includes('TransactionConflict') ? 'TransactionConflict' : (codes.find((c) => CONTENTION_CODES.has(c)) ?? 'TransactionCanceled');
}

function isValidation(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationException';
}

function halves<T>(items: readonly T[]): [T[], T[]] {
  const mid = Math.ceil(items.length / 2);
  return [items.slice(0, mid), items.slice(mid)];
}
