import type { ConsumerMessage, Settlement } from '../settlement.ts';

/**
 * How a consumer makes its effect exactly-once. The runtime calls `begin` before the business
 * runs (lease mode acquires its lease there), and `commit` with what the business returned
 * (transactional mode writes the dedup record and the declared writes in one transaction
 * there). `abort` runs when the business or the commit failed.
 *
 * One failure contract: every outcome a strategy can explain is a settlement it returns (a
 * duplicate, a conflict, a rejected write, a lease held elsewhere), and contention is a failed
 * settlement whose error is a `ContentionError`, which the runtime retries (the strategy never
 * does). A strategy throws only what it cannot classify (a network error, a bug); the runtime
 * classifies that (`classify`) and fails the record with it.
 */
export interface ConsumptionStrategy<R> {
  /** Shortest lifetime of any record this strategy keeps, in seconds (0 = keeps none). */
  readonly recordTtlSeconds: number;
  /** Proceeds, or settles the record at once (a completed duplicate, a conflict) so the business never runs for it. */
  begin<P>(msg: ConsumerMessage<P>, deadline: number): Promise<BeginResult>;
  commit<P>(msg: ConsumerMessage<P>, result: R): Promise<Settlement>;
  abort<P>(msg: ConsumerMessage<P>, error: unknown): Promise<void>;
  /**
   * Optional batch-level commit (packing): commits the records of one batch together and
   * returns one settlement per record, aligned with `msgs`. The runtime uses it instead of
   * `commit` when present. It never receives two records with one key (in-batch copies are held
   * back as followers), and it must settle every record exactly as `commit` would. One call is
   * one round: records it could not commit for contention come back as `ContentionError`s,
   * and the runtime calls it again with them.
   */
  commitBatch?<P>(msgs: readonly ConsumerMessage<P>[], results: readonly R[]): Promise<Settlement[]>;
}

export type BeginResult = { proceed: true; leaseToken?: number } | { proceed: false; settlement: Settlement };
