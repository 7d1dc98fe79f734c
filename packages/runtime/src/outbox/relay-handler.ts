import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { createDynamoDb, createEventBridge, createSecretsManager, createSqs, SecretSigningKeys } from '../aws/index.ts';
import { METRICS_NAMESPACE, OutboxRelayMetric } from '../config/index.ts';
import { lazyHandler } from '../consumer/internal.ts';
import { OutboxRelay, type OutboxRelayOptions, type RelayReport } from './outbox-relay.ts';
import { type RelayDeployment, relayConfigFromEnv } from './relay-config.ts';

export type RelayHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;

/** Turns each record's report into one structured log line and its metrics, as the consumers' telemetry does. */
export function relayTelemetry(logger: Logger, metrics: Metrics) {
  return (report: RelayReport) => {
    const { outcome, ...fields } = report;
    const count = (name: string) => metrics.addMetric(name, MetricUnit.Count, 1);
    switch (report.outcome) {
      case 'relayed':
        count(OutboxRelayMetric.relayed);
        if (report.committedAt !== undefined)
          metrics.addMetric(
            OutboxRelayMetric.relayLatency,
            MetricUnit.Milliseconds,
            Math.max(0, report.relayedAt - report.committedAt),
          );
        logger.info('outbox item relayed', { outcome, ...fields });
        break;
      case 'already-marked':
      case 'already-relayed':
        logger.info('outbox item relayed before', { outcome, ...fields });
        break;
      case 'retry':
        count(OutboxRelayMetric.retried);
        logger.warn('outbox item not relayed; the stream hands it back', { outcome, ...fields });
        break;
      case 'held-back':
        count(OutboxRelayMetric.heldBack);
        logger.info('outbox item held back behind its message group', { outcome, ...fields });
        break;
      case 'failed':
        count(OutboxRelayMetric.failed);
        logger.error('outbox item refused for good: marked FAILED, notice sent', { outcome, ...fields });
        break;
    }
  };
}

/** What a relay handler is built from besides its deployment: clients and observers a caller may put in between. */
export type RelayConfig = RelayDeployment &
  Partial<Pick<OutboxRelayOptions, 'dynamoDb' | 'sqs' | 'eventBridge' | 'signingKeys' | 'now' | 'onReport'>> & {
    readonly logger?: Logger;
  };

/** The Lambda handler of a group's relay: structured logs, EMF metrics, the relay. */
export function createRelayHandler(config: RelayConfig): RelayHandler {
  const group = config.definition.group;
  const logger = config.logger ?? new Logger({ serviceName: `${group}-outbox-relay` });
  const metrics = new Metrics({
    namespace: METRICS_NAMESPACE,
    serviceName: `${group}-outbox-relay`,
    defaultDimensions: { ConsumerGroup: group },
  });
  const telemetry = relayTelemetry(logger, metrics);
  const relay = new OutboxRelay({
    group,
    tableName: config.tableName,
    targets: config.targets,
    deadLetterQueueUrl: config.deadLetterQueueUrl,
    signingKeys:
      config.signingKeys ??
      new SecretSigningKeys(createSecretsManager(config.aws), config.signingSecret, {
        prefetch: process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined,
      }),
    dynamoDb: config.dynamoDb ?? createDynamoDb(config.aws),
    sqs: config.sqs ?? createSqs(config.aws),
    eventBridge: config.eventBridge ?? createEventBridge(config.aws),
    ...(config.now ? { now: config.now } : {}),
    onReport: (report) => {
      telemetry(report);
      config.onReport?.(report);
    },
  });
  return middy<DynamoDBStreamEvent, DynamoDBBatchResponse>()
    .use(injectLambdaContext(logger))
    .use(publishMetrics(metrics))
    .handler((event) => relay.relay(event));
}

/**
 * Publishes what the invocation recorded, as Powertools' `logMetrics` does, but says nothing when it
 * recorded nothing: an invocation whose records were all its own marks (a local poller passes them
 * all; a mapping without its filter too) has no metric to give, and is no warning.
 */
function publishMetrics(metrics: Metrics) {
  const publish = async () => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: publish, onError: publish };
}

/**
 * The generic relay function (`packages/consumers/functions/outbox-relay/handler.ts`): one per
 * publishing group, told which by `CONSUMER_GROUP`. In Lambda the handler is built during init, so a
 * refused environment fails the cold start, naming the variable.
 */
export function defineOutboxRelay(env: NodeJS.ProcessEnv = process.env) {
  const create = (config: RelayConfig) => createRelayHandler(config);
  return { create, handler: lazyHandler(() => create(relayConfigFromEnv(env)), env) };
}
