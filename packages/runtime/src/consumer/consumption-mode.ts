import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { assertOrderingFits, type DeliveryLifetimes, type Ordering } from '../config/index.ts';
import { InvalidConsumerConfigError, refusedAsConfig } from './failures/errors.ts';
import { FailureCounter } from './failures/failure-counter.ts';
import type { ConsumptionStrategy } from './idempotency/strategy.ts';
import { consumeConcurrently } from './runners/concurrent.ts';
import { consumeInGroups } from './runners/orderly.ts';
import { consumePacked } from './runners/packed.ts';
import { messageGroupOf } from './sqs-attributes.ts';
import type { BatchState } from './steps/batch-state.ts';
import type { ConsumerSetup } from './steps/consumer-setup.ts';

/** Settles every message of a prepared batch. */
export type Runner = <P, R>(setup: ConsumerSetup<P, R>, batch: BatchState<P>) => Promise<void>;

/**
 * How a group consumes, chosen once, at construction, from its ordering and its strategy: the
 * runner that settles its batches, how a message's attempt is counted, and what it refuses.
 *
 *   mode        runner                                       attempt                     refuses
 *   concurrent  each key on its own                          SQS receive count           -
 *   packed      every key, committed together                SQS receive count           -
 *   orderly     by message group, one record at a time       the message's own failures  packing, no table to count in
 *
 * Whatever the mode, a batch of FIFO records is consumed one record of a message group at a time.
 */
export interface ConsumptionMode {
  readonly name: 'concurrent' | 'packed' | 'orderly';
  readonly run: Runner;
  /** Orderly: where each message's failures are counted, its attempt; without one, SQS's receive count is. */
  readonly counter?: FailureCounter;
}

/** What the mode is chosen from: the engine's options. */
export interface ModeChoice<R> {
  readonly group: string;
  readonly ordering?: Ordering;
  readonly strategy: ConsumptionStrategy<R>;
  readonly failureCounts?: { client: DynamoDBDocumentClient; tableName: string; recordIdPrefix: string };
  readonly now?: () => number;
}

export function consumptionModeOf<R>(choice: ModeChoice<R>, lifetimes: DeliveryLifetimes): ConsumptionMode {
  if (choice.ordering === 'orderly') return orderlyMode(choice, lifetimes);
  if (choice.strategy.commitBatch) return { name: 'packed', run: byGroupOr(consumePacked) };
  return { name: 'concurrent', run: byGroupOr(consumeConcurrently) };
}

const byGroupOr =
  (runner: Runner): Runner =>
  (setup, batch) =>
    (batch.records.some((r) => messageGroupOf(r) !== undefined) ? consumeInGroups : runner)(setup, batch);

/** Counts each message's failures; refused without a table to count in, or with packing (config's one wording). */
function orderlyMode<R>(choice: ModeChoice<R>, lifetimes: DeliveryLifetimes): ConsumptionMode {
  if (!choice.failureCounts)
    throw new InvalidConsumerConfigError(
      `consumer group ${choice.group}: ordering is 'orderly' but no failureCounts table is given: an orderly group's attempt is its message's own failure count`,
    );
  refusedAsConfig(() =>
    assertOrderingFits(choice.group, 'orderly', { packing: choice.strategy.commitBatch !== undefined }),
  );
  const counter = new FailureCounter({
    ...choice.failureCounts,
    group: choice.group,
    ttlSeconds: lifetimes.failureCountTtlSeconds,
    now: choice.now,
  });
  return { name: 'orderly', run: consumeInGroups, counter };
}
