/**
 * The order business: the order events and the status lifecycle an order-status consumer moves.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { OrderEventTag, parseOrderEvent, parseOrderPaidEvent } from './order-events.ts';
export { ORDER_TRANSITIONS, type Order, OrderStatus, transitionRequest } from './order-status.ts';
