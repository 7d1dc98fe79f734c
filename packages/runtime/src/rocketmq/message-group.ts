import { createHash } from 'node:crypto';
import type { RocketMQMessage } from './envelope.ts';

/**
 * Which messages an orderly group consumes in order: the SQS FIFO `MessageGroupId` the bridge
 * forwards each message of an orderly route with. RocketMQ keeps order per queue (4.x: the
 * producer's queue selector, usually hashing a business key; 5.x FIFO topics: per message group,
 * hashed onto a queue), so any key that never puts two messages of one queue's ordered sequence in
 * different groups keeps their order. Finer keys consume more in parallel.
 */
export type MessageGroupSource =
  /** The RocketMQ 5 FIFO message group (`__SHARDINGKEY` in 4.x terms): what a 5.x producer sets. */
  | { readonly from: 'messageGroup' }
  /**
   * The message's first key: a 4.x producer that selects the queue by, say, the order number, and puts it in `KEYS`.
   */
  | { readonly from: 'key' }
  /** A user property a 4.x producer selects the queue by. */
  | { readonly from: 'property'; readonly name: string }
  /**
   * The RocketMQ queue itself (broker and queue id): exactly the order a 4.x orderly listener keeps, and its
   * parallelism.
   */
  | { readonly from: 'queue' };

export const DEFAULT_MESSAGE_GROUP_SOURCE: MessageGroupSource = { from: 'messageGroup' };

/** What the derivation reads of a message, as the bridge receives it and as the envelope carries it. */
export interface MessageGroupFacts {
  readonly topic: string;
  readonly messageGroup?: string | undefined;
  readonly keys: readonly string[];
  readonly userProperties: Readonly<Record<string, string>>;
  readonly brokerName?: string | undefined;
  readonly queueId?: number | undefined;
}

/** What the bridge derived a message's FIFO message group from, as the envelope carries it. */
export function messageGroupFactsOf(message: RocketMQMessage): MessageGroupFacts {
  return {
    topic: message.topic,
    messageGroup: message.systemProperties.__SHARDINGKEY,
    keys: message.keys,
    userProperties: message.userProperties,
    brokerName: message.brokerName,
    queueId: message.queueId,
  };
}

/**
 * The message's group. A message without what `source` names falls back to its queue (still in
 * the order RocketMQ stored it), and without a known queue to its topic: slower, never out of order.
 */
export function messageGroupOf(
  message: MessageGroupFacts,
  source: MessageGroupSource = DEFAULT_MESSAGE_GROUP_SOURCE,
): string {
  const named = (() => {
    switch (source.from) {
      case 'messageGroup':
        return message.messageGroup;
      case 'key':
        return message.keys[0];
      case 'property':
        return message.userProperties[source.name];
      case 'queue':
        return undefined;
    }
  })();
  if (named) return asMessageGroupId(named);
  return asMessageGroupId(
    message.queueId === undefined ? message.topic : `${message.topic}@${message.brokerName ?? ''}#${message.queueId}`,
  );
}

/** SQS's rule for `MessageGroupId`: 1–128 printable ASCII characters (no spaces). */
const SQS_MESSAGE_GROUP_ID = /^[\x21-\x7E]{1,128}$/;

/**
 * A key SQS would refuse as a group id (a Chinese order number, one over 128 characters) is
 * replaced by its hash: the same key still lands in the same group, and the send does not fail
 * forever, blocking the route behind it.
 */
function asMessageGroupId(value: string): string {
  return SQS_MESSAGE_GROUP_ID.test(value) ? value : `sha256:${createHash('sha256').update(value).digest('hex')}`;
}
