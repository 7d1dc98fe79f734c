/**
 * The one source of truth the CDK app, the functions, the local run and the tools share: the catalogue of
 * tables, queues and consumer groups, the delivery lifetimes derived from it, the environment a function is
 * deployed with, and the names metrics and alarms use. No AWS SDK here: synth loads none of it.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { ALARM_STORM_TABLE } from './alarm-storm-table.ts';
export { CONSUMER_ENV, lifetimeEnvironment, queueLifetimesFromEnvironment } from './consumer-environment.ts';
export {
  BUS_ARCHIVE_RETENTION_SECONDS,
  copyLifetimeSeconds,
  DEFAULT_RECORD_TTL_SECONDS,
  DeliveryLifetimes,
  FIFO_MAX_BATCH_SIZE,
  IncoherentLifetimesError,
  type LegacyHorizon,
  type LegacyLifetimeSettings,
  LegacyLifetimes,
  legacyHorizonOf,
  lifetimesOf,
  type Ordering,
  orderlySchedule,
  outboxItemTtlSeconds,
  type QueueLifetimes,
  RELAY_MAX_RECORD_AGE_SECONDS,
  STREAM_RETENTION_SECONDS,
} from './delivery-lifetimes.ts';
export { isLoopbackUrl } from './loopback-url.ts';
export {
  assertPublishes,
  declarationOf,
  eventIdOf,
  InvalidPublicationError,
  OUTBOX_ENV,
  OUTBOX_EVENT_ID_PROPERTY,
  OUTBOX_TABLE,
  type OutboxItem,
  OutboxStatus,
  type OutgoingMessage,
  outboundDeadLetterQueueName,
  outboundQueueName,
  outboxDeadLetterQueueName,
  outboxTableName,
  type PublishedTopic,
  type PublishTarget,
  type RelayTargets,
} from './outbox.ts';
export {
  assertCatalogueEntry,
  assertOrderingFits,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  catalogue,
  consumerGroup,
  DLQ_RETENTION_DAYS,
  deadLetterQueueName,
  FIFO_QUEUE_ATTRIBUTES,
  functionLogGroupName,
  type GroupTuning,
  InvalidCatalogueEntryError,
  lambdaLogGroupName,
  OUTSIDE_SERVICES,
  type OutsideServiceName,
  orderingOf,
  outboxRedriveHorizonOf,
  outboxTtlOf,
  queueName,
  REVOKED_STAGE_PREFIX,
  recordId,
  recordIdPrefix,
  STRATEGY_TABLES,
  type StrategyName,
  signingKeySecretName,
  subscribersOf,
  TABLE_ENV,
  TABLES,
  type TableDefinition,
  type TableKey,
  tableName,
} from './resources.ts';
export {
  endpointRefusal,
  type ServiceAuth,
  type ServiceEndpoint,
  SIGV4_SERVICES,
  type SigV4Service,
  serviceAuthSchema,
} from './service-endpoint.ts';
export {
  BRIDGE_EVENT_SOURCE_PREFIX,
  BRIDGE_METRICS_NAMESPACE,
  BridgeMetric,
  ConsumerMetric,
  METRICS_NAMESPACE,
  NOTIFIER_METRICS_NAMESPACE,
  OutboxRelayMetric,
} from './telemetry-names.ts';
export {
  InvalidTracingBackendError,
  TRACER_NAMES,
  TRACING_BACKEND_ENV,
  TRACING_BACKENDS,
  TracingBackend,
  tracingBackendOf,
} from './tracing-backend.ts';
