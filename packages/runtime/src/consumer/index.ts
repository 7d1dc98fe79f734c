/**
 * The consumer runtime: what a team uses to run a RocketMQ consumer group on Lambda with
 * exactly-once effects. Import from here, never from the modules behind it (a test in
 * packages/tools/test/unit/house-rules/wing-boundaries.test.ts holds every other folder to that).
 *
 *   export const consumer = defineConsumer(entry, { parsePayload, keyOf, business });   // the entry names the strategy
 *   export const handler = consumer.handler;
 *
 * Its parts: the engine (`ConsumerEngine`: prepare → settle → route) and one runner per
 * consumption mode (`runners/`), idempotency (`idempotency/`: records and strategies),
 * failures (`failures/`: classification, routing, orderly failure counts), and the Lambda
 * side (`lambda/`: the Middy middleware, logs and metrics, configuration, the wiring).
 */

export { mapLimit, sleep } from './concurrency.ts';
export { ConsumerEngine, type ConsumerEngineOptions } from './consumer-engine.ts';
export {
  ConsumptionError,
  ContentionError,
  classify,
  type FailureClass,
  HeldBackError,
  IllegalTransitionError,
  InvalidConsumerConfigError,
  InvalidPayloadError,
  invalidEnvelope,
  LeaseHeldError,
  NotYetApplicableError,
  PastRedriveHorizonError,
  PayloadConflictError,
  PermanentFailureError,
  TransientFailureError,
  UnauthenticatedMessageError,
  UnsubscribedTopicError,
  WriteRejectedError,
} from './failures/errors.ts';
export { FailureCounter, type FailureCounterOptions } from './failures/failure-counter.ts';
export {
  DEAD_LETTER_ATTRIBUTES,
  FailureRouter,
  type FailureRouterOptions,
  REDRIVE_COUNT_ATTRIBUTE,
} from './failures/failure-router.ts';
export { LeaseLostError, type LeaseOptions, leaseStrategy } from './idempotency/lease.ts';
export {
  type PackedTransactionalOptions,
  packedTransactionalStrategy,
} from './idempotency/packed-transactional.ts';
export { canonicalJson, type DedupRecord, fingerprintOf, RecordOrigin, RecordStatus } from './idempotency/record.ts';
export { stateTransitionStrategy, type TransitionRequest } from './idempotency/state-transition.ts';
export type { BeginResult, ConsumptionStrategy } from './idempotency/strategy.ts';
export {
  type DeclaredWrite,
  dedupRecordPut,
  type TransactItem,
  type TransactionalOptions,
  type TransactionalResult,
  transactionalStrategy,
} from './idempotency/transactional.ts';
export { identifier, parseJsonPayload, userIdSchema } from './json-payload.ts';
export {
  type ConsumerRuntimeConfig,
  consumerConfigFromEnv,
  lazyHandler,
  type TablesOf,
} from './lambda/consumer-config.ts';
export { type ConsumerHandler, type ConsumerHandlerOptions, consumerHandler } from './lambda/consumer-handler.ts';
export { consumerTelemetry } from './lambda/consumer-telemetry.ts';
export {
  type ConsumerConfig,
  type ConsumerModule,
  type ConsumerObservers,
  type ConsumerSpec,
  type ConsumerWiring,
  defineConsumer,
} from './lambda/define-consumer.ts';
export {
  type ConsumerInternal,
  type RocketMQConsumerOptions,
  rocketmqConsumer,
} from './lambda/middleware.ts';
export type {
  ResultOf,
  StrategyFactory,
  StrategyName,
  StrategyResults,
  StrategyWiring,
} from './lambda/strategy-wiring.ts';
export { messageGroupOf, messageGroups } from './runners/message-groups.ts';
export type {
  BatchResult,
  Business,
  ConsumerMessage,
  Disposition,
  DuplicateReason,
  Invocation,
  RecordReport,
  Settlement,
} from './settlement.ts';
export { type ContentionPolicy, commitRetryingContention } from './steps/contention.ts';
export type { ReportObserver } from './steps/report.ts';
