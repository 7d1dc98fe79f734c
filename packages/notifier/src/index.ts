/**
 * The DingTalk alarm notifier: SNS alarm events to robot messages, under the robot's rate limit, with
 * its backlog shared by concurrent invocations.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { AlarmNotifier, DEFAULT_TIME_ZONE, notifierFromSettings, notifierSettingsFromEnv } from './alarm-notifier.ts';
export type { DispatchPolicy } from './alarm-storm.ts';
export { type Clock, systemClock } from './clock.ts';
export {
  DeliveryBudgetExhaustedError,
  DingTalkError,
  RobotRejectedError,
  RobotThrottledError,
  RobotUnavailableError,
  WebhookSecretError,
} from './errors.ts';
export { DEFAULT_METRICS_NAMESPACE, noDeliveryMetrics, powertoolsDeliveryMetrics } from './notifier-metrics.ts';
export { DynamoDbPendingAlarms, InMemoryPendingAlarms } from './pending-alarms.ts';
export { RobotClient } from './robot-client.ts';
export { DynamoDbRateLimiter, InMemoryRateLimiter } from './robot-rate-limit.ts';
export {
  parseWebhookSecret,
  SecretsManagerWebhookSource,
  StaticWebhookSource,
  type WebhookConfig,
} from './webhook-secret.ts';
