/**
 * The transactional outbox's relay: reads a publishing group's outbox stream, sends each PENDING item
 * as a signed envelope to its topic's target (SQS queues, an EventBridge bus, the bridge's outbound
 * queue for RocketMQ), marks it RELAYED, and marks what a target refuses FAILED with a notice in the
 * relay's DLQ. The names it shares with the consumers, CDK and ops are in ../config/outbox.ts.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { OutboxRelay, type OutboxRelayOptions, type RelayOutcome, type RelayReport } from './outbox-relay.ts';
export { parseRelayTargets, type RelayDeployment, relayConfigFromEnv } from './relay-config.ts';
export {
  InvalidRelayConfigError,
  MarkFailedError,
  NoRelayTargetError,
  RelayError,
  type RelayFailureClass,
  TargetRefusedError,
  TargetUnavailableError,
  UnreadableOutboxItemError,
} from './relay-errors.ts';
export {
  createRelayHandler,
  defineOutboxRelay,
  type RelayConfig,
  type RelayHandler,
  relayTelemetry,
} from './relay-handler.ts';
export {
  OUTBOX_NOTICE_KIND,
  OUTBOX_NOTICE_REASON_ATTRIBUTE,
  type OutboxDeadLetterNotice,
  readOutboxNotice,
} from './relay-notice.ts';
export { orderingKeyOf, relayClusterOf, relayedEnvelope } from './relayed-envelope.ts';
