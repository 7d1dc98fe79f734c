import { createHash } from 'node:crypto';

/**
 * The transactional outbox's shared names (docs/outbox.md): what a publishing group declares in the
 * catalogue, what its consumer writes beside its effect, what the relay reads from the table's stream and
 * where it sends it. Whoever writes, relays or deduplicates an outgoing message derives its names here,
 * so no side can derive another. No SDK here: synth loads this.
 *
 *   consumer ── TransactWriteItems [dedup record, effect, outbox item(s)] ──► <prefix>-<group>-outbox
 *                                                                                  │ stream (INSERT)
 *   relay ◄────────────────────────────────────────────────────────────────────────┘
 *     ├─ eventbridge: a signed envelope on the stage bus (its rules feed the subscribing groups)
 *     ├─ sqs:         a signed envelope on each subscribing group's source queue
 *     └─ rocketmq:    a signed envelope on the bridge's outbound queue, produced to RocketMQ by the bridge
 *   then marks the item RELAYED (a crash before the mark relays it again: downstream dedups on the event id)
 */

/**
 * The user property every relayed message carries: its event id. Downstream consumers key on it (falling
 * back to the first RocketMQ key), never on the msgId, because a carrier may give a relayed duplicate a
 * new msgId (RocketMQ 5 clients mint one per send).
 */
export const OUTBOX_EVENT_ID_PROPERTY = 'OUTBOX_EVENT_ID';

/**
 * An outgoing message's event id: derived from the incoming message's identity (its group, its business
 * key, the message's place in what the business publishes), never from its msgId, so an application
 * re-send with a new msgId derives the same id, and a retried transaction cannot write a second event.
 * 32 upper-case hex characters: an envelope msgId (32 to 56 hex) and a RocketMQ 4.x `UNIQ_KEY` alike.
 * The `outbox/v1` prefix versions the derivation: a new scheme is a new prefix, never an edit.
 */
export function eventIdOf(group: string, businessKey: string, index: number): string {
  if (!Number.isInteger(index) || index < 0)
    throw new RangeError(`event index must be a whole number ≥ 0, not ${index}`);
  return createHash('sha256')
    .update(`outbox/v1\u0000${group}\u0000${businessKey}\u0000${index}`)
    .digest('hex')
    .slice(0, 32)
    .toUpperCase();
}

/**
 * Where the relay sends a published topic:
 * - `eventbridge`: the stage bus, whose rules route it to the concurrent groups subscribed to it;
 * - `sqs`: straight onto the source queue of every catalogue group subscribed to the topic and tag
 *   (an orderly group's FIFO queue with the message's group);
 * - `rocketmq`: the bridge's outbound queue, for consumers still on a RocketMQ cluster.
 */
export type PublishTarget = 'eventbridge' | 'sqs' | 'rocketmq';

/** A topic a group may publish to, declared in its catalogue entry (`publishes`). */
export interface PublishedTopic {
  readonly topic: string;
  /** The tags it may publish on that topic (one per message, as RocketMQ has). */
  readonly tags: readonly string[];
  readonly target: PublishTarget;
}

/** What a publishing business returns beside its writes, per outgoing message. */
export interface OutgoingMessage {
  readonly topic: string;
  readonly tag: string;
  /** Business keys (an order number); the relay puts the event id first. */
  readonly keys?: readonly string[];
  /** Text as sent; anything else is sent as its JSON. */
  readonly body: unknown;
  readonly userProperties?: Readonly<Record<string, string>>;
  /** For an orderly target: the message group (RocketMQ 5) the message travels in. */
  readonly messageGroup?: string;
}

export const OutboxStatus = { PENDING: 'PENDING', RELAYED: 'RELAYED', FAILED: 'FAILED' } as const;
export type OutboxStatus = (typeof OutboxStatus)[keyof typeof OutboxStatus];

/** One outgoing message as its publishing group's outbox table holds it. */
export interface OutboxItem {
  /** The partition key: `eventIdOf(group, businessKey, index)`. */
  readonly eventId: string;
  readonly group: string;
  /** The incoming message's business key (an order number). */
  readonly businessKey: string;
  /** Its place among what the business published for that message. */
  readonly index: number;
  /** The incoming message whose commit wrote the item (for `ops trace`). */
  readonly sourceMsgId: string;
  readonly topic: string;
  readonly tag: string;
  /** The event id, then the business's keys. */
  readonly keys: readonly string[];
  /** The body as text. */
  readonly body: string;
  /** The business's properties and `OUTBOX_EVENT_ID`. */
  readonly userProperties: Readonly<Record<string, string>>;
  readonly messageGroup?: string;
  readonly target: PublishTarget;
  readonly status: OutboxStatus;
  /** Epoch milliseconds of the commit: the relayed message's born and store time. */
  readonly committedAt: number;
  /** Epoch milliseconds the relay marked it sent. */
  readonly relayedAt?: number;
  /** FAILED: why the relay could not send it. */
  readonly failureReason?: string;
  /** How many times `ops outbox redrive` set it back to PENDING (or, `--stale`, wrote a PENDING item anew). */
  readonly redriveCount?: number;
  /** Epoch milliseconds of the last `ops outbox redrive`: the item's latest stream record, when set. */
  readonly redrivenAt?: number;
  /** Epoch seconds, DynamoDB TTL (`outboxItemTtlSeconds`). */
  readonly expiresAt: number;
}

/** The outbox table of a publishing group: one per group, so each group's relay reads its own stream. */
export const OUTBOX_TABLE = {
  partitionKey: 'eventId',
  ttlAttribute: 'expiresAt',
  /** The relay reads new images: the item as committed or as a redrive set it back to PENDING. */
  streamView: 'NEW_IMAGE',
} as const;

export function outboxTableName(prefix: string, group: string): string {
  return `${prefix}-${group}-outbox`;
}

/** The relay's DLQ: items it could not send, each with its reason. */
export function outboxDeadLetterQueueName(prefix: string, group: string): string {
  return `${prefix}-${group}-outbox-dlq`;
}

/** The bridge's outbound queue: signed envelopes the bridge produces to RocketMQ (target `rocketmq`). */
export function outboundQueueName(prefix: string): string {
  return `${prefix}-rocketmq-outbound`;
}

/** The outbound queue's DLQ: what the bridge refused to produce (with its reason), and what it failed to produce for good. */
export function outboundDeadLetterQueueName(prefix: string): string {
  return `${outboundQueueName(prefix)}-dlq`;
}

/** The environment a publishing consumer and its relay are deployed with. */
export const OUTBOX_ENV = {
  /** The publishing group's outbox table (consumer: writes; relay: marks). */
  table: 'OUTBOX_TABLE',
  /** Relay: where each published topic goes (`RelayTargets` as JSON). */
  targets: 'OUTBOX_TARGETS',
  /** Relay: its DLQ's URL. */
  deadLetterQueueUrl: 'OUTBOX_DEAD_LETTER_QUEUE_URL',
} as const;

/** Relay: the concrete place of each published topic, by topic (`OUTBOX_TARGETS`). */
export type RelayTargets = Readonly<
  Record<
    string,
    | { readonly kind: 'eventbridge'; readonly eventBusName: string }
    | {
        readonly kind: 'sqs';
        /** One per subscribing group; FIFO queues get the message group. */
        readonly queues: readonly { readonly group: string; readonly url: string; readonly tagExpression: string }[];
      }
    | { readonly kind: 'rocketmq'; readonly queueUrl: string }
  >
>;

/** A catalogue entry's `publishes` that its consumer could not honour: named at synth, cold start, local run. */
export class InvalidPublicationError extends Error {
  override readonly name = 'InvalidPublicationError';
}

/** RocketMQ's topic name rule (TopicValidator): letters, digits, `%`, `-`, `_`, `|`, at most 127 characters. */
const TOPIC_NAME = /^[%|a-zA-Z0-9_-]{1,127}$/;
/** A tag this project can filter on: no `||`, space or `*` (they are tag-expression syntax). */
const TAG_NAME = /^[^\s|*]{1,128}$/;

/**
 * Refuses a `publishes` declaration its group could not honour: only a transactional group writes the
 * outbox item in its effect's transaction (a lease's outside call or a state transition has no
 * transaction to join), and every topic and tag is one RocketMQ would take.
 */
export function assertPublishes(
  group: string,
  strategy: string,
  publishes: readonly PublishedTopic[] | undefined,
): void {
  if (!publishes || publishes.length === 0) return;
  const refuse = (why: string): never => {
    throw new InvalidPublicationError(`consumer group ${group}: publishes ${why}`);
  };
  if (strategy !== 'transactional')
    refuse(
      `is set but strategy is '${strategy}': only a transactional group writes its outgoing messages in the transaction of its effect`,
    );
  const seen = new Set<string>();
  for (const { topic, tags, target } of publishes) {
    if (!TOPIC_NAME.test(topic)) refuse(`topic "${topic}", which is not a RocketMQ topic name`);
    if (seen.has(topic)) refuse(`topic ${topic} twice: declare its tags in one entry`);
    seen.add(topic);
    if (tags.length === 0) refuse(`topic ${topic} with no tag: list the tags the group sends`);
    for (const tag of tags) if (!TAG_NAME.test(tag)) refuse(`tag "${tag}" on ${topic}, which a tag filter cannot name`);
    if (!['eventbridge', 'sqs', 'rocketmq'].includes(target))
      refuse(`topic ${topic} to target '${target}': one of eventbridge, sqs, rocketmq`);
  }
}

/** The declaration a business's outgoing message falls under, or why it does not (the message is refused). */
export function declarationOf(
  publishes: readonly PublishedTopic[] | undefined,
  message: Pick<OutgoingMessage, 'topic' | 'tag'>,
): PublishedTopic | string {
  const declared = publishes?.find((p) => p.topic === message.topic);
  if (!declared) return `topic ${message.topic} is not among the group's publishes`;
  if (!declared.tags.includes(message.tag))
    return `tag ${message.tag} is not among the tags declared for ${message.topic} (${declared.tags.join(', ')})`;
  return declared;
}
