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
  PayloadConflictError,
  TransientFailureError,
  UnauthenticatedMessageError,
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
export { type PackedTransactionalOptions, packedTransactionalStrategy } from './idempotency/packed-transactional.ts';
export { type DedupRecord, fingerprintOf, RecordStatus, recordId } from './idempotency/record.ts';
export { stateTransitionStrategy, type TransitionRequest } from './idempotency/state-transition.ts';
export type { BeginResult, ConsumptionStrategy } from './idempotency/strategy.ts';
export {
  type DeclaredWrite,
  type TransactItem,
  type TransactionalOptions,
  type TransactionalResult,
  transactionalStrategy,
} from './idempotency/transactional.ts';
export {
  type BusinessResults,
  type ConsumerContext,
  forEachMessage,
  type RocketMQBatch,
  type RocketMQConsumerOptions,
  rocketmqConsumer,
} from './rocketmq-consumer.ts';
export type { ConsumerMessage, Disposition, DuplicateReason, RecordReport, Settlement } from './settlement.ts';
