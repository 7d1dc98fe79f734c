import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { METRICS_NAMESPACE } from '../../config/index.ts';
import type { ConsumerEngine } from '../consumer-engine.ts';
import type { ReportObserver } from '../steps/report.ts';
import { consumerTelemetry } from './consumer-telemetry.ts';
import { type ConsumerInternal, rocketmqConsumer } from './middleware.ts';

export type ConsumerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * The Lambda handler of a RocketMQ consumer: structured logs, EMF metrics, and the built engine.
 * `logger` is where the log lines go (default: Powertools' to stdout); `onReport` an extra
 * observer of every record's report (the local run's account, tests).
 */
export function consumerHandler<P, R>(
  engine: ConsumerEngine<P, R>,
  observers: { logger?: Logger; onReport?: ReportObserver } = {},
): ConsumerHandler {
  const group = engine.group;
  const logger = observers.logger ?? new Logger({ serviceName: group });
  const metrics = new Metrics({
    namespace: METRICS_NAMESPACE,
    serviceName: group,
    defaultDimensions: { ConsumerGroup: group },
  });
  const telemetry = consumerTelemetry(logger, metrics);
  return middy<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal>()
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .use(
      rocketmqConsumer(engine, (report) => {
        telemetry(report);
        observers.onReport?.(report);
      }),
    );
}
