import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, SNSEvent } from 'aws-lambda';
import {
  type AlarmNotifier,
  type Clock,
  DEFAULT_METRICS_NAMESPACE,
  notifierFromSettings,
  notifierSettingsFromEnv,
  powertoolsDeliveryMetrics,
  systemClock,
} from '../../src/index.ts';

/** Time kept back from the Lambda timeout so a failed delivery can still fail the invocation cleanly. */
const SAFETY_MARGIN_MS = 5_000;

export interface AlarmNotifierHandlerDeps {
  logger: Logger;
  metrics: Metrics;
  clock?: Clock;
  /** Built lazily from the environment unless given (tests give one wired to the emulator). */
  notifier?: AlarmNotifier;
}

/** SNS → DingTalk. Throws when an alarm could not be delivered, so Lambda retries it and then parks it in the DLQ. */
export function createAlarmNotifierHandler(deps: AlarmNotifierHandlerDeps) {
  const clock = deps.clock ?? systemClock;
  // One per container: keeps the cached webhook secret and the SDK connections warm.
  let notifier = deps.notifier;
  const base = async (event: SNSEvent, context: Context): Promise<void> => {
    notifier ??= notifierFromSettings(notifierSettingsFromEnv(), {
      logger: deps.logger,
      metrics: powertoolsDeliveryMetrics(deps.metrics),
      clock,
    });
    await notifier.notify(event, clock.now() + context.getRemainingTimeInMillis() - SAFETY_MARGIN_MS);
  };
  return middy(base).use(injectLambdaContext(deps.logger)).use(logMetrics(deps.metrics));
}

const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'alarm-notifier' });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'alarm-notifier',
});

export const handler = createAlarmNotifierHandler({ logger, metrics });
