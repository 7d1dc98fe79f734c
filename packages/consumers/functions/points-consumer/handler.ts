import { consumerGroup } from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { awardAnnouncements, awardWrites, orderPaidFingerprintFields, parseOrderPaid } from '../../src/points/index.ts';

export const POINTS = consumerGroup('point-consumer-group');
export const POINTS_GROUP = POINTS.group;

/**
 * ORDER_TOPIC `PAID` → one ledger entry and one balance increment per order, exactly once, and
 * POINTS_TOPIC `POINTS_AWARDED` announced in the same transaction (an outbox item, relayed from
 * the group's outbox table; a 0-point order awards and announces nothing).
 *
 * Batch packing (the catalogue's `tuning.packing`, on for this group): the records of one
 * batch commit in as few transactions as DynamoDB allows, with one account's increments
 * merged. Safe here because an award's writes are its own ledger entry (conditional, keyed by
 * order) and an unconditional balance `ADD`, so no record's condition depends on a
 * batch-mate's write. `packing: false` (or `CONSUMER_PACKING=off`) restores one transaction
 * per record; see docs/performance.md.
 */
export const consumer = defineConsumer(POINTS, {
  parsePayload: parseOrderPaid,
  keyOf: (order) => order.orderNo,
  fingerprintFields: orderPaidFingerprintFields,
  business:
    ({ tables, now }) =>
    (msg) => ({
      writes: awardWrites(
        msg.payload,
        { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
        tables,
        new Date(now()),
      ),
      publishes: awardAnnouncements(msg.payload),
    }),
});
export const handler = consumer.handler;
