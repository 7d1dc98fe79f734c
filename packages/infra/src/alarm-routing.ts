import {
  ALARM_STORM_TABLE,
  DLQ_RETENTION_DAYS,
  NOTIFIER_METRICS_NAMESPACE,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CHECKOV_SKIPS, skipCheckov } from './checkov.ts';
import type { StageDataKey } from './data-key.ts';
import { restrictKeyManagement } from './deployment-guards.ts';
import { ProjectFunction } from './project-function.ts';
import { ProtectedSecret } from './protected-secret.ts';
import { guardQueue, guardTable } from './resource-guards.ts';
import { alarmNamePattern } from './routed-alarm.ts';
import { alarmDescription, type RunbookKey } from './runbook.ts';

export const NOTIFIER_ENTRY = 'packages/notifier/functions/alarm-notifier/handler.ts';
export const NOTIFIER_SERVICE_NAME = 'alarm-notifier';

export interface AlarmRoutingProps {
  readonly prefix: string;
  readonly runbookUrl: string;
  /** The stage's data key: the rate-limit table and the notifier's log group are encrypted with it. */
  readonly dataKey: StageDataKey;
  /** IANA zone the DingTalk messages show times in (default Asia/Shanghai). */
  readonly alarmTimeZone?: string;
  /**
   * Name of an existing Secrets Manager secret with the robot's `{webhookUrl, secret, keyword?, atMobiles?}`.
   * Without it the stack creates an empty secret `<prefix>/dingtalk-robot` for the operator to fill in.
   */
  readonly dingTalkSecretName?: string;
  /**
   * Reserved concurrency of the notifier (default 2). Robot rate limiting is shared through a
   * table, so more containers only wait; 0 or undefined-by-context leaves it unreserved.
   */
  readonly notifierReservedConcurrency?: number;
  /** An address that receives every alarm by e-mail too: the path that still works when DingTalk does not. */
  readonly operatorEmail?: string;
}

/**
 * Where alarms go: one SNS topic encrypted with a key CloudWatch may use, the DingTalk
 * notifier subscribed to it (own DLQ, the robot's secret read at run time, the shared
 * rate-limit table), and the alarms about the notifier itself.
 */
export class AlarmRouting extends Construct {
  readonly topic: sns.Topic;
  readonly key: kms.Key;
  readonly notifier: lambda.IFunction;
  readonly notifierDeadLetterQueue: sqs.Queue;
  readonly webhookSecret: secretsmanager.ISecret;
  /** The robot's secret under its own key, readable by the notifier (and the operators, for `alarm:test`) alone. */
  readonly robotSecret: ProtectedSecret;
  readonly stormTable: dynamodb.Table;
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly notifierRole: iam.IRole;

  constructor(scope: Construct, id: string, props: AlarmRoutingProps) {
    super(scope, id);
    // CloudWatch acts for this deployment's alarms only (confused deputy): the same conditions
    // on the key and on the topic. Without the key grant its publishes are silently dropped.
    const fromOwnAlarms = this.fromOwnAlarms(props.prefix);
    this.key = this.topicKey(props.prefix, fromOwnAlarms);
    this.topic = this.alarmTopic(props.prefix, fromOwnAlarms);
    this.robotSecret = this.dingTalkRobotSecret(props);
    this.webhookSecret = this.robotSecret.secret;
    this.stormTable = this.rateLimitTable(props.dataKey);
    this.notifierDeadLetterQueue = this.notifierDeadLetters(props.prefix);
    const notifier = this.notifierFunction(props);
    this.notifier = notifier.function;
    this.notifierRole = notifier.role;
    // Also the subscription's DLQ: SNS parks notifications it could not hand to Lambda at all.
    this.topic.addSubscription(
      new subscriptions.LambdaSubscription(this.notifier, { deadLetterQueue: this.notifierDeadLetterQueue }),
    );
    if (props.operatorEmail) this.topic.addSubscription(new subscriptions.EmailSubscription(props.operatorEmail));

    this.alarm('NotifierDeadLetters', 'notifierDeadLetters', props, {
      metric: this.notifierDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
    });
    this.alarm('NotifierErrors', 'notifierErrors', props, {
      metric: this.notifier.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
    });
  }

  /** The condition that holds for CloudWatch acting on this deployment's alarms, and no one else's. */
  private fromOwnAlarms(prefix: string) {
    const stack = Stack.of(this);
    return {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: {
        'aws:SourceArn': stack.formatArn({
          service: 'cloudwatch',
          resource: 'alarm',
          resourceName: alarmNamePattern(prefix),
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      },
    };
  }

  /** The topic's key, which CloudWatch may use for this deployment's alarms. */
  private topicKey(prefix: string, fromOwnAlarms: ReturnType<AlarmRouting['fromOwnAlarms']>): kms.Key {
    const key = new kms.Key(this, 'TopicKey', {
      description: `Encrypts the ${prefix} alarm topic; CloudWatch must be allowed to use it`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    // A changed key policy that drops CloudWatch's grant silences every alarm: only the deployment changes it.
    restrictKeyManagement(key);
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: fromOwnAlarms,
      }),
    );
    return key;
  }

  /** The alarm topic: CloudWatch publishes to it for this deployment's alarms, and no IAM principal does. */
  private alarmTopic(prefix: string, fromOwnAlarms: ReturnType<AlarmRouting['fromOwnAlarms']>): sns.Topic {
    const topic = new sns.Topic(this, 'AlarmTopic', {
      topicName: `${prefix}-alarms`,
      displayName: `${prefix} RocketMQ consumer alarms`,
      masterKey: this.key,
      enforceSSL: true,
    });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: fromOwnAlarms,
      }),
    );
    // An identity policy with sns:Publish reaches a topic of the account unless the topic says
    // otherwise: no IAM principal may post a made-up alarm to the on-call group. CloudWatch is an
    // AWS service (aws:PrincipalIsAWSService), which this Deny leaves to the Allow above.
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'OnlyCloudWatchPublishes',
        effect: iam.Effect.DENY,
        principals: [new iam.StarPrincipal()],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: { BoolIfExists: { 'aws:PrincipalIsAWSService': 'false' } },
      }),
    );
    return topic;
  }

  private dingTalkRobotSecret(props: AlarmRoutingProps): ProtectedSecret {
    const robot = new ProtectedSecret(this, 'DingTalkRobot', {
      secretName: props.dingTalkSecretName ?? `${props.prefix}/dingtalk-robot`,
      description:
        'DingTalk robot: JSON {"webhookUrl","secret","keyword"?,"atMobiles"?}; put the value after the first deployment (docs/deploy.md)',
      // A secret the stage names already exists; the stack creates its own otherwise.
      ...(props.dingTalkSecretName ? {} : { generate: {} }),
    });
    Validations.of(robot.secret).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SMG4',
      reason:
        'The robot access token and signing secret are issued by DingTalk and can only be reset in the DingTalk group settings, so a rotation function cannot mint new ones; rotation is a documented manual step (docs/deploy.md, rotating the DingTalk robot).',
    });
    return robot;
  }

  /** The robot's shared rate limit: token buckets and a day of delivery tombstones. */
  private rateLimitTable(dataKey: StageDataKey): dynamodb.Table {
    return new dynamodb.Table(this, ALARM_STORM_TABLE.nameSuffix, {
      partitionKey: { name: ALARM_STORM_TABLE.partitionKey.name, type: dynamodb.AttributeType.STRING },
      sortKey: { name: ALARM_STORM_TABLE.sortKey.name, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: ALARM_STORM_TABLE.timeToLiveAttribute,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: dataKey.key,
      // Token buckets and a day of delivery tombstones: nothing worth keeping after the stack.
      removalPolicy: RemovalPolicy.DESTROY,
    });
  }

  private notifierDeadLetters(prefix: string): sqs.Queue {
    const queue = new sqs.Queue(this, 'NotifierDeadLetterQueue', {
      queueName: `${prefix}-alarm-notifier-dlq`,
      retentionPeriod: Duration.days(DLQ_RETENTION_DAYS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason:
        'This queue is itself a dead-letter queue: the on-failure destination of the notifier and the DLQ of its SNS subscription (cdk-nag only recognises SQS redrive targets). A DLQ of a DLQ would hide failures further; its depth is alarmed instead.',
    });
    return queue;
  }

  /** The DingTalk notifier: the robot's secret read at run time, the rate-limit table, failures to its DLQ. */
  private notifierFunction(props: AlarmRoutingProps): ProjectFunction {
    const reservedConcurrency =
      props.notifierReservedConcurrency === 0 ? undefined : (props.notifierReservedConcurrency ?? 2);
    const notifier = new ProjectFunction(this, 'Notifier', {
      functionName: `${props.prefix}-${NOTIFIER_SERVICE_NAME}`,
      entry: NOTIFIER_ENTRY,
      description: 'CloudWatch alarms from SNS to the DingTalk robot',
      timeout: Duration.seconds(60),
      memorySize: 256,
      logKey: props.dataKey.key,
      reservedConcurrentExecutions: reservedConcurrency,
      environment: {
        // Which secret, never its value: the notifier reads the value at run time.
        DINGTALK_SECRET_ID: props.dingTalkSecretName ?? this.webhookSecret.secretArn,
        [ALARM_STORM_TABLE.tableNameEnv]: this.stormTable.tableName,
        ALARM_TIME_ZONE: props.alarmTimeZone ?? 'Asia/Shanghai',
        POWERTOOLS_SERVICE_NAME: NOTIFIER_SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: NOTIFIER_METRICS_NAMESPACE,
      },
    });
    skipCheckov(
      notifier.function,
      CHECKOV_SKIPS.notifierDeadLetters,
      ...(reservedConcurrency === undefined ? [CHECKOV_SKIPS.notifierUnreserved] : []),
    );
    skipCheckov(this.notifierDeadLetterQueue, CHECKOV_SKIPS.queueSqsManagedEncryption);
    notifier.function.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
      onFailure: new SqsDestination(this.notifierDeadLetterQueue),
    });
    this.robotSecret.grantRead(notifier.role);
    props.dataKey.grantTableUse(notifier.role);
    notifier.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        // BatchWriteItem: delivered alarms become tombstones and leave the backlog in batches.
        actions: [
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:Query',
          'dynamodb:BatchWriteItem',
        ],
        resources: [this.stormTable.tableArn],
      }),
    );
    return notifier;
  }

  /**
   * Only the deployment changes the notifier's DLQ and the rate-limit table; only `operators` take letters off the
   * DLQ; only the notifier and `operators` write the table (packages/infra/src/resource-guards.ts).
   */
  guard(operators: readonly string[]): void {
    guardQueue(this.notifierDeadLetterQueue, operators);
    guardTable(this.stormTable, [this.notifierRole.roleArn, ...operators]);
  }

  private alarm(id: string, runbook: RunbookKey, props: AlarmRoutingProps, spec: { metric: cloudwatch.IMetric }): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: `${props.prefix}-alarm-notifier-${id === 'NotifierErrors' ? 'errors' : 'dead-letters'}`,
      alarmDescription: alarmDescription(runbook, NOTIFIER_SERVICE_NAME, props.runbookUrl),
      metric: spec.metric,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // The notifier may be what is broken: these also reach the operator e-mail, if one is set.
    alarm.addAlarmAction(new cwActions.SnsAction(this.topic));
    alarm.addOkAction(new cwActions.SnsAction(this.topic));
    this.alarms.push(alarm);
  }
}
