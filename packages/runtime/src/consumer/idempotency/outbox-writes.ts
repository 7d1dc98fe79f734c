import {
  declarationOf,
  eventIdOf,
  OUTBOX_EVENT_ID_PROPERTY,
  type OutboxItem,
  OutboxStatus,
  type OutgoingMessage,
  type PublishedTopic,
} from '../../config/index.ts';
import { type ConsumptionError, PermanentFailureError, UndeclaredPublicationError } from '../failures/errors.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import type { ConsumptionStrategy } from './strategy.ts';
import type { DeclaredWrite, TransactionalResult } from './transactional.ts';

/**
 * The transactional outbox's write side (docs/outbox.md): what a publishing business returns
 * (`publishes`) becomes one more declared write per message, a conditional put of its outbox item,
 * so the dedup record, the effect and the outgoing messages commit in one `TransactWriteItems`.
 *
 *   delivery 1 of SO1:  [put dedup SO1 if absent, ledger SO1, balance, put outbox E(SO1,0) if absent] ─ commits
 *   delivery 2 of SO1:  [put dedup SO1 if absent, …]  ─ cancelled at [0]: a duplicate, no second item
 *
 * The event id comes from the incoming message's identity (group, business key, index), never its
 * msgId: an application re-send with a new msgId, or a transaction retried after a timeout that did
 * commit, names the same item, and the item's own condition refuses a second one.
 */
export interface OutboxOptions {
  readonly group: string;
  /** The catalogue entry's declarations; an outgoing message outside them is refused. */
  readonly publishes: readonly PublishedTopic[] | undefined;
  /** The group's outbox table (its physical name); required when the entry publishes. */
  readonly tableName: string | undefined;
  /** An item's lifetime (`outboxTtlOf`). */
  readonly ttlSeconds: number;
  readonly now: () => number;
}

/**
 * The outbox puts of one record's outgoing messages, in their order, or why the record may not
 * commit them: one message outside the entry's declarations refuses them all (and the effect with them).
 */
export function outboxWrites<P>(
  msg: ConsumerMessage<P>,
  messages: readonly OutgoingMessage[],
  options: OutboxOptions,
): DeclaredWrite[] | ConsumptionError {
  const declared: PublishedTopic[] = [];
  for (const [index, message] of messages.entries()) {
    const declaration = declarationOf(options.publishes, message);
    if (typeof declaration === 'string') {
      return new UndeclaredPublicationError(
        `consumer group ${options.group}: outgoing message ${index} (${message.topic} ${message.tag}) is refused: ${declaration}`,
      );
    }
    if (bodyText(message.body) === undefined)
      return new PermanentFailureError(
        `consumer group ${options.group}: outgoing message ${index} (${message.topic} ${message.tag}) has a body with no JSON text`,
        'INVALID_PUBLICATION',
      );
    declared.push(declaration);
  }
  if (messages.length === 0) return [];
  const tableName = options.tableName;
  // Refused at cold start (strategy-wiring.ts): a publishing entry is never wired without its table.
  if (!tableName) throw new Error(`consumer group ${options.group}: no outbox table to write its messages to`);
  const nowMs = options.now();
  return messages.map((message, index) =>
    outboxPut(tableName, outboxItemOf(msg, message, index, declared[index]!, { ...options, nowMs })),
  );
}

/** One outgoing message as its group's outbox table holds it: PENDING, until the relay has sent it. */
export function outboxItemOf<P>(
  msg: ConsumerMessage<P>,
  message: OutgoingMessage,
  index: number,
  declared: PublishedTopic,
  options: Pick<OutboxOptions, 'group' | 'ttlSeconds'> & { readonly nowMs: number },
): OutboxItem {
  const eventId = eventIdOf(options.group, msg.key, index);
  return {
    eventId,
    group: options.group,
    businessKey: msg.key,
    index,
    sourceMsgId: msg.message.msgId,
    topic: message.topic,
    tag: message.tag,
    keys: [eventId, ...(message.keys ?? [])],
    body: bodyText(message.body)!,
    userProperties: { ...message.userProperties, [OUTBOX_EVENT_ID_PROPERTY]: eventId },
    ...(message.messageGroup === undefined ? {} : { messageGroup: message.messageGroup }),
    target: declared.target,
    status: OutboxStatus.PENDING,
    committedAt: options.nowMs,
    expiresAt: Math.floor(options.nowMs / 1000) + options.ttlSeconds,
  };
}

/**
 * The item's conditional put. Its condition fails only when the item is there already: the same
 * event id is the same event, so that is "done" (the dedup record, first in the transaction, tells
 * a duplicate before this does; this is the last line when that record has expired).
 */
export function outboxPut(tableName: string, item: OutboxItem): DeclaredWrite {
  return {
    item: { Put: { TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(eventId)' } },
    conditionFailureMeansDone: true,
  };
}

/** The body as the relay sends it: text as it is, anything else as its JSON (`undefined` has none). */
function bodyText(body: unknown): string | undefined {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/**
 * A transactional strategy (per record or packed) whose commits carry the outbox puts of what the
 * business publishes. A record refused for its messages fails alone, writing nothing; its
 * batch-mates commit as they would without it.
 */
export function withOutboxWrites(
  strategy: ConsumptionStrategy<TransactionalResult>,
  options: OutboxOptions,
): ConsumptionStrategy<TransactionalResult> {
  const commitment = <P>(msg: ConsumerMessage<P>, result: TransactionalResult): Commitment => {
    const writes = outboxWrites(msg, result.publishes ?? [], options);
    return Array.isArray(writes) ? { writes: [...result.writes, ...writes] } : writes;
  };
  const commitBatch = strategy.commitBatch?.bind(strategy);
  return {
    recordTtlSeconds: strategy.recordTtlSeconds,
    begin: (msg, deadline) => strategy.begin(msg, deadline),
    abort: (msg, error) => strategy.abort(msg, error),
    async commit(msg, result) {
      const committing = commitment(msg, result);
      return 'writes' in committing ? strategy.commit(msg, committing) : failed(committing);
    },
    ...(commitBatch && {
      commitBatch: <P>(msgs: readonly ConsumerMessage<P>[], results: readonly TransactionalResult[]) =>
        commitAdmitted(
          msgs,
          msgs.map((msg, i) => commitment(msg, results[i]!)),
          commitBatch,
        ),
    }),
  };
}

/** A record's writes with its outbox puts, or why it may not commit them. */
type Commitment = TransactionalResult | ConsumptionError;

/** Commits the batch's admitted records together; the refused ones are failed with their reason. */
async function commitAdmitted<P>(
  msgs: readonly ConsumerMessage<P>[],
  commitments: readonly Commitment[],
  commitBatch: NonNullable<ConsumptionStrategy<TransactionalResult>['commitBatch']>,
): Promise<Settlement[]> {
  const admitted = commitments.flatMap((c, index) => ('writes' in c ? [{ index, result: c }] : []));
  const settled =
    admitted.length === 0
      ? []
      : await commitBatch(
          admitted.map(({ index }) => msgs[index]!),
          admitted.map(({ result }) => result),
        );
  const byIndex = new Map(admitted.map(({ index }, j) => [index, settled[j]!]));
  return commitments.map((c, index) => ('writes' in c ? byIndex.get(index)! : failed(c)));
}

const failed = (error: ConsumptionError): Settlement => ({ outcome: 'failed', error });
