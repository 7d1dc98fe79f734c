import { defineOutboxRelay } from '@rocketmq-lambda/runtime/outbox/index.ts';

/**
 * The outbox relay of a publishing group, one function per group, told which by its environment
 * (CONSUMER_GROUP, OUTBOX_TABLE, OUTBOX_TARGETS, OUTBOX_DEAD_LETTER_QUEUE_URL, ENVELOPE_SIGNING_SECRET):
 * the group's outbox stream → its topics' targets, each item marked RELAYED after the send.
 */
export const relay = defineOutboxRelay();
export const handler = relay.handler;
