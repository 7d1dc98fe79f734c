import {
  CONSUMER_ENV,
  DLQ_RETENTION_DAYS,
  METRICS_NAMESPACE,
  OUTBOX_ENV,
  OUTBOX_TABLE,
  OutboxStatus,
  outboxDeadLetterQueueName,
  outboxTableName,
  type PublishedTopic,
  RELAY_MAX_RECORD_AGE_SECONDS,
  type RelayTargets,
  subscribersOf,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CHECKOV_SKIPS, skipCheckov } from './checkov.ts';
import type { RocketMQConsumerGroup } from './consumer-group.ts';
import type { StageDataKey } from './data-key.ts';
import type { StageTracing } from './function-tracing.ts';
import { ProjectFunction } from './project-function.ts';
import type { ProtectedSecret } from './protected-secret.ts';
import { guardQueue, guardTable } from './resource-guards.ts';
import { routedAlarm } from './routed-alarm.ts';
import type { RunbookKey } from './runbook.ts';
import { restrictDeadLetterSenders } from './sender-policy.ts';

/** The generic relay's handler (packages/consumers/functions/outbox-relay), configured by its environment. */
export const OUTBOX_RELAY_ENTRY = 'packages/consumers/functions/outbox-relay/handler.ts';

/**
 * How the relay's event source reads the outbox stream (docs/outbox.md):
 * - `batchSize` 100: DynamoDB Streams' default; the relay sends each item on its own (a SendMessage per queue,
 *   one PutEvents entry), its message groups side by side.
 * - `parallelizationFactor` 1: one batch per shard at a time, so the items of one key (one message group) are
 *   relayed in their commit order.
 * - `timeout`: one batch of 100 sends and 100 marks, with room for SDK retries.
 * - `maxRecordAge` (`RELAY_MAX_RECORD_AGE_SECONDS`, delivery-lifetimes.ts): the stream keeps a record 24 h; a
 *   record still being retried when the stream trims it is dropped with no notice, so the mapping gives up an hour
 *   before, and its on-failure notice reaches the DLQ while the item (still PENDING in the table) can be found and
 *   touched again (`ops outbox redrive --stale`, whose default threshold is the same constant).
 * - `retryAttempts` 10 000, the API's largest bound: an item the relay can never send it marks FAILED itself, with
 *   a notice of its own (docs/outbox.md, "The relay"), so what the mapping retries is a fault of the path (a throttled or
 *   unavailable target or table, a timeout), which it should ride out for as long as the stream keeps the record.
 *   The age above is the bound that ends it; the count ends only a crash loop too fast for the age to matter
 *   (10 000 failed invocations), and bisecting finds a crashing record within log2(100) ≈ 7 splits first.
 */
export const RELAY_EVENT_SOURCE = {
  batchSize: 100,
  parallelizationFactor: 1,
  timeoutSeconds: 30,
  maxRecordAgeSeconds: RELAY_MAX_RECORD_AGE_SECONDS,
  retryAttempts: 10_000,
} as const;

/**
 * The relay-lag alarm's threshold: the longest a healthy relay holds a record back. A failing batch of 100 is
 * bisected down to its record in ⌈log2 100⌉ = 7 splits, each invocation lasting at most the timeout, so a batch
 * that contains one bad record is through (sent, or its item marked FAILED) within (7 + 1) × 30 s = 4 min. An
 * iterator older than that is a relay that is not moving: a target or the table refusing it, the mapping
 * disabled, the function failing. It fires with more than 22 hours left before the mapping discards records.
 */
export const RELAY_LAG_ALARM_SECONDS =
  (Math.ceil(Math.log2(RELAY_EVENT_SOURCE.batchSize)) + 1) * RELAY_EVENT_SOURCE.timeoutSeconds;

/** Where each kind of target is, in the stack. */
export interface RelayDestinations {
  /** The stack's deployed groups: the subscribers of a topic sent to target `sqs`. */
  readonly groups: readonly RocketMQConsumerGroup[];
  /** The stage bus (target `eventbridge`). */
  readonly eventBus: events.IEventBus;
  /** The stage bridge's outbound queue (target `rocketmq`), when the bridge is enabled and a group publishes there. */
  readonly outboundQueue?: sqs.IQueue;
}

export interface GroupOutboxProps {
  readonly prefix: string;
  readonly dataKey: StageDataKey;
  readonly alarmTopic: sns.ITopic;
  readonly runbookUrl: string;
  readonly envelopeSigningKey: ProtectedSecret;
  readonly destinations: RelayDestinations;
  readonly tracing?: StageTracing;
}

/** A topic that targets `rocketmq` in a stage without a bridge: refused at synth, naming the group and the setting. */
export class MissingOutboundBridgeError extends Error {
  override readonly name = 'MissingOutboundBridgeError';
  constructor(
    readonly group: string,
    readonly topic: string,
  ) {
    super(
      `consumer group ${group} publishes ${topic} to target 'rocketmq', but this stage has no bridge (bridge.enabled): the relay would have no outbound queue to send to. Enable the stage's bridge, or publish ${topic} to 'sqs' or 'eventbridge'.`,
    );
  }
}

/**
 * A publishing group's outbox (docs/outbox.md): its table, whose stream feeds the relay function; the relay's
 * DLQ, where the event source mapping leaves what it gave up on and the relay its notices of items it could not
 * send; the relay's alarms. The group's consumer writes the table, in its effect's transaction, and nothing else
 * of it; the relay reads the stream, marks the items and sends to exactly its targets.
 */
export class GroupOutbox extends Construct {
  readonly group: RocketMQConsumerGroup;
  readonly table: dynamodb.Table;
  readonly deadLetterQueue: sqs.Queue;
  readonly relay: lambda.IFunction;
  readonly relayRole: iam.IRole;
  readonly eventSourceMappingId: string;
  /** The groups whose source queues the relay sends to (target `sqs`): they admit the relay as a sender. */
  readonly sqsSubscribers: readonly RocketMQConsumerGroup[];
  /** Whether the relay puts events on the stage bus (target `eventbridge`): the bus admits it as a sender. */
  readonly putsEvents: boolean;
  /** Whether the relay sends to the bridge's outbound queue (target `rocketmq`). */
  readonly sendsToOutbound: boolean;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(group: RocketMQConsumerGroup, id: string, props: GroupOutboxProps) {
    super(group, id);
    this.group = group;
    const publishes = group.definition.publishes ?? [];
    this.table = this.outboxTable(props);
    this.deadLetterQueue = this.relayDeadLetters(props.prefix);
    const { targets, sqsSubscribers } = relayTargets(group.group, publishes, props.destinations);
    this.sqsSubscribers = sqsSubscribers;
    this.putsEvents = publishes.some((p) => p.target === 'eventbridge');
    this.sendsToOutbound = publishes.some((p) => p.target === 'rocketmq');
    group.writesOutbox(this.table);
    const relay = this.relayFunction(props, targets);
    this.relay = relay.function;
    this.relayRole = relay.role;
    this.grantTargets(relay.role, props.destinations);
    this.eventSourceMappingId = this.readStream(relay.function);
    this.createAlarms(props);
  }

  /** The table, as the stage's other tables are kept: on demand, PITR, the stage's data key, retained and protected. */
  private outboxTable(props: GroupOutboxProps): dynamodb.Table {
    return new dynamodb.Table(this, 'Table', {
      tableName: outboxTableName(props.prefix, this.group.group),
      partitionKey: { name: OUTBOX_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: OUTBOX_TABLE.ttlAttribute,
      stream: dynamodb.StreamViewType[OUTBOX_TABLE.streamView],
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: props.dataKey.key,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  private relayDeadLetters(prefix: string): sqs.Queue {
    const queue = new sqs.Queue(this, 'DeadLetterQueue', {
      queueName: outboxDeadLetterQueueName(prefix, this.group.group),
      // DEAD_LETTER_RETENTION_SECONDS, as every DLQ of the stage.
      retentionPeriod: Duration.days(DLQ_RETENTION_DAYS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    skipCheckov(queue, CHECKOV_SKIPS.queueSqsManagedEncryption);
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason:
        "This queue is itself a dead-letter queue: the outbox relay's on-failure destination and where it leaves a notice of each item it could not send (cdk-nag only recognises SQS redrive targets). A DLQ of a DLQ would hide failures further; its depth is alarmed instead.",
    });
    return queue;
  }

  private relayFunction(props: GroupOutboxProps, targets: RelayTargets): ProjectFunction {
    const group = this.group.group;
    const relay = new ProjectFunction(this, 'Relay', {
      functionName: `${props.prefix}-${this.group.definition.functionName}-outbox-relay`,
      entry: OUTBOX_RELAY_ENTRY,
      description: `Outbox relay of consumer group ${group}: its outbox stream to ${Object.keys(targets).join(', ')}`,
      timeout: Duration.seconds(RELAY_EVENT_SOURCE.timeoutSeconds),
      logKey: props.dataKey.key,
      tracing: props.tracing,
      environment: {
        [CONSUMER_ENV.group]: group,
        [OUTBOX_ENV.table]: this.table.tableName,
        // Tokens (queue URLs, the bus name) must be rendered as CloudFormation inside the JSON.
        [OUTBOX_ENV.targets]: Stack.of(this).toJsonString(targets),
        [OUTBOX_ENV.deadLetterQueueUrl]: this.deadLetterQueue.queueUrl,
        [CONSUMER_ENV.envelopeSigningSecret]: props.envelopeSigningKey.secret.secretArn,
        POWERTOOLS_SERVICE_NAME: `${group}-outbox-relay`,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      },
    });
    skipCheckov(relay.function, CHECKOV_SKIPS.streamTriggeredConcurrency, CHECKOV_SKIPS.streamTriggeredDeadLetters);
    const role = relay.role;
    // The event source mapping reads the stream with the function's role. ListStreams is in AWS's documented set.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [
          'dynamodb:DescribeStream',
          'dynamodb:GetRecords',
          'dynamodb:GetShardIterator',
          'dynamodb:ListStreams',
        ],
        resources: [this.table.tableStreamArn!],
      }),
    );
    // Marks an item RELAYED or FAILED (a conditional update): no other item write, no read.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['dynamodb:UpdateItem'], resources: [this.table.tableArn] }),
    );
    props.dataKey.grantTableUse(role);
    // The mapping's on-failure notices and the relay's own are both sent with the function's role.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.deadLetterQueue.queueArn] }),
    );
    // It signs as the bridge does: with a version at least two minutes old, so it lists the versions.
    props.envelopeSigningKey.grantRead(role, { versions: true });
    return relay;
  }

  /** SendMessage(Batch) to exactly the queues it sends to; PutEvents on the stage bus only if a topic goes there. */
  private grantTargets(role: iam.IRole, destinations: RelayDestinations): void {
    const queues = [
      ...this.sqsSubscribers.map((g) => g.queue.queueArn),
      ...(this.sendsToOutbound && destinations.outboundQueue ? [destinations.outboundQueue.queueArn] : []),
    ];
    if (queues.length > 0)
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: queues }));
    if (this.putsEvents)
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [destinations.eventBus.eventBusArn] }),
      );
  }

  /**
   * The stream as the relay's event source: only records whose new image is PENDING (an INSERT as committed, a
   * MODIFY from `ops outbox redrive`); the relay's own marks (RELAYED, FAILED) and TTL deletions never invoke it.
   */
  private readStream(fn: lambda.IFunction): string {
    const deadLetterQueue = this.deadLetterQueue;
    const mapping = new lambda.EventSourceMapping(this, 'StreamSource', {
      target: fn,
      eventSourceArn: this.table.tableStreamArn!,
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: RELAY_EVENT_SOURCE.batchSize,
      parallelizationFactor: RELAY_EVENT_SOURCE.parallelizationFactor,
      bisectBatchOnError: true,
      reportBatchItemFailures: true,
      retryAttempts: RELAY_EVENT_SOURCE.retryAttempts,
      maxRecordAge: Duration.seconds(RELAY_EVENT_SOURCE.maxRecordAgeSeconds),
      // Granted above (SendMessage only), not by CDK's SqsDlq, which adds GetQueueAttributes and GetQueueUrl.
      onFailure: { bind: () => ({ destination: deadLetterQueue.queueArn }) },
      filters: [relayFilter()],
    });
    return mapping.eventSourceMappingId;
  }

  /** Only the deployment changes the table and the DLQ; only the writers write items, only operators receive. */
  guard(operators: readonly string[]): void {
    guardTable(this.table, [this.group.role.roleArn, this.relayRole.roleArn, ...operators]);
    guardQueue(this.deadLetterQueue, operators);
    restrictDeadLetterSenders(this.deadLetterQueue, { roleArns: [this.relayRole.roleArn, ...operators] });
  }

  /** Age of the newest record of the last batch read, per the relay's mapping (Lambda's IteratorAge, in ms). */
  iteratorAgeMetric(period = Duration.minutes(1)): cloudwatch.Metric {
    return this.relay.metric('IteratorAge', { period, statistic: cloudwatch.Stats.MAXIMUM });
  }

  private createAlarms(props: GroupOutboxProps): void {
    const minute = Duration.minutes(1);
    this.alarm('RelayLag', 'outboxRelayLag', props, {
      metric: this.iteratorAgeMetric(minute),
      threshold: RELAY_LAG_ALARM_SECONDS * 1000,
    });
    this.alarm('DeadLetters', 'outboxDeadLetters', props, {
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: minute,
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      threshold: 1,
    });
    this.alarm('RelayErrors', 'outboxRelayErrors', props, {
      metric: this.relay.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
    });
  }

  private alarm(
    id: string,
    runbook: RunbookKey,
    props: GroupOutboxProps,
    spec: { metric: cloudwatch.IMetric; threshold: number },
  ): void {
    this.alarms.push(
      routedAlarm(this, id, {
        // `<prefix>-outbox-<group>-…`: apart from the group's own alarms, which are counted per group.
        alarmName: `${props.prefix}-outbox-${this.group.group}-${kebab(id)}`,
        runbook,
        subject: `${this.group.group} outbox`,
        runbookUrl: props.runbookUrl,
        topic: props.alarmTopic,
        ...spec,
      }),
    );
  }
}

/** The event source filter: INSERT and MODIFY records whose new image's status is PENDING: a commit, or an operator's redrive (docs/outbox.md). */
export function relayFilter(): Record<string, unknown> {
  return lambda.FilterCriteria.filter({
    eventName: lambda.FilterRule.or('INSERT', 'MODIFY'),
    dynamodb: { NewImage: { status: { S: lambda.FilterRule.isEqual(OutboxStatus.PENDING) } } },
  });
}

/**
 * `OUTBOX_TARGETS`: where each published topic goes in this stack. Target `sqs`: the source queue of every
 * deployed group subscribed to one of its tags (`subscribersOf`), with its tag expression, for the relay to send
 * each message only where its tag is subscribed; `eventbridge`: the stage bus; `rocketmq`: the bridge's outbound
 * queue, refused when the stage has none.
 */
export function relayTargets(
  group: string,
  publishes: readonly PublishedTopic[],
  destinations: RelayDestinations,
): { targets: RelayTargets; sqsSubscribers: RocketMQConsumerGroup[] } {
  const targets: Record<string, RelayTargets[string]> = {};
  const sqsSubscribers = new Set<RocketMQConsumerGroup>();
  const deployed = destinations.groups.map((g) => g.definition);
  for (const { topic, tags, target } of publishes) {
    if (target === 'eventbridge')
      targets[topic] = { kind: 'eventbridge', eventBusName: destinations.eventBus.eventBusName };
    else if (target === 'rocketmq') {
      if (!destinations.outboundQueue) throw new MissingOutboundBridgeError(group, topic);
      targets[topic] = { kind: 'rocketmq', queueUrl: destinations.outboundQueue.queueUrl };
    } else {
      const names = new Set(tags.flatMap((tag) => subscribersOf(topic, tag, deployed).map((d) => d.group)));
      const subscribers = destinations.groups.filter((g) => names.has(g.group));
      for (const s of subscribers) sqsSubscribers.add(s);
      targets[topic] = {
        kind: 'sqs',
        queues: subscribers.map((s) => ({
          group: s.group,
          url: s.queue.queueUrl,
          tagExpression: s.definition.tagExpression,
        })),
      };
    }
  }
  return { targets, sqsSubscribers: [...sqsSubscribers] };
}

function kebab(id: string): string {
  return id.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}
