import {
  assertCatalogueEntry,
  assertOrderingFits,
  BRIDGE_EVENT_SOURCE_PREFIX,
  CONSUMER_ENV,
  type ConsumerGroupDefinition,
  ConsumerMetric,
  type DeliveryLifetimes,
  deadLetterQueueName,
  type GroupTuning,
  lifetimeEnvironment,
  lifetimesOf,
  METRICS_NAMESPACE,
  OUTBOX_ENV,
  type OutsideServiceName,
  queueName,
  recordIdPrefix,
  TABLE_ENV,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { ROCKETMQ_EVENT_TYPE } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CHECKOV_SKIPS, skipCheckov } from './checkov.ts';
import type { StageDataKey } from './data-key.ts';
import type { VpcPlacement } from './deployment-settings.ts';
import type { StageTracing } from './function-tracing.ts';
import { type ServiceSetting, serviceAccess } from './outside-service.ts';
import { type FunctionNetwork, ProjectFunction } from './project-function.ts';
import type { ProtectedSecret } from './protected-secret.ts';
import { guardQueue } from './resource-guards.ts';
import { tagEventFilters, tagFilterPatterns, tagRoutePatterns } from './rocketmq-tag-filter.ts';
import { routedAlarm } from './routed-alarm.ts';
import type { RunbookKey } from './runbook.ts';
import { restrictDeadLetterSenders, restrictQueueSenders, type Senders } from './sender-policy.ts';
import type { ConsumerTables } from './tables.ts';

/** How one group's function and event source are sized; every value has a production default. */
export interface ConsumerTuning {
  /** Records per invocation (default 10; at most 10 on an orderly group's FIFO queue). */
  readonly batchSize?: number;
  /**
   * How long Lambda gathers records before invoking (default 1 s; required for batches over 10; none on an orderly
   * group's FIFO queue).
   */
  readonly maxBatchingWindow?: Duration;
  /** Concurrent invocations the event source may start, 2–1000 (default 10): the DynamoDB write rate ceiling. */
  readonly maxConcurrency?: number;
  /** Function timeout (default 30 s); the queue's visibility timeout is derived from it. */
  readonly timeout?: Duration;
  readonly memorySize?: number;
  /** Transactional groups: commit a batch in as few transactions as DynamoDB allows (`CONSUMER_PACKING`). */
  readonly packing?: boolean;
  /**
   * Concurrent groups: alarm when the oldest message has waited this long (default 15 min). Orderly groups derive
   * theirs from the retry policy.
   */
  readonly oldestMessageAlarmAge?: Duration;
  /**
   * Filter on the RocketMQ tag in the event source (default true): unsubscribed messages never
   * invoke the function, but Lambda also drops bodies it cannot read (not JSON, no tag). `false`
   * lets every message reach the consumer, which acknowledges other tags as filtered and
   * dead-letters unreadable bodies with a reason.
   */
  readonly filterAtEventSource?: boolean;
}

export interface RocketMQConsumerGroupProps extends ConsumerTuning {
  /** The group's catalogue entry (`CONSUMER_GROUPS`): topic, tag expression, handler, tables, redrive count. */
  readonly definition: ConsumerGroupDefinition;
  readonly prefix: string;
  readonly tables: ConsumerTables;
  /** The stage's data key: the tables and the function's log group are encrypted with it. */
  readonly dataKey: StageDataKey;
  /** Alarm and OK actions go here. */
  readonly alarmTopic: sns.ITopic;
  /** Where alarm descriptions link to (`…/docs/runbook.md`). */
  readonly runbookUrl: string;
  /** When given, a rule on this bus routes the group's topic to its source queue. */
  readonly eventBus?: events.IEventBus;
  /**
   * The stage's outside services; the group's function gets those its catalogue entry names, and may call only those.
   */
  readonly services?: Partial<Record<OutsideServiceName, ServiceSetting>>;
  /** Run the function in this VPC (default: outside any VPC). */
  readonly vpc?: VpcPlacement;
  /** The bridge's envelope signing key: given, the function reads it and refuses unsigned envelopes. */
  readonly envelopeSigningKey?: ProtectedSecret;
  /** The stack's secrets of its bearer-authenticated outside services, by name. */
  readonly serviceTokens?: Partial<Record<OutsideServiceName, ProtectedSecret>>;
  /** IAM roles allowed to send to the DLQ besides the group's consumer (the bridge, senders, operators). */
  readonly deadLetterSenders?: readonly string[];
  /** The stage's tracing back end (default: off). */
  readonly tracing?: StageTracing;
}

/** A catalogue entry's tuning (plain numbers) as construct props. */
export function tuningOf(tuning: GroupTuning | undefined): ConsumerTuning {
  if (!tuning) return {};
  const { maxBatchingWindowSeconds, timeoutSeconds, ...rest } = tuning;
  return {
    ...rest,
    ...(maxBatchingWindowSeconds === undefined
      ? {}
      : { maxBatchingWindow: Duration.seconds(maxBatchingWindowSeconds) }),
    ...(timeoutSeconds === undefined ? {} : { timeout: Duration.seconds(timeoutSeconds) }),
  };
}

/** Actions a consumer performs on each of its tables; TransactWriteItems is authorised per item action. */
export const CONSUMER_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:ConditionCheckItem',
] as const;

/**
 * The group's lifetimes, once its entry is known coherent. The ordering, the retry policy and the record TTL are stated
 * once in the catalogue; the queue type, the redrive count and both retentions derive from them, and an incoherent
 * entry (or stage tuning an orderly group cannot honour) fails the synth here, and so does an entry whose tables miss
 * the one its strategy keeps its records in.
 */
function coherentLifetimes(props: RocketMQConsumerGroupProps): ReturnType<typeof lifetimesOf> {
  const def = props.definition;
  assertCatalogueEntry(def);
  const lifetimes = lifetimesOf(def);
  assertOrderingFits(def.group, def.ordering, {
    packing: props.packing,
    batchSize: props.batchSize,
    maxBatchingWindowSeconds: props.maxBatchingWindow?.toSeconds(),
    tables: def.tables,
    messageGroupFrom: def.messageGroupFrom,
  });
  return lifetimes;
}

/** packages/runtime/src/config's FIFO_QUEUE_ATTRIBUTES, as CDK props (packages/infra/test compares the two). */
function fifoQueueProps(def: ConsumerGroupDefinition): Partial<sqs.QueueProps> {
  return def.ordering === 'orderly'
    ? {
        fifo: true,
        contentBasedDeduplication: false,
        deduplicationScope: sqs.DeduplicationScope.MESSAGE_GROUP,
        fifoThroughputLimit: sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      }
    : {};
}

/**
 * One RocketMQ consumer group on AWS: source queue + DLQ (redrive after the catalogue's count),
 * the consumer function with a tag-filtered SQS event source, an EventBridge route for bridges
 * that publish there, and the alarms an operator needs, all pointing at the alarm topic. An
 * orderly group's queues are FIFO and its alarms include one for a blocked message group.
 */
export class RocketMQConsumerGroup extends Construct {
  readonly group: string;
  /** The catalogue entry this group was built from (the bridge derives its route from it). */
  readonly definition: ConsumerGroupDefinition;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly function: lambda.IFunction;
  /** The consumer as built, to add what a publishing group's outbox gives it. */
  private readonly consumerFunction: ProjectFunction;
  /** The consumer function's role: the only principal of the stack that sends to the DLQ. */
  readonly role: iam.IRole;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly rule?: events.Rule;
  readonly eventSourceMappingId: string;
  /** Lambda filters the group's tags in the event source (and deletes what does not match). */
  readonly filtersAtEventSource: boolean;

  constructor(scope: Construct, id: string, props: RocketMQConsumerGroupProps) {
    super(scope, id);
    const def = props.definition;
    this.definition = def;
    this.group = def.group;
    const orderly = def.ordering === 'orderly';
    const timeout = props.timeout ?? Duration.seconds(30);
    const { lifetimes, recordTtlSeconds } = coherentLifetimes(props);
    const batchingWindow = orderly ? undefined : (props.maxBatchingWindow ?? Duration.seconds(1));
    this.deadLetterQueue = this.deadLetters(props, lifetimes);
    // Dead letters can be moved back to the source queue only by a DLQ redrive naming it.
    this.queue = new sqs.Queue(this, 'Queue', {
      queueName: queueName(props.prefix, def.group, def.ordering ?? 'concurrent'),
      ...fifoQueueProps(def),
      // Lambda's guidance: at least six times the function timeout, plus the batching window.
      visibilityTimeout: Duration.seconds(6 * timeout.toSeconds() + (batchingWindow?.toSeconds() ?? 0)),
      // Shorter than the DLQ's: a dead letter keeps its original enqueue time.
      retentionPeriod: Duration.seconds(lifetimes.queues.sourceRetentionSeconds),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: lifetimes.queues.maxReceiveCount },
    });

    const consumer = this.consumer(props, timeout, lifetimeEnvironment(lifetimes, recordTtlSeconds));
    this.consumerFunction = consumer;
    this.function = consumer.function;
    this.role = consumer.role;
    // A `*` group must see every message, tagged or not: it has no filter to put there.
    this.filtersAtEventSource = (props.filterAtEventSource ?? true) && tagFilterPatterns(def.tagExpression).length > 0;
    this.eventSourceMappingId = this.subscribe(consumer.function, props, batchingWindow);

    // EventBridge does not deliver events in order, so no rule may feed an orderly group: its
    // bridge sends to the FIFO queue itself, with the message group and the msgId as deduplication id.
    if (props.eventBus && !orderly) this.rule = this.routeTopic(props.eventBus, def);
    this.createAlarms(props, lifetimes.blockedGroupAgeSeconds(timeout.toSeconds()));
  }

  /**
   * The DLQ, which only the group's own source queue may name in a redrive policy: SQS's move is no SendMessage, so a
   * queue of someone else's pointed here would otherwise bypass the DLQ's sender policy.
   */
  private deadLetters(props: RocketMQConsumerGroupProps, lifetimes: DeliveryLifetimes): sqs.Queue {
    const def = props.definition;
    const ordering = def.ordering ?? 'concurrent';
    const deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      queueName: deadLetterQueueName(props.prefix, def.group, ordering),
      retentionPeriod: Duration.seconds(lifetimes.queues.deadLetterRetentionSeconds),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      ...fifoQueueProps(def),
    });
    // The source queue's ARN is built from its name, not referenced: the source queue already refers to the DLQ.
    const ownSource = sqs.Queue.fromQueueArn(
      this,
      'OwnSource',
      Stack.of(this).formatArn({ service: 'sqs', resource: queueName(props.prefix, def.group, ordering) }),
    );
    (deadLetterQueue.node.defaultChild as sqs.CfnQueue).redriveAllowPolicy = {
      redrivePermission: 'byQueue',
      sourceQueueArns: [ownSource.queueArn],
    };
    return deadLetterQueue;
  }

  /** The consumer function: its tables, its DLQ, its outside services and the signing key, and nothing else. */
  private consumer(
    props: RocketMQConsumerGroupProps,
    timeout: Duration,
    lifetimeSettings: Record<string, string>,
  ): ProjectFunction {
    const def = props.definition;
    const services = (def.services ?? []).map((name) =>
      serviceAccess(this, name, def.group, props.services?.[name], props.serviceTokens?.[name]),
    );
    const consumer = new ProjectFunction(this, 'Consumer', {
      functionName: `${props.prefix}-${def.functionName}`,
      entry: def.entry,
      description: `RocketMQ consumer group ${def.group} (topic ${def.topic}, tags ${def.tagExpression})`,
      timeout,
      memorySize: props.memorySize,
      logKey: props.dataKey.key,
      tracing: props.tracing,
      ...(props.vpc
        ? {
            network: this.network(
              props.vpc,
              services.map((s) => s.port),
            ),
          }
        : {}),
      environment: {
        ...Object.fromEntries(def.tables.map((key) => [TABLE_ENV[key], props.tables.table(key).tableName])),
        [CONSUMER_ENV.deadLetterQueueUrl]: this.deadLetterQueue.queueUrl,
        // The function checks these against each other at cold start, so a queue changed by hand is refused too.
        ...lifetimeSettings,
        [CONSUMER_ENV.group]: def.group,
        ...(props.packing === undefined ? {} : { [CONSUMER_ENV.packing]: props.packing ? 'on' : 'off' }),
        ...(props.envelopeSigningKey
          ? { [CONSUMER_ENV.envelopeSigningSecret]: props.envelopeSigningKey.secret.secretArn }
          : {}),
        POWERTOOLS_SERVICE_NAME: def.group,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        ...Object.fromEntries(services.flatMap((s) => Object.entries(s.environment))),
      },
    });
    skipCheckov(consumer.function, CHECKOV_SKIPS.sqsTriggeredConcurrency, CHECKOV_SKIPS.sqsTriggeredDeadLetters);
    for (const queue of [this.queue, this.deadLetterQueue]) skipCheckov(queue, CHECKOV_SKIPS.queueSqsManagedEncryption);
    this.grantTables(consumer.role, props);
    props.dataKey.grantTableUse(consumer.role);
    for (const service of services) service.grant(consumer.role);
    // The key ring lists the secret's versions: a retired key verifies as long as a copy signed with it can come back.
    props.envelopeSigningKey?.grantRead(consumer.role, { versions: true });
    this.grantQueues(consumer.role);
    return consumer;
  }

  /**
   * A publishing group's outbox (packages/infra/src/group-outbox.ts): the consumer puts its outgoing messages there,
   * each a conditional Put in its effect's TransactWriteItems, which DynamoDB authorises as dynamodb:PutItem on the
   * table (a condition on the item itself is no ConditionCheck). It neither reads nor changes an item it wrote.
   */
  writesOutbox(table: dynamodb.ITable): void {
    this.consumerFunction.function.addEnvironment(OUTBOX_ENV.table, table.tableName);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['dynamodb:PutItem'], resources: [table.tableArn] }),
    );
  }

  /**
   * The event source mapping grants receive/delete/ChangeMessageVisibility; the failure router
   * also resolves the source queue's URL and moves failures to the DLQ itself.
   */
  private grantQueues(role: iam.IRole): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['sqs:GetQueueUrl', 'sqs:ChangeMessageVisibility'],
        resources: [this.queue.queueArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.deadLetterQueue.queueArn] }),
    );
  }

  /** The function's SQS event source on the source queue; returns its mapping's id. */
  private subscribe(
    fn: lambda.IFunction,
    props: RocketMQConsumerGroupProps,
    batchingWindow: Duration | undefined,
  ): string {
    const eventSource = new SqsEventSource(this.queue, {
      batchSize: props.batchSize ?? 10,
      maxBatchingWindow: batchingWindow,
      maxConcurrency: props.maxConcurrency ?? 10,
      reportBatchItemFailures: true,
      // Messages whose tag the group does not subscribe to are deleted by Lambda, never invoking the function.
      filters: this.filtersAtEventSource ? tagEventFilters(props.definition.tagExpression) : undefined,
      // PolledEventCount / FilteredOutEventCount / FailedInvokeEventCount: shows what the filter drops.
      metricsConfig: { metrics: [lambda.MetricType.EVENT_COUNT] },
    });
    fn.addEventSource(eventSource);
    return eventSource.eventSourceMappingId;
  }

  /**
   * Only `senders`, the outbox relays sending to this group (`relayRoleArns`) and the group's own rule may send to
   * its source queue; only the group's consumer and `senders` to
   * its DLQ, and no one starts a message-move task from it (packages/infra/src/sender-policy.ts).
   */
  restrictSenders(senders: Senders, relayRoleArns: readonly string[] = []): void {
    // The outbox relays of groups publishing to this one send to its source queue (never to its DLQ).
    restrictQueueSenders(this.queue, { roleArns: [...senders.roleArns, ...relayRoleArns] }, this.rule?.ruleArn);
    restrictDeadLetterSenders(this.deadLetterQueue, { roleArns: [this.role.roleArn, ...senders.roleArns] });
  }

  /**
   * Only the deployment changes the queues; only the consumer and `operators` take messages off the source queue,
   * only `operators` off the DLQ (packages/infra/src/resource-guards.ts).
   */
  guardQueues(operators: readonly string[]): void {
    guardQueue(this.queue, [this.role.roleArn, ...operators]);
    guardQueue(this.deadLetterQueue, operators);
  }

  /** Messages Lambda's event source filter deleted unread (`metricsConfig` EventCount), summed per period. */
  filteredOutMetric(period = Duration.minutes(5)): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: 'AWS/Lambda',
      metricName: 'FilteredOutEventCount',
      dimensionsMap: { EventSourceMappingUUID: this.eventSourceMappingId },
      statistic: cloudwatch.Stats.SUM,
      period,
    });
  }

  /** Metric emitted by the consumer (EMF through Powertools), with exactly its dimensions. */
  consumerMetric(
    name: (typeof ConsumerMetric)[keyof typeof ConsumerMetric],
    period = Duration.minutes(5),
  ): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      // Powertools puts `service` (the service name) and the default dimension in one dimension set.
      dimensionsMap: { service: this.group, ConsumerGroup: this.group },
      statistic: cloudwatch.Stats.SUM,
      period,
    });
  }

  /**
   * The VPC by id (no look-ups) and a security group of the group's own that lets the function
   * out only to HTTPS (the AWS APIs, through NAT or VPC endpoints) and its outside services' ports.
   */
  private network(placement: VpcPlacement, servicePorts: readonly number[]): FunctionNetwork {
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: placement.vpcId,
      availabilityZones: [...new Set(placement.subnets.map((n) => n.availabilityZone))],
    });
    const outbound = new ec2.SecurityGroup(this, 'Outbound', {
      vpc,
      description: `${this.group} consumer: outbound to AWS APIs and its outside services only`,
      allowAllOutbound: false,
    });
    for (const port of new Set([443, ...servicePorts]))
      outbound.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(port), `tcp ${port} out`);
    return {
      vpc,
      subnets: placement.subnets.map((n) =>
        ec2.Subnet.fromSubnetAttributes(this, n.id, { subnetId: n.id, availabilityZone: n.availabilityZone }),
      ),
      securityGroups: [
        outbound,
        ...placement.securityGroupIds.map((id) => ec2.SecurityGroup.fromSecurityGroupId(this, id, id)),
      ],
    };
  }

  private grantTables(role: iam.IRole, props: RocketMQConsumerGroupProps): void {
    const { tables, group } = props.definition;
    const own = tables.filter((key) => key !== 'idempotency').map((key) => props.tables.table(key).tableArn);
    if (own.length > 0)
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...CONSUMER_TABLE_ACTIONS], resources: own }));
    // The groups share the idempotency table: each may touch only the records under its own prefix.
    if (tables.includes('idempotency')) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: [...CONSUMER_TABLE_ACTIONS],
          resources: [props.tables.table('idempotency').tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${recordIdPrefix(group)}*`] } },
        }),
      );
    }
  }

  /**
   * The bus routes the group's topic to its queue, only the subscribed tags while the event
   * source filters on them (as the bridge's own routes subscribe with the tag expression); with
   * the filter off, every message of the topic, for the consumer to count or dead-letter. Only
   * events a bridge put (`source` rocketmq.<cluster>) match.
   */
  private routeTopic(bus: events.IEventBus, def: ConsumerGroupDefinition): events.Rule {
    const tags = this.filtersAtEventSource ? def.tagExpression : '*';
    return new events.Rule(this, 'TopicRoute', {
      eventBus: bus,
      description: `RocketMQ topic ${def.topic} (tags ${tags}) to the ${def.group} source queue`,
      eventPattern: {
        source: events.Match.prefix(BRIDGE_EVENT_SOURCE_PREFIX),
        detailType: [ROCKETMQ_EVENT_TYPE],
        detail: { $or: tagRoutePatterns(def.topic, tags) },
      },
      targets: [new targets.SqsQueue(this.queue)],
    });
  }

  private createAlarms(props: RocketMQConsumerGroupProps, blockedGroupAgeSeconds: number): void {
    const fiveMinutes = Duration.minutes(5);
    this.alarm('DeadLetters', 'deadLetters', props, {
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      threshold: 1,
    });
    if (this.definition.ordering === 'orderly') {
      // The head of a message group either succeeds or is dead-lettered within its retry
      // policy's time; a message older than that means a group no longer moves. SQS's oldest
      // message age leaves out a message received three times or more, which is exactly the
      // failing head of a blocked group and the followers held back behind it, so the alarm
      // also reads the consumer's own age of the messages it returns (MessageGroupWait).
      const minute = Duration.minutes(1);
      this.alarm('BlockedGroup', 'blockedGroup', props, {
        metric: new cloudwatch.MathExpression({
          expression: 'MAX([FILL(oldest, 0), FILL(returned, 0)])',
          usingMetrics: {
            oldest: this.queue.metricApproximateAgeOfOldestMessage({
              period: minute,
              statistic: cloudwatch.Stats.MAXIMUM,
            }),
            returned: this.consumerMetric(ConsumerMetric.messageGroupWait, minute).with({
              statistic: cloudwatch.Stats.MAXIMUM,
            }),
          },
          label: 'age of the oldest waiting message (s)',
          period: minute,
        }),
        threshold: blockedGroupAgeSeconds,
      });
    } else {
      this.alarm('OldestMessageAge', 'oldestMessage', props, {
        metric: this.queue.metricApproximateAgeOfOldestMessage({
          period: fiveMinutes,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: (props.oldestMessageAlarmAge ?? Duration.minutes(15)).toSeconds(),
      });
    }
    this.alarm('FunctionErrors', 'functionErrors', props, {
      metric: this.function.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
    });
    // A throttled SQS batch is simply polled again; only sustained throttling needs a person.
    this.alarm('FunctionThrottles', 'functionThrottles', props, {
      metric: this.function.metricThrottles({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      evaluationPeriods: 3,
    });
    this.alarm('PayloadConflicts', 'payloadConflicts', props, {
      metric: this.consumerMetric(ConsumerMetric.conflicts),
      threshold: 1,
    });
    this.alarm('PermanentErrors', 'permanentErrors', props, {
      metric: this.consumerMetric(ConsumerMetric.permanentErrors),
      threshold: 1,
    });
    // Every route into the queue carries only the subscribed tags (routeTopic, the bridge's
    // subscription), so the filter drops nothing in normal traffic: one dropped message is an
    // unreadable or untagged body, or a sender that went around the routes, and it is gone.
    if (this.filtersAtEventSource)
      this.alarm('FilteredOut', 'filteredOut', props, { metric: this.filteredOutMetric(), threshold: 1 });
  }

  private alarm(
    id: string,
    runbook: RunbookKey,
    props: RocketMQConsumerGroupProps,
    spec: { metric: cloudwatch.IMetric; threshold: number; evaluationPeriods?: number },
  ): void {
    this.alarms.push(
      routedAlarm(this, id, {
        alarmName: `${props.prefix}-${this.group}-${kebab(id)}`,
        runbook,
        subject: this.group,
        runbookUrl: props.runbookUrl,
        topic: props.alarmTopic,
        ...spec,
      }),
    );
  }
}

function kebab(id: string): string {
  return id.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}
