/**
 * The consumer runtime's parts behind its door (`./index.ts`), for operations, tools and tests:
 * the engine and its middleware, the strategies and their records, failure routing and counting,
 * the SQS attributes the runtime reads and writes. Production wings (consumers, notifier, infra,
 * bridge) never import it (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */

export { mapLimit, sleep } from './concurrency.ts';
export { ConsumerEngine, type ConsumerEngineOptions } from './consumer-engine.ts';
export type { ConsumptionMode } from './consumption-mode.ts';
export {
  ContentionError,
  classify,
  type FailureClass,
  HeldBackError,
  invalidEnvelope,
  LeaseHeldError,
  PastRedriveHorizonError,
  PayloadConflictError,
  UnauthenticatedMessageError,
  UndeclaredPublicationError,
  UnsubscribedTopicError,
  WriteRejectedError,
} from './failures/errors.ts';
export { FailureCounter, type FailureCounterOptions } from './failures/failure-counter.ts';
export { DEAD_LETTER_ATTRIBUTES, FailureRouter, type FailureRouterOptions } from './failures/failure-router.ts';
export { LeaseLostError, type LeaseOptions, leaseStrategy } from './idempotency/lease.ts';
export {
  type OutboxOptions,
  outboxItemOf,
  outboxPut,
  outboxWrites,
  withOutboxWrites,
} from './idempotency/outbox-writes.ts';
export {
  MAX_TRANSACTION_ACTIONS,
  type PackedTransactionalOptions,
  packedTransactionalStrategy,
} from './idempotency/packed-transactional.ts';
export { canonicalJson, type DedupRecord, fingerprintOf, RecordOrigin, RecordStatus } from './idempotency/record.ts';
export { stateTransitionStrategy } from './idempotency/state-transition.ts';
export type { BeginResult, ConsumptionStrategy } from './idempotency/strategy.ts';
export {
  dedupRecordPut,
  type TransactItem,
  type TransactionalOptions,
  transactionalStrategy,
} from './idempotency/transactional.ts';
export { type ConsumerRuntimeConfig, consumerConfigFromEnv, type TablesOf } from './lambda/consumer-config.ts';
export { consumerTelemetry } from './lambda/consumer-telemetry.ts';
export { lazyHandler } from './lambda/define-consumer.ts';
export { type ConsumerInternal, consumerHandler, rocketmqConsumer } from './lambda/middleware.ts';
export type {
  ResultOf,
  StrategyFactory,
  StrategyName,
  StrategyResults,
  StrategyWiring,
} from './lambda/strategy-wiring.ts';
export type { BatchResult, Business, Disposition, DuplicateReason } from './settlement.ts';
export { messageGroupOf, REDRIVE_COUNT_ATTRIBUTE, receiveCountOf, redriveCountOf } from './sqs-attributes.ts';
export { type ContentionPolicy, commitRetryingContention } from './steps/contention.ts';
export type { ReportObserver } from './steps/report.ts';
