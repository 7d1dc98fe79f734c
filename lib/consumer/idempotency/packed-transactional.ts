import { type CancellationReason, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { jitter, mapLimit, sleep as wait } from '../concurrency.ts';
import { type ConsumptionError, classify, TransientFailureError } from '../failures/errors.ts';
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
  pack,
} from './transaction-packing.ts';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  dedupRecordPut,
  explainCancellation,
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
  /**
   * Rounds of split-and-retry after `TransactionConflict` or throttling before a record fails; default 3 (the
   * middleware's default).
   */
  contentionRetries?: number;
  /** Base of the exponential backoff between those rounds; default 25 ms, jittered. */
  backoffMs?: number;
  /** Transactions of one batch in flight at once (only batches beyond one transaction have more). Default 4. */
  concurrency?: number;
  sleep?: (ms: number) => Promise<void>;
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
 * they touch are split and retried with exponential backoff, and fail as transient (the
 * same outcome as per-record mode) when the retries are spent.
 */
export function packedTransactionalStrategy(
  options: PackedTransactionalOptions,
): ConsumptionStrategy<TransactionalResult> {
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
    async commitBatch<P>(
      msgs: readonly ConsumerMessage<P>[],
      results: readonly TransactionalResult[],
    ): Promise<Settlement[]> {
      const settlements: Settlement[] = new Array(msgs.length);
      const entries: PackEntry<P>[] = msgs.map((msg, index) => ({ index, msg, result: results[index]! }));

      const fail = (entry: PackEntry<P>, error: ConsumptionError) => {
        settlements[entry.index] = { outcome: 'failed', error };
      };

      /** Commits `batch`: packs it, sends the transactions, and follows up until every record is settled. */
      const run = async (batch: PackEntry<P>[], attempt: number): Promise<void> => {
        const transactions = pack(batch, {
          maxActions,
          maxBytes,
          identify,
          dedupPut: (m) => dedupRecordPut(m, options, ttlSeconds, now()),
        });
        await mapLimit(transactions, concurrency, (tx) => send(tx, attempt));
      };

      const send = async (tx: PackedTransaction<P>, attempt: number): Promise<void> => {
        try {
          await options.client.send(new TransactWriteCommand({ TransactItems: tx.actions.map((a) => a.item) }));
          for (const entry of tx.entries) settlements[entry.index] = { outcome: 'processed' };
          return;
        } catch (error) {
          if (
            error instanceof TransactionCanceledException &&
            error.CancellationReasons?.length === tx.actions.length
          ) {
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
      const explain = async (
        tx: PackedTransaction<P>,
        reasons: CancellationReason[],
        attempt: number,
        error: unknown,
      ) => {
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
              settlements[entry.index] = explainCancellation(
                entry.msg,
                entry.result,
                slots.map((action) => reasons[action] ?? {}),
              );
            } catch (explained) {
              fail(entry, classify(explained));
            }
          }
        }
        if (innocent.length === tx.entries.length) {
          // Cancelled with nothing to blame: retry as contention so the loop spends its budget and ends.
          return retryContended(innocent, attempt, classify(error), true);
        }
        const failure = new TransientFailureError(
          `transaction cancelled: ${reasons.map((r) => r.Code ?? 'None').join(', ')}`,
          contendedCode(reasons),
        );
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
      const retryContended = async (
        batch: PackEntry<P>[],
        attempt: number,
        failure: ConsumptionError,
        halve: boolean,
      ): Promise<void> => {
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
      for (const entry of entries)
        settlements[entry.index] ??= {
          outcome: 'failed',
          error: new TransientFailureError(`record ${entry.msg.key} was not settled by packing`, 'PACKING_UNSETTLED'),
        };
      return settlements;
    },
  };
}
