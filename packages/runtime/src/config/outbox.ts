import { createHash } from 'node:crypto';

/**
 * The transactional outbox's shared names, fixed before the outbox itself is built (its publishing
 * consumer, relay and reverse route are not yet in this repository): whoever writes, relays or
 * deduplicates an outgoing message derives its event id here, so no side can derive another.
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
