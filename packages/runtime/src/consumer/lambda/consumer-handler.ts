import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type ConsumerGroupDefinition, METRICS_NAMESPACE } from '../../config/index.ts';
import type { RecordReport } from '../settlement.ts';
import { consumerTelemetry } from './consumer-telemetry.ts';
import { type ConsumerInternal, type RocketMQConsumerOptions, rocketmqConsumer } from './middleware.ts';

export interface ConsumerHandlerOptions<P, R>
  extends Omit<RocketMQConsumerOptions<P, R>, 'onReport' | 'group' | 'tagExpression' | 'topic' | 'ordering'> {
  /**
   * The group's catalogue entry: its name (records, metrics, DLQ), topic, tag expression and ordering come from there,
   * never restated.
   */
  definition: ConsumerGroupDefinition;
  logger?: Logger;
  metrics?: Metrics;
  /** Extra observer of every record's report (the local run's account, tests). */
  onReport?: (report: RecordReport) => void;
}

export type ConsumerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/** The Lambda handler of a RocketMQ consumer: structured logs, EMF metrics, and the consumer runtime. */
export function consumerHandler<P, R>(options: ConsumerHandlerOptions<P, R>): ConsumerHandler {
  const { group, topic, tagExpression, ordering } = options.definition;
  const logger = options.logger ?? new Logger({ serviceName: group });
  const metrics =
    options.metrics ??
    new Metrics({ namespace: METRICS_NAMESPACE, serviceName: group, defaultDimensions: { ConsumerGroup: group } });
  const telemetry = consumerTelemetry(logger, metrics);
  return middy<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal>()
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .use(
      rocketmqConsumer({
        ...options,
        group,
        topic,
        tagExpression,
        ordering,
        onReport: (report) => {
          telemetry(report);
          options.onReport?.(report);
        },
      }),
    );
}
