import type { Tracer } from '@opentelemetry/api';
import type { RocketMQMessage, SigningKeyRing, TagExpression } from '../../rocketmq/index.ts';
import type { FailureCounter } from '../failures/failure-counter.ts';
import type { FailureRouter } from '../failures/failure-router.ts';
import type { ConsumptionStrategy } from '../idempotency/strategy.ts';
import type { Business } from '../settlement.ts';
import type { ContentionPolicy } from './contention.ts';

/**
 * A consumer group's runtime as its steps read it: the engine's options with their defaults
 * applied and their checks passed, built once at start-up (`ConsumerEngine`) and passed to
 * every step, never captured by one.
 */
export interface ConsumerSetup<P, R> {
  readonly group: string;
  /** The topic the group subscribes to; without one, no topic is judged. */
  readonly topic?: string;
  readonly tags: TagExpression;
  /** Envelopes stored longer ago than this are refused: their dedup records may have expired. */
  readonly horizonSeconds: number;
  readonly parsePayload: (body: string, message: RocketMQMessage) => P;
  readonly keyOf: (payload: P) => string;
  readonly fingerprintFields: (payload: P) => unknown;
  /** The keys the bridge may have signed with: every envelope must carry its signature. */
  readonly envelopeKeys: SigningKeyRing;
  readonly strategy: ConsumptionStrategy<R>;
  readonly business: Business<P, R>;
  readonly failures: FailureRouter;
  /** Orderly groups: each message's own failure count, its attempt number. */
  readonly counter?: FailureCounter;
  /** Records settled at once (distinct keys only); FIFO batches: message groups at once. */
  readonly concurrency: number;
  readonly contention: ContentionPolicy;
  /** Makes each record's span when given; without one the runtime makes no span at all (tracing off). */
  readonly tracer?: Tracer;
  readonly now: () => number;
}
