/**
 * Names the code writes and the CDK app reads (metric namespaces and names, the EventBridge
 * source), in one module without runtime dependencies: synth loads neither the SDK nor
 * Powertools for a string constant.
 */

/** Namespace of every consumer metric (EMF through Powertools). */
export const METRICS_NAMESPACE = 'RocketMQConsumers';

/** Metric names the alarms and the dashboard read. */
export const ConsumerMetric = {
  processed: 'Processed',
  duplicates: 'DuplicatesSuppressed',
  filtered: 'Filtered',
  conflicts: 'PayloadConflicts',
  retried: 'Retried',
  /** FIFO records returned unprocessed behind a failed message of their group (not attempts). */
  heldBack: 'HeldBack',
  /**
   * Seconds a FIFO message returned to its queue (retried, or held back behind its group) has
   * waited since SQS accepted it: a message group that no longer moves, seen by the consumer.
   */
  messageGroupWait: 'MessageGroupWait',
  deadLettered: 'DeadLettered',
  permanentErrors: 'PermanentErrors',
} as const;

/** Namespace of the DingTalk notifier's metrics. */
export const NOTIFIER_METRICS_NAMESPACE = 'DingTalkAlarmNotifier';

/** EventBridge `source` of what a bridge puts on a bus: this, then the cluster's name. The groups' rules match it. */
export const BRIDGE_EVENT_SOURCE_PREFIX = 'rocketmq.';

/** Namespace of the bridge's per-route metrics (EMF on stdout, dimensions ConsumerGroup and Topic). */
export const BRIDGE_METRICS_NAMESPACE = 'RocketMQBridge';

/** Metric names the bridge writes and its alarms read. */
export const BridgeMetric = {
  received: 'Received',
  forwarded: 'Forwarded',
  /** Store-to-forward delay of a forwarded message, in ms: how far behind the topic the route runs. */
  forwardLag: 'ForwardLag',
  forwardFailed: 'ForwardFailed',
  deadLettered: 'DeadLettered',
  ackFailed: 'AckFailed',
  receiveFailed: 'ReceiveFailed',
} as const;

/**
 * Metric names of a group's outbox relay (namespace `METRICS_NAMESPACE`, dimension ConsumerGroup, as
 * the group's consumer): what its alarms and dashboard read.
 */
export const OutboxRelayMetric = {
  /** Items sent and marked RELAYED. */
  relayed: 'OutboxRelayed',
  /** Commit-to-relay time of a relayed item (relayedAt − committedAt), in milliseconds. */
  relayLatency: 'OutboxRelayLatency',
  /** Records reported for a retry (the target did not take them this time, or the mark did not land). */
  retried: 'OutboxRelayRetried',
  /** Records not tried behind an earlier record of their message group. */
  heldBack: 'OutboxRelayHeldBack',
  /** Items refused for good: marked FAILED, a notice in the relay's DLQ. */
  failed: 'OutboxRelayFailed',
} as const;
