import { createHash } from 'node:crypto';

/**
 * The outbox's names every side reads: the publishing consumer that writes an outgoing message in its
 * effect's transaction, the relay that sends it, the bridge's reverse route that produces it to RocketMQ,
 * and the consumers downstream that deduplicate it (docs/outbox.md).
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
