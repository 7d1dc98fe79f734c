import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { OUTBOX_EVENT_ID_PROPERTY, type OutboxItem } from '../config/index.ts';
import { buildEnvelope, type Envelope, serializeEnvelope, signEnvelope } from '../rocketmq/index.ts';
import { UnreadableOutboxItemError } from './relay-errors.ts';

/** A stream record's image as Lambda hands it over (the SDK's and `aws-lambda`'s attribute value types alike). */
export type StreamImage = Readonly<Record<string, unknown>>;

/** The cluster a relayed envelope names as its source (`rocketmq://outbox-<group>`): who published it. */
export function relayClusterOf(group: string): string {
  return `outbox-${group}`;
}

/** The status an image carries, without reading the rest: the relay acts on PENDING images only. */
export function statusOf(image: StreamImage | undefined): string | undefined {
  const status = image?.status as { S?: unknown } | undefined;
  return typeof status?.S === 'string' ? status.S : undefined;
}

/** The event id an image carries, for a reason to be recorded even when the rest is unreadable. */
export function eventIdOfImage(image: StreamImage | undefined): string | undefined {
  const id = image?.eventId as { S?: unknown } | undefined;
  return typeof id?.S === 'string' ? id.S : undefined;
}

/** The outbox item of a PENDING image; `UnreadableOutboxItemError` names what is missing. */
export function outboxItemOf(image: StreamImage): OutboxItem {
  const item = unmarshall(image as Record<string, AttributeValue>) as Partial<OutboxItem>;
  const missing = (['eventId', 'group', 'businessKey', 'topic', 'tag', 'body', 'committedAt'] as const).filter(
    (field) => item[field] === undefined,
  );
  if (missing.length > 0) throw new UnreadableOutboxItemError(`the outbox item lacks ${missing.join(', ')}`);
  return {
    ...item,
    keys: [...(item.keys ?? [item.eventId!])],
    userProperties: { ...item.userProperties },
    committedAt: Number(item.committedAt),
  } as OutboxItem;
}

/**
 * The signed envelope of an outbox item, in the bridge's format: msgId = the event id, keys = the
 * event id then the business's keys, the event id again as `OUTBOX_EVENT_ID`, born and stored at the
 * commit (a downstream redrive-horizon check sees the event's real age). Nothing in it depends on when
 * or how often it is relayed, so a relay that sends an item twice sends the same envelope twice, which
 * downstream deduplicates on the event id.
 */
export function relayedEnvelope(item: OutboxItem, key: Uint8Array): Envelope {
  const keys = item.keys[0] === item.eventId ? item.keys : [item.eventId, ...item.keys];
  let envelope: Envelope;
  try {
    envelope = buildEnvelope({
      topic: item.topic,
      msgId: item.eventId,
      body: item.body,
      tags: item.tag,
      keys,
      bornTimestamp: item.committedAt,
      storeTimestamp: item.committedAt,
      cluster: relayClusterOf(item.group),
      ...(item.messageGroup !== undefined ? { messageGroup: item.messageGroup } : {}),
      userProperties: { ...item.userProperties, [OUTBOX_EVENT_ID_PROPERTY]: item.eventId },
    });
  } catch (error) {
    throw new UnreadableOutboxItemError(`no envelope can be built of the item: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return signEnvelope(envelope, key);
}

/** `relayedEnvelope` as the text every target carries (an SQS body, an EventBridge detail). */
export function relayedBody(item: OutboxItem, key: Uint8Array): string {
  return serializeEnvelope(relayedEnvelope(item, key));
}

/** The group a record keeps its order in: its message group, else its business key (RocketMQ's sharding key). */
export function orderingKeyOf(item: Pick<OutboxItem, 'messageGroup' | 'businessKey'>): string {
  return item.messageGroup ?? item.businessKey;
}
