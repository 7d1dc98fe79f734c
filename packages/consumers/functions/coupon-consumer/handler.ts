import { consumerGroup } from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { couponClientOf } from '../../src/coupons/index.ts';
import { parseOrderPaidEvent } from '../../src/orders/index.ts';

export const COUPONS = consumerGroup('coupon-consumer-group');
export const COUPON_GROUP = COUPONS.group;

/**
 * ORDER_TOPIC `PAID` → one coupon per order from the coupon service, in lease mode: the
 * grant is an HTTP call that cannot join a DynamoDB transaction. The coupon id is the
 * stored result a later duplicate gets back without calling the service again.
 */
export const consumer = defineConsumer(COUPONS, {
  parsePayload: parseOrderPaidEvent,
  keyOf: (order) => order.orderNo,
  // What the grant depends on: the same order for another user is a conflict, a new paidAt is not.
  fingerprintFields: (order) => ({ orderNo: order.orderNo, userId: order.userId }),
  business: (wiring) => {
    const coupons = couponClientOf(wiring);
    return (msg, invocation) =>
      coupons.grant(
        { orderNo: msg.payload.orderNo, userId: msg.payload.userId },
        { idempotencyKey: msg.key, remainingMs: invocation.remainingMs() },
      );
  },
});
export const handler = consumer.handler;
