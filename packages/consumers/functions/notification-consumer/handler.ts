import { consumerGroup } from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { notificationClientOf, parseAwardEvent } from '../../src/notifications/index.ts';

export const NOTIFICATIONS = consumerGroup('notification-consumer-group');
export const NOTIFICATION_GROUP = NOTIFICATIONS.group;

/**
 * POINTS_TOPIC `POINTS_AWARDED` (relayed from the points group's outbox) → one notification per
 * award event, in lease mode: the notification is an HTTP call that cannot join a DynamoDB
 * transaction. The key is the event id, never the msgId: the relay's retries and the stream's
 * redeliveries may carry one event under several msgIds, and all of them meet one lease.
 */
export const consumer = defineConsumer(NOTIFICATIONS, {
  parsePayload: parseAwardEvent,
  keyOf: (event) => event.eventId,
  // One event announces one award: the same event id with another award is a conflict.
  fingerprintFields: (event) => event.award,
  business: (wiring) => {
    const notifications = notificationClientOf(wiring);
    return (msg, invocation) =>
      notifications.notify({ eventId: msg.key, ...msg.payload.award }, { remainingMs: invocation.remainingMs() });
  },
});
export const handler = consumer.handler;
