/**
 * The consumer middleware's public surface: what a team uses to write a RocketMQ consumer
 * with exactly-once effects. Import from here, not from the modules behind it.
 *
 *   middy<SQSEvent, SQSBatchResponse, Error, ConsumerContext<Order, TransactionalResult>>()
 *     .use(rocketmqConsumer({ group, tagExpression, parsePayload, keyOf, strategy, failures }))
 *     .handler(forEachMessage((msg) => ({ writes: [...] })));
 */

export {
  ConsumptionError,
  classify,
  type FailureClass,
  HeldBackError,
  IllegalTransitionError,
  InvalidConsumerConfigError,
  InvalidMessageError,
  InvalidPayloadError,
  LeaseHeldError,
  NotYetApplicableError,
  PastRedriveHorizonError,
  PayloadConflictError,
  TransientFailureError,
  UnauthenticatedMessageError,
  UnsubscribedTopicError,
  WriteRejectedError,
} from './errors.ts';
export { FailureCounter, type FailureCounterOptions } from './failure-counter.ts';
export {
  DEAD_LETTER_ATTRIBUTES,
  FailureRouter,
  type FailureRouterOptions,
  REDRIVE_COUNT_ATTRIBUTE,
} from './failure-router.ts';
export { type DedupRecord, fingerprintOf, RecordOrigin, RecordStatus, recordId } from './record.ts';
export {
  type BusinessResults,
  type ConsumerContext,
  forEachMessage,
  type RocketMQBatch,
  type RocketMQConsumerOptions,
  rocketmqConsumer,
} from './rocketmq-consumer.ts';
export type { ConsumerMessage, Disposition, DuplicateReason, RecordReport, Settlement } from './settlement.ts';
export { LeaseLostError, type LeaseOptions, leaseStrategy } from './strategies/lease.ts';
export { type PackedTransactionalOptions, packedTransactionalStrategy } from './strategies/packed-transactional.ts';
export { stateTransitionStrategy, type TransitionRequest } from './strategies/state-transition.ts';
export {
  type DeclaredWrite,
  type TransactItem,
  type TransactionalOptions,
  type TransactionalResult,
  transactionalStrategy,
} from './strategies/transactional.ts';
export type { BeginResult, ConsumptionStrategy } from './strategy.ts';
