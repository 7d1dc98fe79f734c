/**
 * Every way relaying one outbox item can fail, as a `RelayError` whose classification decides the
 * item's fate:
 * - `transient` (a throttled or unreachable target, a mark that did not land): the record is reported
 *   in `batchItemFailures`, and so is every later record of its message group in the batch; the stream
 *   hands them back in order.
 * - `permanent` (the target refuses the message, the topic has no target, the item is unreadable):
 *   the item is marked FAILED with the reason and a notice goes to the relay's DLQ; the stream moves
 *   on. `ops outbox redrive` sets it back to PENDING once the cause is fixed.
 */
export type RelayFailureClass = 'transient' | 'permanent';

export abstract class RelayError extends Error {
  abstract readonly classification: RelayFailureClass;
  /** Stable, machine-readable reason: log field, metric, the FAILED item's and the notice's reason. */
  abstract readonly code: string;
}

/** The target did not take the message this time (throttled, unavailable, a network fault): try again. */
export class TargetUnavailableError extends RelayError {
  override readonly name = 'TargetUnavailableError';
  readonly classification = 'transient';
  readonly code = 'TARGET_UNAVAILABLE';
}

/** The message was sent but the item could not be marked RELAYED: the stream hands it back and it is sent again. */
export class MarkFailedError extends RelayError {
  override readonly name = 'MarkFailedError';
  readonly classification = 'transient';
  readonly code = 'MARK_FAILED';
}

/** The target refuses the message itself (too large, invalid): sending it again cannot help. */
export class TargetRefusedError extends RelayError {
  override readonly name = 'TargetRefusedError';
  readonly classification = 'permanent';
  readonly code = 'TARGET_REFUSED';
}

/** The topic has no place in `OUTBOX_TARGETS`: the relay was deployed without it (the cold start refuses that). */
export class NoRelayTargetError extends RelayError {
  override readonly name = 'NoRelayTargetError';
  readonly classification = 'permanent';
  readonly code = 'NO_RELAY_TARGET';
}

/** A PENDING image that is no outbox item the relay can send (a field missing, no envelope can be built of it). */
export class UnreadableOutboxItemError extends RelayError {
  override readonly name = 'UnreadableOutboxItemError';
  readonly classification = 'permanent';
  readonly code = 'UNREADABLE_ITEM';
}

/** The relay's deployment is incomplete: refused at cold start, naming the variable. */
export class InvalidRelayConfigError extends Error {
  override readonly name = 'InvalidRelayConfigError';
}

/**
 * Error names AWS answers when the request itself is wrong: SQS's and EventBridge's for a message
 * too large or malformed, a queue or bus that does not exist. Everything else (throttling,
 * 5xx, network, access denied while a policy is being fixed) is worth another try.
 */
const REFUSALS = new Set([
  'InvalidMessageContents',
  'InvalidParameterValue',
  'InvalidParameterValueException',
  'InvalidAttributeValue',
  'InvalidAttributeName',
  'MessageTooLong',
  'BatchRequestTooLong',
  'RequestEntityTooLarge',
  'ValidationException',
  'ValidationError',
  'InvalidArgument',
  'MalformedDetail',
  'QueueDoesNotExist',
  'AWS.SimpleQueueService.NonExistentQueue',
  'ResourceNotFoundException',
]);

/** A target's error (an SDK exception, a PutEvents entry's code) as the relay's class. */
export function classifyTargetError(name: string | undefined, message: string, cause?: unknown): RelayError {
  const reason = `${name ?? 'Error'}: ${message}`.slice(0, 1000);
  return name !== undefined && REFUSALS.has(name)
    ? new TargetRefusedError(reason, { cause })
    : new TargetUnavailableError(reason, { cause });
}

/** Any thrown value as a relay error: one already classified stays as it is. */
export function asRelayError(error: unknown): RelayError {
  if (error instanceof RelayError) return error;
  const e = error as { name?: string; message?: string };
  return classifyTargetError(e?.name, e?.message ?? String(error), error);
}
