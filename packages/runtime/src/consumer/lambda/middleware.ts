import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { METRICS_NAMESPACE } from '../../config/index.ts';
import type { ConsumerEngine } from '../consumer-engine.ts';
import type { BatchResult } from '../settlement.ts';
import { type ReportObserver, reportEach } from '../steps/report.ts';
import { consumerTelemetry } from './consumer-telemetry.ts';

/** Per-request state, kept where Middy keeps it (`request.internal`): the batch as the engine routed it. */
export interface ConsumerInternal extends Record<string, unknown> {
  rocketmqBatch?: BatchResult;
}

/**
 * The consumer runtime as a Middy middleware: a thin adapter over a built `ConsumerEngine`,
 * which calls the business itself. The stack needs no handler of its own.
 *
 * - `before`: the engine consumes the batch: every record settled and routed once.
 * - `after`: the answer is the routed response; then every report goes to `onReport`
 *   (logs, metrics, the local run's account).
 * - `onError`: an observer failed after routing: the answer stays the routed one (a failed
 *   invocation would make Lambda send every record again, dead-lettered ones included), set
 *   rather than returned so that the `onError` of middlewares used before this one (Powertools'
 *   metric flush, its logger's cleanup) still runs. Anything that failed before routing (an
 *   envelope key that cannot be read) fails the invocation: Lambda retries the whole batch.
 */
export function rocketmqConsumer<P, R>(
  engine: ConsumerEngine<P, R>,
  onReport?: ReportObserver,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal> {
  return {
    before: async (request) => {
      const invocation = engine.invocation(request.context.getRemainingTimeInMillis?.());
      request.internal.rocketmqBatch = await engine.consume(request.event, invocation);
    },
    after: (request) => {
      const batch = request.internal.rocketmqBatch!;
      request.response = batch.response;
      reportEach(batch.reports, onReport);
    },
    onError: (request) => {
      const batch = request.internal.rocketmqBatch;
      if (!batch) return;
      console.error(
        JSON.stringify({
          message: 'consumer batch settled, then failed after routing',
          group: engine.group,
          error: String(request.error),
        }),
      );
      request.response = batch.response;
    },
  };
}

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
