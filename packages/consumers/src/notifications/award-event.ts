import { OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import { InvalidPayloadError, identifier } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { RocketMQMessage } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type PointsAwarded, parsePointsAwarded } from '../points/index.ts';

/** One POINTS_AWARDED as the notification group acts on it: the award and the outbox event that announced it. */
export interface AwardEvent {
  /** The publishing group's event id: what the group keys on, never the msgId (a relayed duplicate may get a new one). */
  readonly eventId: string;
  readonly award: PointsAwarded;
}

const eventIdSchema = identifier(OUTBOX_EVENT_ID_PROPERTY);

/**
 * The award and its event id: the `OUTBOX_EVENT_ID` user property the relay sets, or the first key
 * (where a carrier kept the keys but not the properties); a message with neither cannot be told from
 * its duplicates, so it is refused as INVALID_PAYLOAD.
 */
export function parseAwardEvent(body: string, message: Pick<RocketMQMessage, 'keys' | 'userProperties'>): AwardEvent {
  const award = parsePointsAwarded(body);
  const candidate = message.userProperties[OUTBOX_EVENT_ID_PROPERTY] ?? message.keys[0];
  if (candidate === undefined)
    throw new InvalidPayloadError(`no event id: neither a ${OUTBOX_EVENT_ID_PROPERTY} user property nor a key`);
  const eventId = eventIdSchema.safeParse(candidate);
  if (!eventId.success) throw new InvalidPayloadError(`event id: ${eventId.error.issues[0]!.message}`);
  return { eventId: eventId.data, award };
}
