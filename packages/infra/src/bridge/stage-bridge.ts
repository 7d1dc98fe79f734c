import {
  DLQ_RETENTION_DAYS,
  outboundDeadLetterQueueName,
  outboundQueueName,
  type TracingBackend,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { Annotations, Duration, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CHECKOV_SKIPS, skipCheckov } from '../checkov.ts';
import type { RocketMQConsumerGroup } from '../consumer-group.ts';
import type { BridgeStageSettings } from '../deployment-settings.ts';
import { ProtectedSecret } from '../protected-secret.ts';
import { guardQueue } from '../resource-guards.ts';
import { restrictDeadLetterSenders, restrictQueueSenders, type Senders } from '../sender-policy.ts';
import { RocketMQBridgeAlarms } from './bridge-alarms.ts';
import { bridgeEgress } from './bridge-egress.ts';
import { bridgeRoutes } from './bridge-routes.ts';
import { RocketMQBridgeService } from './bridge-service.ts';

export interface StageBridgeProps {
  readonly prefix: string;
  readonly settings: BridgeStageSettings;
  readonly groups: readonly RocketMQConsumerGroup[];
  readonly alarmTopic: sns.ITopic;
  readonly runbookUrl: string;
  /** Build context of the image (default: the repository root). */
  readonly directory?: string;
  /** The key the bridge signs every envelope with (`bridge.signEnvelopes`). */
  readonly envelopeSigningKey?: secretsmanager.ISecret;
  /** The stage's tracing back end (default: off). */
  readonly tracing?: TracingBackend;
  /** Roles that put new values on the stage's secrets (`operatorRoleArns`): the RocketMQ ACL key's keepers. */
  readonly operatorRoleArns?: readonly string[];
  /** A group of the stage publishes to target `rocketmq`: the bridge gets the outbound queue its relay sends to. */
  readonly outbound?: boolean;
}

/**
 * The outbound queue's receives before a message is dead-lettered: SQS's largest redrive count. A produce that
 * fails (the cluster or its ACL refusing) leaves the message to come back after the visibility timeout, so an
 * outage of the cluster is ridden out for 1,000 × 60 s ≈ 16.7 hours before an event lands in the outbound DLQ.
 */
export const OUTBOUND_MAX_RECEIVE_COUNT = 1_000;

/**
 * A stage's bridge, built from its settings: the network by id (no look-ups, so synth stays
 * offline), a security group that lets the tasks out only to HTTPS and the cluster's ports, a
 * cluster with Container Insights, the Fargate service with one route per deployed group, CPU
 * target tracking, and its alarms on the stage's alarm topic. It lives in the consumers' stack on
 * purpose: a route refers to its queue directly, so a queue can be replaced without a cross-stack
 * export holding it.
 *
 * The task definition and its roles have fixed names under the stage's prefix (the region in the
 * roles', as IAM names are per account): `iam:PassRole` on the task role with `ecs:RunTask` makes
 * the caller the bridge, and an SCP can only refuse that to everyone but the deployment if it can
 * name them (docs/security.md).
 */
export class StageBridge extends Construct {
  readonly bridge: RocketMQBridgeService;
  readonly alarms: RocketMQBridgeAlarms;
  /** The RocketMQ ACL access key (`credentialsSecretName`), when the cluster enforces ACL. */
  readonly credentials?: ProtectedSecret;
  /** The outbox relays' signed envelopes, produced to RocketMQ by the bridge (`outbound`), and its DLQ. */
  readonly outboundQueue?: sqs.Queue;
  readonly outboundDeadLetterQueue?: sqs.Queue;

  constructor(scope: Construct, id: string, props: StageBridgeProps) {
    super(scope, id);
    const s = props.settings;
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: s.vpcId,
      availabilityZones: [...new Set(s.subnets.map((n) => n.availabilityZone))],
    });
    const subnets = s.subnets.map((n) =>
      ec2.Subnet.fromSubnetAttributes(this, n.id, { subnetId: n.id, availabilityZone: n.availabilityZone }),
    );
    const cluster = new ecs.Cluster(this, 'Cluster', {
      vpc,
      clusterName: `${props.prefix}-bridge`,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });
    const routes = bridgeRoutes(props.groups, s.routes);
    const tasks = new ec2.SecurityGroup(this, 'Tasks', {
      vpc,
      description: `${props.prefix} RocketMQ bridge tasks: out to HTTPS (AWS APIs) and the RocketMQ cluster ports only`,
      allowAllOutbound: false,
    });
    for (const rule of bridgeEgress(s))
      tasks.addEgressRule(ec2.Peer.ipv4(rule.cidr), ec2.Port.tcp(rule.port), rule.description);
    const region = Stack.of(this).region;
    this.credentials = s.credentialsSecretName ? this.aclCredentials(s.credentialsSecretName, props) : undefined;
    if (props.outbound) [this.outboundQueue, this.outboundDeadLetterQueue] = this.outboundQueues(props.prefix);
    this.bridge = new RocketMQBridgeService(this, 'Service', {
      cluster,
      routes,
      ...(s.protocol === 'rocketmq4' ? { nameServer: s.endpoints } : { proxyEndpoint: s.endpoints }),
      clusterName: s.clusterName,
      namespace: s.namespace,
      sslEnabled: s.tls,
      ...(props.envelopeSigningKey ? { envelopeSigningKey: props.envelopeSigningKey } : {}),
      ...(props.tracing ? { tracing: props.tracing } : {}),
      ...(this.credentials ? { rocketMqCredentials: this.credentials.secret } : {}),
      desiredCount: s.desiredCount,
      maxCount: s.maxCount,
      cpuTargetPercent: s.cpuTargetPercent,
      cpu: s.cpu,
      memoryLimitMiB: s.memoryMiB,
      vpcSubnets: { subnets },
      securityGroups: [tasks, ...s.securityGroupIds.map((sg) => ec2.SecurityGroup.fromSecurityGroupId(this, sg, sg))],
      names: {
        family: `${props.prefix}-bridge`,
        taskRole: `${props.prefix}-bridge-task-${region}`,
        executionRole: `${props.prefix}-bridge-exec-${region}`,
      },
      ...(props.directory ? { directory: props.directory } : {}),
      ...(this.outboundQueue && this.outboundDeadLetterQueue
        ? { outbound: { queue: this.outboundQueue, deadLetterQueue: this.outboundDeadLetterQueue } }
        : {}),
    });
    // ECS reads the access key into the container's environment with the execution role, and nobody else needs it.
    this.credentials?.grantRead(this.bridge.taskDefinition.obtainExecutionRole());
    if (this.outboundQueue && this.outboundDeadLetterQueue)
      this.grantOutbound(this.outboundQueue, this.outboundDeadLetterQueue);
    this.alarms = new RocketMQBridgeAlarms(this, 'Alarms', {
      prefix: props.prefix,
      service: this.bridge.service,
      routes,
      minimumTasks: s.desiredCount,
      topic: props.alarmTopic,
      runbookUrl: props.runbookUrl,
      lagThreshold: Duration.seconds(s.lagAlarmSeconds),
    });
  }

  /**
   * The outbound queue and its DLQ, kept as long as SQS allows: an event waiting there is committed and relayed,
   * and only the bridge's produce is left. The bridge's outbound route reads them (packages/bridge).
   */
  private outboundQueues(prefix: string): [sqs.Queue, sqs.Queue] {
    const deadLetterQueue = new sqs.Queue(this, 'OutboundDeadLetterQueue', {
      queueName: outboundDeadLetterQueueName(prefix),
      retentionPeriod: Duration.days(DLQ_RETENTION_DAYS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const queue = new sqs.Queue(this, 'OutboundQueue', {
      queueName: outboundQueueName(prefix),
      // SQS's maximum, as the DLQs have it.
      retentionPeriod: Duration.days(DLQ_RETENTION_DAYS),
      visibilityTimeout: Duration.seconds(60),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: OUTBOUND_MAX_RECEIVE_COUNT },
    });
    for (const q of [queue, deadLetterQueue]) skipCheckov(q, CHECKOV_SKIPS.queueSqsManagedEncryption);
    return [queue, deadLetterQueue];
  }

  /** The bridge receives and deletes on the outbound queue, and sends what it refuses to the outbound DLQ. */
  private grantOutbound(queue: sqs.IQueue, deadLetterQueue: sqs.IQueue): void {
    const role = this.bridge.taskDefinition.taskRole;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'],
        resources: [queue.queueArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [deadLetterQueue.queueArn] }),
    );
  }

  /**
   * Only the relays (`relayRoleArns`) and the operators send to the outbound queue, only the bridge and the
   * operators receive from it; its DLQ takes the bridge's refusals and the operators' alone.
   */
  guardOutbound(relayRoleArns: readonly string[], operators: readonly string[]): void {
    if (!this.outboundQueue || !this.outboundDeadLetterQueue) return;
    const bridgeRole = this.bridge.taskDefinition.taskRole.roleArn;
    const senders: Senders = { roleArns: [...relayRoleArns, ...operators] };
    restrictQueueSenders(this.outboundQueue, senders);
    guardQueue(this.outboundQueue, [bridgeRole, ...operators]);
    restrictDeadLetterSenders(this.outboundDeadLetterQueue, { roleArns: [bridgeRole, ...operators] });
    guardQueue(this.outboundDeadLetterQueue, operators);
  }

  /**
   * The access key exists before the stack (the cluster's administrators issue it), so it keeps the KMS key it was
   * created with until an operator re-encrypts it under the one made here; the synth says so.
   */
  private aclCredentials(secretName: string, props: StageBridgeProps): ProtectedSecret {
    const credentials = new ProtectedSecret(this, 'Credentials', {
      secretName,
      description: 'RocketMQ ACL access key of the bridge: JSON {"accessKey","secretKey"}',
    });
    credentials.allowKeepers(props.operatorRoleArns ?? []);
    Annotations.of(this).addWarningV2(
      '@rocketmq/acl-secret-key',
      `${props.prefix}: credentialsSecretName names a secret this stack does not own: it gets the resource policy, but keeps the KMS key it was created with until it is re-encrypted with alias/${secretName} (docs/security.md, item 5)`,
    );
    return credentials;
  }
}
