import { ConsumerMetric } from '@rocketmq-lambda/runtime/config/index.ts';
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import type { RocketMQConsumerGroup } from './consumer-group.ts';
import type { GroupOutbox } from './group-outbox.ts';

export interface ConsumerDashboardProps {
  readonly prefix: string;
  readonly groups: readonly RocketMQConsumerGroup[];
  /** The publishing groups' outboxes: a row each, under their group's. */
  readonly outboxes?: readonly GroupOutbox[];
}

/** One dashboard per deployment: a row per consumer group with outcomes, failures, queue health and the function. */
export class ConsumerDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: ConsumerDashboardProps) {
    super(scope, id);
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `${props.prefix}-rocketmq-consumers`,
      defaultInterval: Duration.hours(6),
    });
    for (const group of props.groups) {
      this.dashboard.addWidgets(...rowFor(group));
      const outbox = props.outboxes?.find((o) => o.group === group);
      if (outbox) this.dashboard.addWidgets(...outboxRowFor(outbox));
    }
  }
}

function rowFor(group: RocketMQConsumerGroup): cloudwatch.IWidget[] {
  const minute = Duration.minutes(1);
  const height = 6;
  return [
    new cloudwatch.TextWidget({ markdown: `### ${group.group}`, width: 24, height: 1 }),
    new cloudwatch.GraphWidget({
      title: `${group.group}: outcomes`,
      width: 8,
      height,
      left: [
        group.consumerMetric(ConsumerMetric.processed, minute).with({ label: 'processed' }),
        group.consumerMetric(ConsumerMetric.duplicates, minute).with({ label: 'duplicates suppressed' }),
        group.consumerMetric(ConsumerMetric.filtered, minute).with({ label: 'filtered in the function' }),
        // Deleted by Lambda unread: anomalies while the routes carry only the group's tags.
        ...(group.filtersAtEventSource
          ? [group.filteredOutMetric(minute).with({ label: 'filtered out by the event source' })]
          : []),
      ],
    }),
    new cloudwatch.GraphWidget({
      title: `${group.group}: failures`,
      width: 8,
      height,
      left: [
        group.consumerMetric(ConsumerMetric.retried, minute).with({ label: 'retried' }),
        group.consumerMetric(ConsumerMetric.conflicts, minute).with({ label: 'payload conflicts' }),
        group.consumerMetric(ConsumerMetric.permanentErrors, minute).with({ label: 'permanent errors' }),
        group.consumerMetric(ConsumerMetric.deadLettered, minute).with({ label: 'dead-lettered' }),
        ...(group.definition.ordering === 'orderly'
          ? [
              group
                .consumerMetric(ConsumerMetric.heldBack, minute)
                .with({ label: 'held back behind their message group' }),
            ]
          : []),
      ],
    }),
    new cloudwatch.GraphWidget({
      title: `${group.group}: queues`,
      width: 8,
      height,
      left: [
        group.queue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'source visible',
        }),
        group.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'DLQ depth',
        }),
      ],
      right: [
        group.queue.metricApproximateAgeOfOldestMessage({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'oldest message age (s)',
        }),
      ],
    }),
    new cloudwatch.GraphWidget({
      title: `${group.group}: function`,
      width: 12,
      height,
      left: [
        group.function.metricErrors({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'errors' }),
        group.function.metricThrottles({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'throttles' }),
      ],
      right: [
        group.function.metricDuration({
          period: minute,
          statistic: cloudwatch.Stats.percentile(99),
          label: 'duration p99 (ms)',
        }),
      ],
    }),
    new cloudwatch.AlarmStatusWidget({ title: `${group.group}: alarms`, alarms: group.alarms, width: 12, height }),
  ];
}

/** A publishing group's relay: how far behind its stream it reads, what it failed, what waits in its DLQ. */
function outboxRowFor(outbox: GroupOutbox): cloudwatch.IWidget[] {
  const minute = Duration.minutes(1);
  const height = 6;
  const name = `${outbox.group.group} outbox`;
  return [
    new cloudwatch.GraphWidget({
      title: `${name}: relay lag`,
      width: 8,
      height,
      left: [outbox.iteratorAgeMetric(minute).with({ label: 'iterator age max (ms)' })],
    }),
    new cloudwatch.GraphWidget({
      title: `${name}: relay`,
      width: 8,
      height,
      left: [
        outbox.relay.metricInvocations({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'invocations' }),
        outbox.relay.metricErrors({ period: minute, statistic: cloudwatch.Stats.SUM, label: 'errors' }),
      ],
      right: [
        outbox.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: minute,
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'relay DLQ depth',
        }),
      ],
    }),
    new cloudwatch.AlarmStatusWidget({ title: `${name}: alarms`, alarms: outbox.alarms, width: 8, height }),
  ];
}
