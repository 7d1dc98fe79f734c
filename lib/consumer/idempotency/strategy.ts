import type { ConsumerMessage, Settlement } from '../settlement.ts';

/**
 * How a consumer makes its effect exactly-once. The middleware calls `begin` before the
 * business runs (lease mode acquires its lease there), and `commit` with what the
 * business returned (transactional mode writes the dedup record and the declared writes
 * in one transaction there). `abort` runs when the business threw.
 *
 * `begin` may settle a record on its own (a completed duplicate, a conflict) so the
 * business is never called for it.
 */
export interface ConsumptionStrategy<R> {
  /** Shortest lifetime of any record this strategy keeps, in seconds (0 = keeps none). */
  readonly recordTtlSeconds: number;
  begin<P>(msg: ConsumerMessage<P>, deadline: number): Promise<BeginResult>;
  commit<P>(msg: ConsumerMessage<P>, result: R): Promise<Settlement>;
  abort<P>(msg: ConsumerMessage<P>, error: unknown): Promise<void>;
  /**
   * Optional batch-level commit (packing): commits the records of one batch together and
   * returns one settlement per record, aligned with `msgs`. The middleware uses it instead
   * of `commit` when present. It never receives two records with one key (in-batch copies
   * are held back as followers), and it must settle every record exactly as `commit` would.
   */
  commitBatch?<P>(msgs: readonly ConsumerMessage<P>[], results: readonly R[]): Promise<Settlement[]>;
}

export type BeginResult = { proceed: true; leaseToken?: number } | { proceed: false; settlement: Settlement };
