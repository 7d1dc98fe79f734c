import { OrderEventTag } from '@rocketmq-lambda/consumers/orders/index.ts';

// A RocketMQ msgId: 16 bytes (IPv4), 28 (IPv6) or a 5.x client's 17 bytes starting with 01 (docs: FACTS).
const MSG_ID = /^(?:[0-9A-F]{32}|01[0-9A-F]{32}|[0-9A-F]{56})$/i;

export function isMsgId(value: string): boolean {
  return MSG_ID.test(value);
}

const KIND_SUFFIX = new RegExp(`#(?:${Object.values(OrderEventTag).join('|')})$`);

/**
 * An order-based key's order number: the key itself, or what precedes `#<kind>` (the order-status
 * group's keys). Only an event kind is cut: an order number may hold `#` itself (`JD#8812`).
 */
export const orderNoOfKey = (key: string) => key.replace(KIND_SUFFIX, '');
