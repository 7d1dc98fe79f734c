import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { alarmDescription, type RunbookKey } from './runbook.ts';

export interface RoutedAlarmProps {
  readonly alarmName: string;
  /** Its runbook section: the description says what happened, what to do, and links there. */
  readonly runbook: RunbookKey;
  /** What the alarm is about, first in the description (a group, a route, the bridge service). */
  readonly subject: string;
  readonly runbookUrl: string;
  /** The alarm topic; the DingTalk notifier and the operator's e-mail subscribe to it. */
  readonly topic: sns.ITopic;
  readonly metric: cloudwatch.IMetric;
  readonly threshold: number;
  readonly evaluationPeriods?: number;
  readonly comparisonOperator?: cloudwatch.ComparisonOperator;
  readonly treatMissingData?: cloudwatch.TreatMissingData;
}

/**
 * Every alarm of a deployment is named `<prefix>-…`: the alarm topic and its key admit
 * CloudWatch only on behalf of alarms matching this pattern (aws:SourceArn), so an alarm named
 * otherwise would deploy and never notify. `packages/infra/test/consumers-app.test.ts` checks every alarm.
 */
export function alarmNamePattern(prefix: string): string {
  return `${prefix}-*`;
}

/** An alarm that notifies the alarm topic when it fires and when it clears. */
export function routedAlarm(scope: Construct, id: string, props: RoutedAlarmProps): cloudwatch.Alarm {
  const alarm = new cloudwatch.Alarm(scope, id, {
    alarmName: props.alarmName,
    alarmDescription: alarmDescription(props.runbook, props.subject, props.runbookUrl),
    metric: props.metric,
    threshold: props.threshold,
    evaluationPeriods: props.evaluationPeriods ?? 1,
    comparisonOperator: props.comparisonOperator ?? cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: props.treatMissingData ?? cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  alarm.addAlarmAction(new cwActions.SnsAction(props.topic));
  alarm.addOkAction(new cwActions.SnsAction(props.topic));
  return alarm;
}
