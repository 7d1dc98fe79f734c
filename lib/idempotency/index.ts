/**
 * The consumer middleware's public surface: what a team uses to write a RocketMQ consumer
 * with exactly-once effects. Import from here, not from the modules behind it.
 *
 *   middy<SQSEvent, SQSBatchResponse, Error, ConsumerContext<Order, TransactionalResult>>()
 *     .use(rocketmqConsumer({ group, tagExpression, parsePayload, keyOf, strategy, failures }))
 *     .handler(forEachMessage((msg) => ({ writes: [...] })));
 */
export {
  forEachMessage,
  rocketmqConsumer,
  type BusinessResults,
  type ConsumerContext,
  type RocketMQBatch,
  type RocketMQConsumerOptions,
} from './rocketmq-consumer.ts';
export type { ConsumerMessage, Disposition, DuplicateReason, RecordReport, Settlement } from './settlement.ts';
export type { BeginResult, ConsumptionStrategy } from './strategy.ts';
export { FailureRouter, DEAD_LETTER_ATTRIBUTES, REDRIVE_COUNT_ATTRIBUTE, type FailureRouterOptions } from './failure-router.ts';
export { FailureCounter, type FailureCounterOptions } from './failure-counter.ts';
export { transactionalStrategy, type DeclaredWrite, type TransactionalOptions, type TransactionalResult, type TransactItem } from './strategies/transactional.ts';
export { packedTransactionalStrategy, type PackedTransactionalOptions } from './strategies/packed-transactional.ts';
export { leaseStrategy, LeaseLostError, type LeaseOptions } from './strategies/lease.ts';
export { stateTransitionStrategy, type TransitionRequest } from './strategies/state-transition.ts';
export { RecordStatus, fingerprintOf, recordId, type DedupRecord } from './record.ts';
export {
  ConsumptionError,
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
  classify,
  type FailureClass,
} from './errors.ts';
