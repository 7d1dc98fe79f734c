import { consumerGroup } from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { parseOrderEvent, transitionRequest } from '../../src/orders/index.ts';

export const ORDER_STATUS = consumerGroup('order-status-consumer-group');
export const ORDER_STATUS_GROUP = ORDER_STATUS.group;

/**
 * ORDER_TOPIC `PAID || FINISHED` → the order's status moves WAIT_PAY → PAID → FINISHED
 * by conditional update; the tag decides the target state. No dedup record: the
 * precondition is the idempotency check. An orderly group (catalogue): one order's events are
 * one FIFO message group, applied one at a time in the order they were sent; each message's
 * failures are counted in the idempotency table.
 */
export const consumer = defineConsumer(ORDER_STATUS, {
  parsePayload: (body, message) => parseOrderEvent(body, message.tags),
  // One key per transition: PAID and FINISHED of one order are different events, and
  // two copies of one transition are duplicates whatever their timestamps say.
  keyOf: (event) => `${event.orderNo}#${event.kind}`,
  fingerprintFields: (event) => ({ orderNo: event.orderNo, kind: event.kind }),
  business:
    ({ tables, now }) =>
    (msg) =>
      transitionRequest(msg.payload, {
        tableName: tables.orders,
        msgId: msg.message.msgId,
        bornTimestamp: msg.message.bornTimestamp,
        now: new Date(now()),
      }),
});
export const handler = consumer.handler;
