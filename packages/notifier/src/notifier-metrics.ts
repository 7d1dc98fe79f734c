import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { NOTIFIER_METRICS_NAMESPACE } from '@rocketmq-lambda/runtime/config/index.ts';
import type { DeliveryMetric, DeliveryMetrics } from './alarm-storm.ts';

/**
 * Delivery counters as CloudWatch metrics (EMF through Powertools). `DingTalkConfigurationError`
 * and `DingTalkMessageRejected` are the alarm-of-last-resort signals: their alarms must notify
 * through something other than this robot.
 */
export function powertoolsDeliveryMetrics(metrics: Metrics): DeliveryMetrics {
  return {
    count(metric: DeliveryMetric, value = 1) {
      metrics.addMetric(metric, MetricUnit.Count, value);
    },
  };
}

export const noDeliveryMetrics: DeliveryMetrics = { count() {} };

export const DEFAULT_METRICS_NAMESPACE = NOTIFIER_METRICS_NAMESPACE;
