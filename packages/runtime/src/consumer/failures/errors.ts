import { IncoherentLifetimesError } from '../../config/index.ts';
import { InvalidEnvelopeError } from '../../rocketmq/index.ts';

/**
 * Every failure of a record is a `ConsumptionError` with a classification that decides
 * its fate: `transient` is retried on RocketMQ's schedule, `permanent` goes straight to
 * the group's DLQ with its reason (retrying cannot fix it, and 16 retries over almost
 * five hours would only delay the person who must look at it).
 */
export type FailureClass = 'transient' | 'permanent';

export abstract class ConsumptionError extends Error {
  abstract readonly classification: FailureClass;
  /** Stable, machine-readable reason: DLQ attribute, metric and log field. */
  abstract readonly code: string;
  /**
   * Epoch ms before which a retry is pointless (a lease held elsewhere); the schedule's delay is stretched to reach it.
   */
  get retryNotBefore(): number | undefined {
    return undefined;
  }
}

/** The envelope parsed but the business body is unusable (bad JSON, missing or invalid fields). */
export class InvalidPayloadError extends ConsumptionError {
  override readonly name = 'InvalidPayloadError';
  readonly classification = 'permanent';
  readonly code = 'INVALID_PAYLOAD';
}

/**
 * The envelope is unsigned, or signed with no key the consumer holds: it did not come from the
 * bridge (someone sent it straight to the queue or the bus, or invoked the function directly).
 */
export class UnauthenticatedMessageError extends ConsumptionError {
  override readonly name = 'UnauthenticatedMessageError';
  readonly classification = 'permanent';
  readonly code = 'UNAUTHENTICATED_MESSAGE';
}

/**
 * A signed envelope of a topic the consumer group does not subscribe to: a route or a sender
 * put it on the wrong queue. Acting on it would apply another topic's body as this group's business.
 */
export class UnsubscribedTopicError extends ConsumptionError {
  override readonly name = 'UnsubscribedTopicError';
  readonly classification = 'permanent';
  readonly code = 'UNSUBSCRIBED_TOPIC';
}

/**
 * A signed envelope stored longer ago than the group's redrive horizon: the dedup record its first
 * delivery wrote may have expired, so this copy cannot be told from a new message.
 */
export class PastRedriveHorizonError extends ConsumptionError {
  override readonly name = 'PastRedriveHorizonError';
  readonly classification = 'permanent';
  readonly code = 'PAST_REDRIVE_HORIZON';
}

/** The same business key arrived with different business content: someone must decide which is right. */
export class PayloadConflictError extends ConsumptionError {
  override readonly name = 'PayloadConflictError';
  readonly classification = 'permanent';
  readonly code = 'PAYLOAD_CONFLICT';
  constructor(
    readonly key: string,
    readonly existingFingerprint: string,
    readonly fingerprint: string,
    readonly existingMsgId: string | undefined,
  ) {
    super(`key ${key} was first consumed with different content (msgId ${existingMsgId ?? 'unknown'})`);
  }
}

/** Another invocation holds a live lease on this key; try again after the lease ends. */
export class LeaseHeldError extends ConsumptionError {
  override readonly name = 'LeaseHeldError';
  readonly classification = 'transient';
  readonly code = 'LEASE_HELD';
  constructor(
    readonly key: string,
    readonly leaseUntil: number,
  ) {
    super(`key ${key} is being processed by another invocation until ${new Date(leaseUntil).toISOString()}`);
  }

  // Retrying before the holder's lease ends would only find it held again and spend an attempt.
  override get retryNotBefore(): number {
    return this.leaseUntil;
  }
}

/** A state transition the business does not allow (e.g. FINISHED for an unpaid order). */
export class IllegalTransitionError extends ConsumptionError {
  override readonly name = 'IllegalTransitionError';
  readonly classification = 'permanent';
  readonly code = 'ILLEGAL_TRANSITION';
}

/** The business precondition is not met yet (e.g. the order does not exist yet): retry later. */
export class NotYetApplicableError extends ConsumptionError {
  override readonly name = 'NotYetApplicableError';
  readonly classification = 'transient';
  readonly code = 'NOT_YET_APPLICABLE';
}

/** A declared write's condition failed and the business did not say that means "already done". */
export class WriteRejectedError extends ConsumptionError {
  override readonly name = 'WriteRejectedError';
  readonly classification = 'permanent';
  readonly code = 'WRITE_REJECTED';
}

/**
 * The business returned an outgoing message its catalogue entry does not declare (`publishes`): a topic
 * or tag nobody was told to expect, whose relay has no route. Nothing of the record is written (its
 * effect without its message would be half a commit), and retrying returns the same message.
 */
export class UndeclaredPublicationError extends ConsumptionError {
  override readonly name = 'UndeclaredPublicationError';
  readonly classification = 'permanent';
  readonly code = 'UNDECLARED_PUBLICATION';
}

/**
 * Not attempted: an earlier message of its FIFO message group failed in this batch and is
 * retried first. Returned to the queue unprocessed; not a failure of its own, so not counted.
 */
export class HeldBackError extends ConsumptionError {
  override readonly name = 'HeldBackError';
  readonly classification = 'transient';
  readonly code = 'HELD_BACK';
  constructor(
    readonly messageGroupId: string,
    readonly blockedBy: string,
  ) {
    super(
      `message group ${messageGroupId} waits for its earlier message ${blockedBy}, which failed and is retried first`,
    );
  }
}

/** Anything else: throttling, timeouts, 5xx, transaction conflicts, a failing downstream service. */
export class TransientFailureError extends ConsumptionError {
  override readonly name = 'TransientFailureError';
  readonly classification = 'transient';
  readonly code: string;
  constructor(message: string, code = 'TRANSIENT', options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** A permanent failure known by its code alone (an envelope the parser refused: `invalidEnvelope`). */
export class PermanentFailureError extends ConsumptionError {
  override readonly name = 'PermanentFailureError';
  readonly classification = 'permanent';
  readonly code: string;
  constructor(message: string, code: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/**
 * Refused because other writes held the same items at that moment: a transaction cancelled by
 * `TransactionConflict`, or a packed transaction throttled as a whole after the SDK's own retries.
 * Nothing was written, and the same write a moment later usually succeeds, so the runtime retries
 * it within the invocation (packages/runtime/src/consumer/steps/contention.ts, the one place that does) before the
 * record fails as transient. A strategy says what is contention by returning this error; records
 * with the same `retryTogether` go back in one commit (records that share a hot item would only
 * conflict with each other apart).
 */
export class ContentionError extends ConsumptionError {
  override readonly name = 'ContentionError';
  readonly classification = 'transient';
  readonly code: string;
  constructor(
    message: string,
    code: string,
    readonly retryTogether?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.code = code;
  }
}

/**
 * An envelope the bridge did not write, or wrote for another reader. One concept, one name per
 * layer: packages/runtime/src/rocketmq's parser throws `InvalidEnvelopeError` (why the text is not an envelope);
 * the consumer knows it by its code, `INVALID_ENVELOPE`, which dead letters and alarms carry.
 * Whatever the parser throws is taken as this: no retry turns an unreadable envelope into one.
 */
export function invalidEnvelope(parserError: unknown): ConsumptionError {
  const reason = parserError instanceof InvalidEnvelopeError ? parserError.message : String(parserError);
  return new PermanentFailureError(reason, 'INVALID_ENVELOPE', { cause: parserError });
}

/** The middleware's configuration cannot work; thrown at start-up, never per record. */
export class InvalidConsumerConfigError extends Error {
  override readonly name = 'InvalidConsumerConfigError';
}

/** Runs one of config's coherence checks: what it refuses is refused as the consumer's configuration, `prefix` first. */
export function refusedAsConfig<T>(check: () => T, prefix = ''): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof IncoherentLifetimesError)) throw error;
    throw new InvalidConsumerConfigError(`${prefix}${error.message}`, { cause: error });
  }
}

/** Errors the AWS SDK raises for conditions that pass by themselves. */
const TRANSIENT_AWS_ERRORS = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionInProgressException',
  'TimeoutError',
  'RequestTimeout',
]);

/**
 * Maps any thrown value to a classified `ConsumptionError`; unknown errors are transient (retrying is the safe
 * default).
 */
export function classify(error: unknown): ConsumptionError {
  if (error instanceof ConsumptionError) return error;
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  if (TRANSIENT_AWS_ERRORS.has(name)) return new TransientFailureError(message, name, { cause: error });
  return new TransientFailureError(`${name}: ${message}`, 'UNEXPECTED_ERROR', { cause: error });
}
