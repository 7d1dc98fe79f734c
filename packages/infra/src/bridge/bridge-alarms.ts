import { BRIDGE_METRICS_NAMESPACE, BridgeMetric } from '@rocketmq-lambda/runtime/config/index.ts';
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { routedAlarm } from '../routed-alarm.ts';
import type { RocketMQBridgeRoute } from './bridge-service.ts';

export interface RocketMQBridgeAlarmsProps {
  readonly prefix: string;
  readonly service: ecs.FargateService;
  readonly routes: readonly RocketMQBridgeRoute[];
  /** Tasks that must be running (the scaling minimum). */
  readonly minimumTasks: number;
  readonly topic: sns.ITopic;
  readonly runbookUrl: string;
  /** A route whose newest forwarded message was stored longer ago than this alarms. */
  readonly lagThreshold: Duration;
}

/**
 * What watches the bridge, notified to the same alarm topic (and DingTalk robot) as the
 * consumers: per route, forward failures, receive failures and lag; for the service, its
 * running tasks. RocketMQ 5's gRPC API has no consumer-lag call, so lag is the store-to-forward
 * delay of the messages the route forwards (`ForwardLag`); a route that forwards nothing
 * reports no lag, which is why the task count and receive failures are watched too.
 */
export class RocketMQBridgeAlarms extends Construct {
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: RocketMQBridgeAlarmsProps) {
    super(scope, id);
    const fiveMinutes = Duration.minutes(5);
    const common = { topic: props.topic, runbookUrl: props.runbookUrl };
    for (const route of props.routes) {
      const routeMetric = (metricName: string, statistic: string) =>
        new cloudwatch.Metric({
          namespace: BRIDGE_METRICS_NAMESPACE,
          metricName,
          dimensionsMap: { ConsumerGroup: route.group, Topic: route.topic },
          period: fiveMinutes,
          statistic,
        });
      const subject = `bridge route ${route.group}`;
      const name = (what: string) => `${props.prefix}-bridge-${route.group}-${what}`;
      this.alarms.push(
        routedAlarm(this, `${route.group}-ForwardFailures`, {
          ...common,
          alarmName: name('forward-failures'),
          runbook: 'bridgeForwardFailures',
          subject,
          metric: routeMetric(BridgeMetric.forwardFailed, cloudwatch.Stats.SUM),
          threshold: 1,
        }),
        // One failed long poll is a blip (the pump backs off and retries); ten minutes of them is an outage.
        routedAlarm(this, `${route.group}-ReceiveFailures`, {
          ...common,
          alarmName: name('receive-failures'),
          runbook: 'bridgeReceiveFailures',
          subject,
          metric: routeMetric(BridgeMetric.receiveFailed, cloudwatch.Stats.SUM),
          threshold: 3,
          evaluationPeriods: 2,
        }),
        routedAlarm(this, `${route.group}-Lag`, {
          ...common,
          alarmName: name('lag'),
          runbook: 'bridgeLag',
          subject,
          metric: routeMetric(BridgeMetric.forwardLag, cloudwatch.Stats.MAXIMUM),
          threshold: props.lagThreshold.toMilliseconds(),
          evaluationPeriods: 2,
        }),
      );
    }
    const service = props.service;
    this.alarms.push(
      routedAlarm(this, 'RunningTasks', {
        ...common,
        alarmName: `${props.prefix}-bridge-running-tasks`,
        runbook: 'bridgeTasks',
        subject: 'bridge service',
        // Container Insights (enabled on the bridge's cluster) publishes the running count per service.
        metric: new cloudwatch.Metric({
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          dimensionsMap: { ClusterName: service.cluster.clusterName, ServiceName: service.serviceName },
          period: Duration.minutes(1),
          statistic: cloudwatch.Stats.MINIMUM,
        }),
        threshold: props.minimumTasks,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 5,
        // No data means no task reports at all: the worst case, not a quiet one.
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      }),
    );
  }
}
