import { randomUUID } from 'node:crypto';
import type { SNSEvent } from 'aws-lambda';

/**
 * Realistic CloudWatch → SNS payloads: the default for `npm run alarm:test` and the base of the
 * tests. Shapes follow what CloudWatch actually publishes (`Trigger` for one metric,
 * `Trigger.Metrics[]` for metric math).
 */

export type CloudWatchAlarmJson = Record<string, unknown>;

export function dlqAlarmJson(overrides: CloudWatchAlarmJson = {}): CloudWatchAlarmJson {
  return {
    AlarmName: 'orders-consumer-dlq-not-empty',
    AlarmDescription:
      'Messages reached the DLQ of consumer group orders-consumer: they failed every retry.\n' +
      'Look at the failed messages in the DLQ, fix the cause, then redrive them to the source queue.',
    AWSAccountId: '123456789012',
    AlarmConfigurationUpdatedTimestamp: '2026-11-01T08:00:00.000+0000',
    NewStateValue: 'ALARM',
    NewStateReason:
      'Threshold Crossed: 1 out of the last 1 datapoints [3.0 (30/11/26 03:23:00)] was greater than the threshold (0.0) (minimum 1 datapoint for OK -> ALARM transition).',
    StateChangeTime: '2026-11-30T03:24:34.803+0000',
    Region: 'Asia Pacific (Tokyo)',
    AlarmArn: 'arn:aws:cloudwatch:ap-northeast-1:123456789012:alarm:orders-consumer-dlq-not-empty',
    OldStateValue: 'OK',
    OKActions: [],
    AlarmActions: ['arn:aws:sns:ap-northeast-1:123456789012:alarms'],
    InsufficientDataActions: [],
    Trigger: {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      StatisticType: 'Statistic',
      Statistic: 'MAXIMUM',
      Unit: null,
      Dimensions: [{ value: 'orders-consumer-dlq', name: 'QueueName' }],
      Period: 60,
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0.0,
      TreatMissingData: 'notBreaching',
      EvaluateLowSampleCountPercentile: '',
    },
    ...overrides,
  };
}

export function metricMathAlarmJson(overrides: CloudWatchAlarmJson = {}): CloudWatchAlarmJson {
  return {
    AlarmName: 'payments-consumer-error-rate',
    AlarmDescription: 'More than 5% of payment messages fail. Check the function logs for the failing message ids.',
    AWSAccountId: '123456789012',
    NewStateValue: 'ALARM',
    NewStateReason: 'Threshold Crossed: 1 datapoint [7.5 (30/11/26 03:20:00)] was greater than the threshold (5.0).',
    StateChangeTime: '2026-11-30T03:25:01.120+0000',
    Region: 'Asia Pacific (Tokyo)',
    AlarmArn: 'arn:aws:cloudwatch:ap-northeast-1:123456789012:alarm:payments-consumer-error-rate',
    OldStateValue: 'OK',
    Trigger: {
      Period: 300,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 5.0,
      TreatMissingData: 'missing',
      EvaluateLowSampleCountPercentile: '',
      Metrics: [
        { Expression: '100 * errors / invocations', Id: 'rate', Label: 'Error rate (%)', ReturnData: true },
        {
          Id: 'errors',
          MetricStat: {
            Metric: { Dimensions: [{ value: 'payments-consumer', name: 'FunctionName' }], MetricName: 'Errors', Namespace: 'AWS/Lambda' },
            Period: 300,
            Stat: 'Sum',
          },
          ReturnData: false,
        },
        {
          Id: 'invocations',
          MetricStat: {
            Metric: { Dimensions: [{ value: 'payments-consumer', name: 'FunctionName' }], MetricName: 'Invocations', Namespace: 'AWS/Lambda' },
            Period: 300,
            Stat: 'Sum',
          },
          ReturnData: false,
        },
      ],
    },
    ...overrides,
  };
}

/** Wraps a message the way SNS delivers it to Lambda. */
export function snsEvent(message: string | CloudWatchAlarmJson, options: { subject?: string; messageId?: string; timestamp?: string } = {}): SNSEvent {
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  const alarm = typeof message === 'string' ? null : message;
  return {
    Records: [
      {
        EventSource: 'aws:sns',
        EventVersion: '1.0',
        EventSubscriptionArn: 'arn:aws:sns:ap-northeast-1:123456789012:alarms:6a1c1a56-0000-4000-8000-000000000000',
        Sns: {
          Type: 'Notification',
          MessageId: options.messageId ?? randomUUID(),
          TopicArn: 'arn:aws:sns:ap-northeast-1:123456789012:alarms',
          Subject:
            options.subject ??
            (alarm ? `${String(alarm.NewStateValue)}: "${String(alarm.AlarmName)}" in ${String(alarm.Region)}`.slice(0, 100) : 'test'),
          Message: body,
          Timestamp: options.timestamp ?? new Date().toISOString(),
          SignatureVersion: '1',
          Signature: 'EXAMPLE',
          SigningCertUrl: 'https://sns.ap-northeast-1.amazonaws.com/SimpleNotificationService-0000.pem',
          UnsubscribeUrl: 'https://sns.ap-northeast-1.amazonaws.com/?Action=Unsubscribe',
          MessageAttributes: {},
        },
      },
    ],
  };
}
