import {
  ChangeMessageVisibilityBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEAD_LETTER_ATTRIBUTES, REDRIVE_COUNT_ATTRIBUTE } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { OUTBOX_NOTICE_REASON_ATTRIBUTE } from '@rocketmq-lambda/runtime/outbox/index.ts';
import {
  DEAD_LETTER_KIND_ATTRIBUTE,
  type DeadLetterNotice,
  InvalidEnvelopeError,
  NOTICE_REASON_ATTRIBUTE,
  parseEnvelope,
  type RocketMQMessage,
  readNotice,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type LetterKind, letterKindOf, noticeReasonText } from './dead-letter-kind.ts';
import {
  OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE,
  type OutboxLetter,
  outboxLetterOf,
  outboxLetterReason,
} from './outbox-letters.ts';

/** Attributes `ops dlq redrive` puts on a message it sends back, so a second trip is visible. */
export const REDRIVE_ATTRIBUTES = {
  from: 'redriven-from-dlq',
  count: REDRIVE_COUNT_ATTRIBUTE,
  at: 'redriven-at',
} as const;

/** Why a message is in the DLQ, as the failure router recorded it. */
export interface FailureDetails {
  code?: string;
  classification?: string;
  reason?: string;
  group?: string;
  msgId?: string;
  key?: string;
  attempt?: number;
  sourceQueue?: string;
  deadLetteredAt?: string;
  /** When SQS took the record into the source queue (set when the letter had room for it). */
  sourceSentAt?: string;
}

/** One dead-lettered message, decoded for a person. */
export interface DeadLetter {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** Who put it in the DLQ: the failure router, SQS's redrive policy, or the bridge (a notice without body). */
  kind: LetterKind;
  /** The bridge's notice: its own reason and where the body still is in RocketMQ. */
  notice: DeadLetterNotice | undefined;
  /** A letter of the outbox's queues: the relay's notice, the mapping's on-failure record, the bridge's outbound refusal. */
  outbox: OutboxLetter | undefined;
  /** Router attributes, or `undefined` when SQS's redrive policy moved the message. */
  failure: FailureDetails | undefined;
  /** One line: the router's code and reason, the notice's reason, or why there is none. */
  reasonText: string;
  /** The decoded RocketMQ message, when the body is an envelope. */
  envelope: RocketMQMessage | undefined;
  /** Why the body is not an envelope (it is still listed, shown raw). */
  envelopeError: string | undefined;
  /** When it became a dead letter: the router's timestamp, else when it was first sent. */
  deadLetteredAt: Date | undefined;
  /** Receives of this copy, including those made by `ops dlq` itself. */
  receiveCount: number;
  /** How often `ops dlq redrive` has already sent this message back. */
  redriveCount: number;
  /** Message attributes other than the router's and the notice's (producer attributes, redrive marks). */
  otherAttributes: Record<string, string>;
}

const FAILURE_NAMES = new Set<string>(Object.values(DEAD_LETTER_ATTRIBUTES));
const DESCRIBED_NAMES = new Set<string>([
  ...FAILURE_NAMES,
  DEAD_LETTER_KIND_ATTRIBUTE,
  NOTICE_REASON_ATTRIBUTE,
  OUTBOX_NOTICE_REASON_ATTRIBUTE,
  OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE,
]);

/** Decodes one received SQS message. `maxReceiveCount` words the reason of redrive-policy moves. */
export function decodeDeadLetter(message: Message, maxReceiveCount?: number): DeadLetter {
  const attributes = Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, value.StringValue ?? '']),
  );
  const failure = failureOf(attributes);
  const body = message.Body ?? '';
  let envelope: RocketMQMessage | undefined;
  let envelopeError: string | undefined;
  try {
    envelope = parseEnvelope(body);
  } catch (error) {
    if (!(error instanceof InvalidEnvelopeError)) throw error;
    envelopeError = error.reason;
  }
  const sent = Number(message.Attributes?.SentTimestamp);
  const routed = failure?.deadLetteredAt ? new Date(failure.deadLetteredAt) : undefined;
  // An outbound refusal carries the bridge's reason attribute too, but its body is the whole relayed message.
  const outbox = outboxLetterOf(body, attributes, envelope);
  const notice = outbox ? undefined : readNotice(body, attributes);
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body,
    kind: letterKindOf(failure !== undefined, notice, outbox),
    notice,
    outbox,
    failure,
    reasonText: notice
      ? noticeReasonText(notice, failure && reasonTextOf(failure, maxReceiveCount))
      : outbox
        ? outboxLetterReason(outbox)
        : reasonTextOf(failure, maxReceiveCount),
    envelope,
    envelopeError,
    deadLetteredAt:
      routed && !Number.isNaN(routed.getTime())
        ? routed
        : Number.isFinite(sent) && sent > 0
          ? new Date(sent)
          : undefined,
    receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? 0),
    redriveCount: Number(attributes[REDRIVE_ATTRIBUTES.count] ?? 0) || 0,
    otherAttributes: Object.fromEntries(Object.entries(attributes).filter(([name]) => !DESCRIBED_NAMES.has(name))),
  };
}

function failureOf(attributes: Record<string, string>): FailureDetails | undefined {
  if (!Object.keys(attributes).some((name) => FAILURE_NAMES.has(name))) return undefined;
  const a = DEAD_LETTER_ATTRIBUTES;
  const attempt = Number(attributes[a.attempt]);
  return {
    code: attributes[a.code],
    classification: attributes[a.classification],
    reason: attributes[a.reason],
    group: attributes[a.group],
    msgId: attributes[a.msgId],
    key: attributes[a.key],
    attempt: Number.isFinite(attempt) && attributes[a.attempt] !== undefined ? attempt : undefined,
    sourceQueue: attributes[a.sourceQueue],
    deadLetteredAt: attributes[a.deadLetteredAt],
    sourceSentAt: attributes[a.sourceSentAt],
  };
}

function reasonTextOf(failure: FailureDetails | undefined, maxReceiveCount: number | undefined): string {
  if (!failure) {
    // Only SQS moves a message without our attributes: the function kept failing or
    // timing out before the failure router could run (crash, timeout, out of memory).
    const after = maxReceiveCount ? `after ${maxReceiveCount} receives` : 'after maxReceiveCount receives';
    return `reason unknown: moved by redrive policy ${after}`;
  }
  return [failure.code, failure.reason].filter((p) => p !== undefined && p !== '').join(': ') || 'no reason recorded';
}

export interface DeadLetterReadOptions {
  sqs: SQSClient;
  queueUrl: string;
  /**
   * How long each received message stays hidden from other readers. Reading a queue is
   * receiving from it, so keep this short: while hidden, a redrive or another reader
   * cannot see the message. `release` makes it visible again at once.
   */
  visibilityTimeoutSeconds: number;
  /** Stop after this many distinct messages. */
  limit?: number;
  maxReceiveCount?: number;
  /** Long-poll wait per receive: on AWS a short poll may miss messages on other hosts. */
  waitTimeSeconds?: number;
}

/**
 * Receives every message of a DLQ once (up to `limit`), decoded. The messages stay hidden
 * for the visibility timeout; call `releaseDeadLetters` to show them again at once.
 * Stops when a receive brings nothing new: a message seen twice (its visibility ran out
 * during a long read) is listed once.
 */
export async function readDeadLetters(options: DeadLetterReadOptions): Promise<DeadLetter[]> {
  const seen = new Map<string, DeadLetter>();
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  while (seen.size < limit) {
    const batch = await receiveDeadLetters(options.sqs, options.queueUrl, {
      max: Math.min(10, limit - seen.size),
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
      waitTimeSeconds: options.waitTimeSeconds,
    });
    const fresh = batch.filter((m) => !seen.has(m.MessageId!));
    if (fresh.length === 0) break;
    for (const m of fresh) seen.set(m.MessageId!, decodeDeadLetter(m, options.maxReceiveCount));
  }
  return [...seen.values()];
}

export async function receiveDeadLetters(
  sqs: SQSClient,
  queueUrl: string,
  options: { max: number; visibilityTimeoutSeconds: number; waitTimeSeconds?: number },
): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: Math.max(1, Math.min(10, options.max)),
      VisibilityTimeout: options.visibilityTimeoutSeconds,
      WaitTimeSeconds: options.waitTimeSeconds ?? 1,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return Messages;
}

/**
 * Makes received messages visible again at once. Best effort: a message this fails for
 * reappears when its (short) visibility timeout ends anyway.
 */
export async function releaseDeadLetters(
  sqs: SQSClient,
  queueUrl: string,
  letters: readonly Pick<DeadLetter, 'messageId' | 'receiptHandle'>[],
): Promise<void> {
  for (let i = 0; i < letters.length; i += 10) {
    const chunk = letters.slice(i, i + 10);
    try {
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((l, n) => ({ Id: String(n), ReceiptHandle: l.receiptHandle, VisibilityTimeout: 0 })),
        }),
      );
    } catch {
      // see above: the visibility timeout is the fallback
    }
  }
}

/** Finds a letter by SQS message id, RocketMQ msgId (either spelling) or idempotency key. */
export function findDeadLetter(letters: readonly DeadLetter[], id: string): DeadLetter | undefined {
  const upper = id.toUpperCase();
  return (
    letters.find((l) => l.messageId === id) ??
    letters.find((l) => l.envelope?.msgId === upper || l.failure?.msgId?.toUpperCase() === upper) ??
    letters.find((l) => l.failure?.key === id)
  );
}
