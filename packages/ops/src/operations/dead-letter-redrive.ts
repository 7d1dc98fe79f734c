import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  type Message,
  type MessageAttributeValue,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { sqsText } from '@rocketmq-lambda/runtime/aws/index.ts';
import { DEAD_LETTER_ATTRIBUTES } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import {
  DEAD_LETTER_KIND_ATTRIBUTE,
  excerpt,
  type MessageGroupSource,
  messageGroupFactsOf,
  messageGroupOf,
  NOTICE_REASON_ATTRIBUTE,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import {
  type DeadLetter,
  decodeDeadLetter,
  REDRIVE_ATTRIBUTES,
  receiveDeadLetters,
  releaseDeadLetters,
} from './dead-letter-inspection.ts';
import { noticeRedriveRefusal } from './dead-letter-kind.ts';
import { messageOf, OperationsError } from './errors.ts';
import { OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE, outboxLetterRefusal } from './outbox-letters.ts';

/** Which dead letters to send back. Empty lists and absent bounds match everything. */
export interface RedriveFilter {
  /** A failure code (exact, any case) or words of the reason; `unknown` matches redrive-policy moves. */
  reasons?: readonly string[];
  /** An idempotency key, a RocketMQ key of the envelope, or a RocketMQ msgId. */
  keys?: readonly string[];
  /** Dead-lettered at least this long ago. */
  olderThanMs?: number;
  /** Dead-lettered at most this long ago. */
  newerThanMs?: number;
}

export function matchesFilter(letter: DeadLetter, filter: RedriveFilter, now: Date): boolean {
  if (filter.reasons?.length) {
    const code = letter.failure?.code?.toLowerCase();
    const text = letter.reasonText.toLowerCase();
    if (!filter.reasons.some((r) => code === r.toLowerCase() || text.includes(r.toLowerCase()))) return false;
  }
  if (filter.keys?.length) {
    const ids = new Set([
      letter.failure?.key,
      ...(letter.envelope?.keys ?? []),
      letter.envelope?.msgId,
      letter.failure?.msgId?.toUpperCase(),
    ]);
    if (!filter.keys.some((k) => ids.has(k) || ids.has(k.toUpperCase()))) return false;
  }
  if (filter.olderThanMs !== undefined || filter.newerThanMs !== undefined) {
    // A letter of unknown age matches no age bound: redriving it must be asked for plainly.
    if (!letter.deadLetteredAt) return false;
    const age = now.getTime() - letter.deadLetteredAt.getTime();
    if (filter.olderThanMs !== undefined && age < filter.olderThanMs) return false;
    if (filter.newerThanMs !== undefined && age > filter.newerThanMs) return false;
  }
  return true;
}

/** What SQS itself says of a letter (system attributes, which no sender sets). */
export interface LetterSystemAttributes {
  /** `DeadLetterQueueSourceArn`: the queue SQS's redrive policy moved the letter from. */
  readonly deadLetterQueueSourceArn?: string;
  /** The letter's FIFO message group (a FIFO DLQ). */
  readonly messageGroupId?: string;
}

export function letterSystemAttributes(message: Pick<Message, 'Attributes'>): LetterSystemAttributes {
  const attributes = message.Attributes as Record<string, string | undefined> | undefined;
  return {
    ...(attributes?.DeadLetterQueueSourceArn ? { deadLetterQueueSourceArn: attributes.DeadLetterQueueSourceArn } : {}),
    ...(attributes?.MessageGroupId ? { messageGroupId: attributes.MessageGroupId } : {}),
  };
}

/**
 * Why a selected letter is not sent back, or `undefined` when it may go. It goes only to a queue
 * whose redrive policy moves messages into this DLQ (SQS's own list of them), and, when the
 * letter records where it was consumed from (SQS's `DeadLetterQueueSourceArn` on a redrive-policy
 * move, the failure router's `source-queue`), only there: a letter without either record came by
 * SQS's move from one of the DLQ's source queues, so the target must be the only one. A FIFO
 * letter keeps its message group only if its envelope gives that group (`redriveMessageGroup`).
 * A redriven copy is judged by the dedup record its first delivery wrote; once that record has
 * expired the consumer cannot tell it from a new order:
 * - a letter first delivered longer ago than the record TTL minus a retry window and the
 *   source queue's retention could outlive its record: the redriven copy is a new message
 *   of the source queue, which may wait out the backlog allowance and a fresh schedule;
 * - a `PAYLOAD_CONFLICT` letter is the same order with other content (another user, other
 *   points): redriven after the record expired, it would not conflict again, it would
 *   award the order a second time. It goes back only when its reason is named.
 */
export function redriveRefusal(
  letter: DeadLetter,
  guard: RedriveGuard,
  now: Date,
  system: LetterSystemAttributes = {},
): string | undefined {
  // A bridge notice has no body: whatever selected it, it never goes to the consumer.
  if (letter.notice) return noticeRedriveRefusal(letter.notice);
  // The outbox's letters: what goes back is the item (ops outbox redrive), or, for an outbound refusal, the body.
  const outbox = letter.outbox && outboxLetterRefusal(letter.outbox, guard.namedReasons);
  if (outbox) return outbox;
  if (guard.noSourceQueue) return guard.noSourceQueue;
  const source = sourceRefusal(letter, guard, system);
  if (source) return source;
  const group = redriveMessageGroup(letter, system.messageGroupId, guard.messageGroupFrom);
  if ('refusal' in group) return group.refusal;
  if (
    letter.failure?.code === PAYLOAD_CONFLICT &&
    !guard.namedReasons.some((r) => r.toUpperCase() === PAYLOAD_CONFLICT)
  ) {
    return (
      'PAYLOAD_CONFLICT: this order was already consumed with other content; once its dedup record has expired a redrive ' +
      'would apply it again (a second award, possibly to another user). Decide which content is right first; name ' +
      '--reason PAYLOAD_CONFLICT to redrive it anyway'
    );
  }
  if (guard.horizonMs === undefined || guard.force) return undefined;
  const firstSeen = firstSeenAt(letter);
  if (!firstSeen) return undefined;
  const age = now.getTime() - firstSeen.getTime();
  if (age <= guard.horizonMs) return undefined;
  return (
    `first delivered ${Math.floor(age / 3_600_000)}h ago, past the redrive horizon of ${Math.floor(guard.horizonMs / 3_600_000)}h ` +
    "(record TTL minus a retry window and the source queue's retention): its dedup record may expire before the redriven copy is settled, and the order " +
    'could be applied twice. Check it with ops audit, then redrive with --force'
  );
}

function sourceRefusal(letter: DeadLetter, guard: RedriveGuard, system: LetterSystemAttributes): string | undefined {
  const target = guard.targetQueueArn;
  if (!target) return undefined;
  const recorded = system.deadLetterQueueSourceArn ?? letter.failure?.sourceQueue;
  if (recorded && recorded !== target) {
    return (
      `its recorded source queue is ${recorded}, not the redrive target ${target}: sent there it would be ` +
      'consumed by another group. Redrive it to its own source queue (--group, or --source-queue-url)'
    );
  }
  const sources = guard.deadLetterSourceArns;
  if (sources === undefined || (recorded ? sources.includes(target) : sources.length === 1 && sources[0] === target))
    return undefined;
  const redriving = sources.length > 0 ? sources.join(', ') : 'none';
  return recorded
    ? `the redrive target ${target} is not a queue whose redrive policy moves messages into this DLQ (${redriving}): name the group's own source queue`
    : `it records no source queue (SQS's redrive policy moved it), so it came from a queue that redrives into this DLQ (${redriving}), ` +
        `and the redrive target ${target} is not the only one: redrive it to its own source queue`;
}

/**
 * The message group a FIFO letter goes back with: the one its envelope gives under the group's
 * `messageGroupFrom`, as the bridge derived it, and only when the letter's own group agrees (a
 * group changed on the way would put the order in another sequence). A standard queue's letter has none.
 */
export function redriveMessageGroup(
  letter: DeadLetter,
  letterGroup: string | undefined,
  source: MessageGroupSource | undefined,
): { group?: string } | { refusal: string } {
  if (letterGroup === undefined) return {};
  // Without a derivation (the library's default; ops always gives one) the letter's group is taken as it is.
  if (!source) return { group: letterGroup };
  if (!letter.envelope) {
    return {
      refusal: `it is a FIFO letter whose body is not an envelope (${letter.envelopeError ?? 'unreadable'}): its message group cannot be derived, and the consumer would dead-letter it again`,
    };
  }
  const derived = messageGroupOf(messageGroupFactsOf(letter.envelope), source);
  if (derived === letterGroup) return { group: derived };
  return {
    refusal: `its message group ${excerpt(letterGroup)} is not the one its envelope gives (${excerpt(derived)}): sent back in it, the order would be consumed out of sequence. Inspect it with dlq show`,
  };
}

/** The ARNs of the queues whose redrive policy moves messages into `deadLetterQueueUrl` (SQS's own list). */
export async function deadLetterSourcesOf(sqs: SQSClient, deadLetterQueueUrl: string): Promise<string[]> {
  const urls: string[] = [];
  let token: string | undefined;
  do {
    const page = await sqs.send(
      new ListDeadLetterSourceQueuesCommand({ QueueUrl: deadLetterQueueUrl, NextToken: token }),
    );
    urls.push(...(page.queueUrls ?? []));
    token = page.NextToken || undefined;
  } while (token);
  return Promise.all(
    urls.map(
      async (url) =>
        (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!
          .QueueArn!,
    ),
  );
}

/**
 * The earliest time the message is known to have existed: RocketMQ's born or store time, else when it was
 * dead-lettered.
 */
function firstSeenAt(letter: DeadLetter): Date | undefined {
  const times = [
    letter.envelope?.bornTimestamp,
    letter.envelope?.storeTimestamp,
    letter.deadLetteredAt?.getTime(),
  ].filter((t): t is number => typeof t === 'number' && t > 0);
  return times.length > 0 ? new Date(Math.min(...times)) : undefined;
}

const PAYLOAD_CONFLICT = 'PAYLOAD_CONFLICT';

export interface RedriveGuard {
  /** The ARN of the queue letters are sent to; a letter recorded from another queue is held back. */
  targetQueueArn: string | undefined;
  /** Why nothing of this DLQ is sent anywhere (the relay DLQ has no source queue); set, every letter is held back. */
  noSourceQueue?: string;
  /** Reasons the operator named (`--reason`): a conflict goes back only when named. */
  namedReasons: readonly string[];
  /** The group's redrive horizon (record TTL − retry window); `undefined` for a group the catalogue does not know. */
  horizonMs: number | undefined;
  /** Send letters past the horizon too (`--force`). */
  force: boolean;
  /**
   * The queues whose redrive policy moves messages into the DLQ (`deadLetterSourcesOf`); the target must be one, and
   * the only one for a letter that records no source. Unchecked when absent.
   */
  deadLetterSourceArns?: readonly string[];
  /**
   * Where the group's FIFO messages take their message group (its catalogue entry): a FIFO letter goes back only in
   * the group its envelope gives. Unchecked when absent.
   */
  messageGroupFrom?: MessageGroupSource;
}

export interface HeldBackLetter {
  letter: DeadLetter;
  why: string;
}

export interface RedriveReport {
  dryRun: boolean;
  /** Distinct DLQ messages looked at. */
  examined: number;
  /** The letters the filter selected (moved, or in a dry run, to be moved). */
  selected: DeadLetter[];
  /** Selected by the filter but kept in the DLQ, each with the reason (see `redriveRefusal`). */
  heldBack: HeldBackLetter[];
  /** Sent to the source queue and deleted from the DLQ. */
  moved: number;
  /**
   * Sent, but the delete from the DLQ failed: the message is in both queues. A later
   * redrive sends it again; the idempotent consumer turns that into a duplicate, not a
   * second effect.
   */
  sentNotDeleted: DeadLetter[];
}

/** A send to the source queue failed; that message, and all not yet handled, stay in the DLQ. */
export class RedriveInterruptedError extends OperationsError {
  override readonly name = 'RedriveInterruptedError';
  constructor(
    readonly report: RedriveReport,
    readonly messageId: string,
    override readonly cause: unknown,
  ) {
    super(
      `send of DLQ message ${messageId} to the source queue failed, it stays in the DLQ (${report.moved} moved before): ${messageOf(cause)}`,
    );
  }
}

export interface RedriveOptions {
  sqs: SQSClient;
  deadLetterQueueUrl: string;
  sourceQueueUrl: string;
  filter: RedriveFilter;
  /** What keeps a selected letter in the DLQ; default: conflicts unless named, no age horizon, no source check. */
  guard?: Partial<RedriveGuard>;
  dryRun: boolean;
  /** Sends per second at most, so a redrive of thousands does not flood the consumer. */
  ratePerSecond: number;
  /** Redrive at most this many. */
  limit?: number;
  /**
   * How long received messages stay hidden. Messages the filter does not select are held
   * for the whole run (so a receive does not bring them back again and again) and released
   * at the end: it must cover the run; if it does not, they are simply seen and skipped again.
   */
  visibilityTimeoutSeconds: number;
  maxReceiveCount?: number;
  waitTimeSeconds?: number;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
  onMoved?: (letter: DeadLetter) => void;
  /**
   * The body a selected letter goes back with (`ops dlq resign`: signed again), or why it stays; default: its own body.
   */
  rewrite?: (letter: DeadLetter) => { body: string } | { refusal: string };
}

/**
 * Moves selected dead letters back to their source queue with receive → send → delete
 * (SQS message-move tasks move everything and do not exist on the emulator). The delete
 * happens only after the send succeeded: a crash between the two leaves the message in
 * both queues (at least once), never in neither.
 */
export async function redriveDeadLetters(options: RedriveOptions): Promise<RedriveReport> {
  const now = options.now ?? (() => new Date());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const interval = 1000 / options.ratePerSecond;
  const report: RedriveReport = {
    dryRun: options.dryRun,
    examined: 0,
    selected: [],
    heldBack: [],
    moved: 0,
    sentNotDeleted: [],
  };
  const guard: RedriveGuard = {
    targetQueueArn: options.guard?.targetQueueArn,
    namedReasons: options.filter.reasons ?? [],
    horizonMs: options.guard?.horizonMs,
    force: options.guard?.force ?? false,
    ...(options.guard?.deadLetterSourceArns ? { deadLetterSourceArns: options.guard.deadLetterSourceArns } : {}),
    ...(options.guard?.messageGroupFrom ? { messageGroupFrom: options.guard.messageGroupFrom } : {}),
    ...(options.guard?.noSourceQueue ? { noSourceQueue: options.guard.noSourceQueue } : {}),
  };
  const seen = new Set<string>();
  const toRelease: DeadLetter[] = [];
  let lastSend = Number.NEGATIVE_INFINITY;
  try {
    while (report.selected.length < limit) {
      const batch = await receiveDeadLetters(options.sqs, options.deadLetterQueueUrl, {
        max: 10,
        visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
        waitTimeSeconds: options.waitTimeSeconds,
      });
      const fresh = batch.filter((m) => !seen.has(m.MessageId!));
      if (fresh.length === 0) break;
      const letters = fresh.map((m) => ({ message: m, letter: decodeDeadLetter(m, options.maxReceiveCount) }));
      for (const { letter } of letters) seen.add(letter.messageId);
      // Until handled, every message of the batch is to be released on the way out.
      const pending = new Set(letters.map((l) => l.letter));
      toRelease.push(...pending);
      report.examined += letters.length;
      for (const { message, letter } of letters) {
        if (report.selected.length >= limit || !matchesFilter(letter, options.filter, now())) continue;
        const rewritten = options.rewrite?.(letter) ?? { body: letter.body };
        const why =
          redriveRefusal(letter, guard, now(), letterSystemAttributes(message)) ??
          ('refusal' in rewritten ? rewritten.refusal : undefined);
        if (why || 'refusal' in rewritten) {
          report.heldBack.push({ letter, why: why ?? '' });
          continue;
        }
        report.selected.push(letter);
        if (options.dryRun) continue;
        const wait = lastSend + interval - Date.now();
        if (wait > 0) await sleep(wait);
        lastSend = Date.now();
        try {
          await sendBack(options, message, { ...letter, body: rewritten.body }, guard);
        } catch (error) {
          throw new RedriveInterruptedError(report, letter.messageId, error);
        }
        try {
          await options.sqs.send(
            new DeleteMessageCommand({ QueueUrl: options.deadLetterQueueUrl, ReceiptHandle: letter.receiptHandle }),
          );
          report.moved++;
          toRelease.splice(toRelease.indexOf(letter), 1);
          options.onMoved?.(letter);
        } catch {
          report.sentNotDeleted.push(letter);
        }
      }
    }
  } finally {
    await releaseDeadLetters(options.sqs, options.deadLetterQueueUrl, toRelease);
  }
  return report;
}

const FAILURE_NAMES = new Set<string>(Object.values(DEAD_LETTER_ATTRIBUTES));
const REDRIVE_NAMES = new Set<string>(Object.values(REDRIVE_ATTRIBUTES));
const REFUSAL_NAMES = new Set<string>([
  DEAD_LETTER_KIND_ATTRIBUTE,
  NOTICE_REASON_ATTRIBUTE,
  OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE,
]);

async function sendBack(
  options: RedriveOptions,
  message: Message,
  letter: DeadLetter,
  guard: RedriveGuard,
): Promise<void> {
  // The failure attributes describe the last failure; the consumer must not read them as
  // this delivery's. Producer attributes, if any, go back with the body untouched.
  const kept = Object.entries(message.MessageAttributes ?? {}).filter(
    ([name]) =>
      !FAILURE_NAMES.has(name) &&
      !REDRIVE_NAMES.has(name) &&
      // An outbound refusal's reason describes the last refusal, not this delivery.
      !(letter.outbox?.kind === 'outbound-refusal' && REFUSAL_NAMES.has(name)),
  );
  const attribute = (value: string): MessageAttributeValue => ({
    DataType: 'String',
    StringValue: sqsText(value, 256),
  });
  // redriveRefusal held back a letter whose group its envelope does not give.
  const { group } = redriveMessageGroup(letter, message.Attributes?.MessageGroupId, guard.messageGroupFrom) as {
    group?: string;
  };
  await options.sqs.send(
    new SendMessageCommand({
      QueueUrl: options.sourceQueueUrl,
      MessageBody: letter.body,
      // An orderly group's letter goes back into its message group, behind what was sent since
      // (as RocketMQ's resend from %DLQ% does); a send repeated after a crash is absorbed.
      ...(group
        ? { MessageGroupId: group, MessageDeduplicationId: `${letter.messageId}-${letter.redriveCount + 1}` }
        : {}),
      MessageAttributes: {
        ...Object.fromEntries(kept),
        [REDRIVE_ATTRIBUTES.from]: attribute(queueNameOf(options.deadLetterQueueUrl)),
        [REDRIVE_ATTRIBUTES.count]: attribute(String(letter.redriveCount + 1)),
        [REDRIVE_ATTRIBUTES.at]: attribute((options.now ?? (() => new Date()))().toISOString()),
      },
    }),
  );
}

function queueNameOf(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}
