/**
 * The notification a points award calls for: the award event read from a relayed POINTS_AWARDED,
 * and the HTTP client of the notification service a lease-mode consumer calls once per event.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { type AwardEvent, parseAwardEvent } from './award-event.ts';
export {
  NOTIFICATION_PATH,
  NotificationClient,
  notificationClientOf,
  type PointsNotification,
} from './notification-client.ts';
