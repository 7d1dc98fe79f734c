import { OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import type { RocketMQMessage } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { ProducedMessage } from './types.ts';

/** The envelope's system property holding a RocketMQ 5 message group (4.x's sharding key). */
const SHARDING_KEY = '__SHARDINGKEY';

/**
 * The message the outbound route produces for one relayed envelope. The event id is the envelope's
 * `OUTBOX_EVENT_ID` (the relay sets it, and the msgId, to the event id), else its msgId; it goes first
 * among the keys and into the properties whatever the envelope held, so every consumer, on either
 * protocol, finds it where docs/outbox.md says downstream consumers look.
 */
export function producedMessageOf(message: RocketMQMessage): ProducedMessage {
  const eventId = message.userProperties[OUTBOX_EVENT_ID_PROPERTY] ?? message.msgId;
  return {
    eventId,
    topic: message.topic,
    tag: message.tags,
    keys: [eventId, ...message.keys.filter((key) => key !== eventId)],
    body: Buffer.from(message.body, 'utf8'),
    userProperties: { ...message.userProperties, [OUTBOX_EVENT_ID_PROPERTY]: eventId },
    messageGroup: message.systemProperties[SHARDING_KEY],
  };
}
