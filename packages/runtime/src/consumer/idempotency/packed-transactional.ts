import { type CancellationReason, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mapLimit } from '../concurrency.ts';
import { type ConsumptionError, ContentionError, classify, TransientFailureError } from '../failures/errors.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import type { ConsumptionStrategy } from './strategy.ts';
import {
  affinityOrder,
  CONTENTION_CODES,
  contendedCode,
  halves,
  isValidation,
  itemIdentity,
  type PackEntry,
  type PackedTransaction,
  type PackLimits,
  pack,
} from './transaction-packing.ts';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  dedupRecordPut,
  explainCancellation,
  type TransactItem,
  type TransactionalOptions,
  type TransactionalResult,
  transactionalStrategy,
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
  /** Transactions of one batch in flight at once (only batches beyond one transaction have more). Default 4. */
  concurrency?: number;
}

/** Whole-request errors that mean "too fast": retried smaller and later. */
const THROTTLING_ERRORS = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

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
 * they touch come back as `ContentionError`s, grouped so that records sharing a hot item
 * (and each half of a throttled transaction) are retried together, and the runtime retries
 * them (packages/runtime/src/consumer/steps/contention.ts).
 */
export function packedTransactionalStrategy(
  options: PackedTransactionalOptions,
): ConsumptionStrategy<TransactionalResult> {
  const perRecord = transactionalStrategy(options);
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_RECORD_TTL_SECONDS;
  const now = options.now ?? Date.now;
  const packing: Packing = {
    send: (actions) => options.client.send(new TransactWriteCommand({ TransactItems: actions })).then(() => undefined),
    limits: {
      maxActions: Math.min(options.maxActions ?? MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_ACTIONS),
      maxBytes: Math.min(options.maxBytes ?? 3.5 * 1024 * 1024, MAX_TRANSACTION_BYTES),
      identify: itemIdentity(options.keyAttributes ?? {}),
    },
    dedupPut: (msg) => dedupRecordPut(msg, options, ttlSeconds, now()),
    concurrency: options.concurrency ?? 4,
  };
  return {
    ...perRecord,
    commitBatch: <P>(msgs: readonly ConsumerMessage<P>[], results: readonly TransactionalResult[]) =>
      new PackingRound<P>(packing, msgs.length).commit(
        affinityOrder(msgs.map((msg, index) => ({ index, msg, result: results[index]! }))),
      ),
  };
}

/** What one round needs: how to send a transaction, the limits to pack under, transactions in flight at once. */
interface Packing {
  send: (actions: TransactItem[]) => Promise<void>;
  limits: Omit<PackLimits<unknown>, 'dedupPut'>;
  dedupPut: <P>(msg: ConsumerMessage<P>) => TransactItem;
  concurrency: number;
}

/**
 * One `commitBatch` call: packs the records, sends the transactions, and follows up (records a
 * cancellation did not blame, halves of a transaction DynamoDB refused as invalid) until every
 * record is settled or has met contention.
 */
class PackingRound<P> {
  private readonly settlements: Settlement[];
  private retryGroups = 0;

  constructor(
    private readonly packing: Packing,
    size: number,
  ) {
    this.settlements = new Array(size);
  }

  async commit(entries: PackEntry<P>[]): Promise<Settlement[]> {
    await this.run(entries);
    // Every path below settles each record; this only guards the contract (one settlement per record).
    for (const entry of entries)
      this.settlements[entry.index] ??= {
        outcome: 'failed',
        error: new TransientFailureError(`record ${entry.msg.key} was not settled by packing`, 'PACKING_UNSETTLED'),
      };
    return this.settlements;
  }

  private async run(entries: PackEntry<P>[]): Promise<void> {
    const transactions = pack(entries, { ...this.packing.limits, dedupPut: this.packing.dedupPut });
    await mapLimit(transactions, this.packing.concurrency, (tx) => this.send(tx));
  }

  private async send(tx: PackedTransaction<P>): Promise<void> {
    try {
      await this.packing.send(tx.actions.map((a) => a.item));
      for (const entry of tx.entries) this.settlements[entry.index] = { outcome: 'processed' };
    } catch (error) {
      if (error instanceof TransactionCanceledException && error.CancellationReasons?.length === tx.actions.length) {
        return this.explain(tx, error.CancellationReasons, error);
      }
      if (tx.entries.length > 1 && isValidation(error)) {
        // Two actions on one item the packer could not see (a Put on a table without declared
        // key attributes): halve until each record stands alone, no backoff.
        await Promise.all(halves(tx.entries).map((half) => this.run(half)));
        return;
      }
      const failure = classify(error);
      // Throttled even after the SDK's own retries: smaller transactions, later. (A timeout is
      // not retried here: the transaction may have committed, and the redelivery settles that
      // from the dedup records, as in per-record mode.)
      if (THROTTLING_ERRORS.has(failure.code)) return this.halvedContention(tx.entries, failure);
      for (const entry of tx.entries) this.fail(entry, failure);
    }
  }

  /** Reads the cancellation reasons action by action and gives each record its share. */
  private async explain(tx: PackedTransaction<P>, reasons: CancellationReason[], error: unknown): Promise<void> {
    const innocent: PackEntry<P>[] = [];
    // Contended records grouped by the first contended item they touch: records that share a
    // hot item (merged into one increment) are retried together, because two smaller
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
        const mine = slots.map((action) => reasons[action] ?? {});
        this.settlements[entry.index] = explainCancellation(entry.msg, entry.result, mine);
      }
    }
    // Cancelled with nothing to blame: contention all the same, so the retries spend their budget and end.
    if (innocent.length === tx.entries.length) return this.halvedContention(innocent, classify(error));
    const listed = reasons.map((r) => r.Code ?? 'None').join(', ');
    for (const group of contended.values()) {
      const together = this.retryGroup();
      const failure = new ContentionError(`transaction cancelled: ${listed}`, contendedCode(reasons), together);
      for (const entry of group) this.fail(entry, failure);
    }
    if (innocent.length > 0) await this.run(innocent);
  }

  /** Records of a transaction refused as a whole for contention: retried in two halves. */
  private halvedContention(entries: PackEntry<P>[], failure: ConsumptionError): void {
    const parts = entries.length > 1 ? halves(entries) : [entries];
    for (const part of parts) {
      const contention = new ContentionError(failure.message, failure.code, this.retryGroup(), { cause: failure });
      for (const entry of part) this.fail(entry, contention);
    }
  }

  private retryGroup(): string {
    return `packed-${++this.retryGroups}`;
  }

  private fail(entry: PackEntry<P>, error: ConsumptionError): void {
    this.settlements[entry.index] = { outcome: 'failed', error };
  }
}
