import { Duration } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { RocketMQConsumerGroup } from '../consumer-group.ts';
import type { BridgeStageSettings } from '../deployment-settings.ts';
import { RocketMQBridgeAlarms } from './bridge-alarms.ts';
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
}

/**
 * A stage's bridge, built from its settings: the network by id (no look-ups, so synth stays
 * offline), a cluster with Container Insights, the Fargate service with one route per deployed
 * group, CPU target tracking, and its alarms on the stage's alarm topic. It lives in the
 * consumers' stack on purpose: a route refers to its queue directly, so a queue can be replaced
 * without a cross-stack export holding it.
 */
export class StageBridge extends Construct {
  readonly bridge: RocketMQBridgeService;
  readonly alarms: RocketMQBridgeAlarms;

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
    const routes = bridgeRoutes(props.groups);
    this.bridge = new RocketMQBridgeService(this, 'Service', {
      cluster,
      routes,
      ...(s.protocol === 'rocketmq4' ? { nameServer: s.endpoints } : { proxyEndpoint: s.endpoints }),
      clusterName: s.clusterName,
      namespace: s.namespace,
      sslEnabled: s.tls,
      ...(props.envelopeSigningKey ? { envelopeSigningKey: props.envelopeSigningKey } : {}),
      ...(s.credentialsSecretName
        ? { rocketMqCredentials: secretsmanager.Secret.fromSecretNameV2(this, 'Credentials', s.credentialsSecretName) }
        : {}),
      desiredCount: s.desiredCount,
      maxCount: s.maxCount,
      cpuTargetPercent: s.cpuTargetPercent,
      cpu: s.cpu,
      memoryLimitMiB: s.memoryMiB,
      vpcSubnets: { subnets },
      securityGroups: [
        new ec2.SecurityGroup(this, 'Tasks', {
          vpc,
          description: `${props.prefix} RocketMQ bridge tasks: outbound to the cluster and AWS only`,
          allowAllOutbound: true,
        }),
        ...s.securityGroupIds.map((sg) => ec2.SecurityGroup.fromSecurityGroupId(this, sg, sg)),
      ],
      ...(props.directory ? { directory: props.directory } : {}),
    });
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
}
