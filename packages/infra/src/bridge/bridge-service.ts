import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BridgeConfigInput, rocketmqGroupRefusal } from '@rocketmq-lambda/bridge/index.ts';
import { TRACING_BACKEND_ENV, TracingBackend } from '@rocketmq-lambda/runtime/config/index.ts';
import type { MessageGroupSource } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** One RocketMQ consumer group the bridge forwards, and where to. */
export interface RocketMQBridgeRoute {
  readonly group: string;
  readonly topic: string;
  /** RocketMQ tag expression (default `*`). */
  readonly tagExpression?: string;
  /** The group's source queue (give this or `eventBus`). FIFO routes need a FIFO queue. */
  readonly queue?: sqs.IQueue;
  /** Forward with EventBridge `PutEvents` to this bus instead of a queue. */
  readonly eventBus?: events.IEventBus;
  /** The group's DLQ: oversized messages land here with their reason. */
  readonly dlq: sqs.IQueue;
  /** FIFO topic + FIFO group → SQS FIFO queue with the message group as `MessageGroupId`. */
  readonly fifo?: boolean;
  /** FIFO routes: where each message's `MessageGroupId` comes from (default the RocketMQ 5 message group). */
  readonly messageGroupFrom?: MessageGroupSource;
  /** The RocketMQ consumer group the route consumes as, when not `group` (a legacy group taken over, a shadow group). */
  readonly rocketmqGroup?: string;
  /** RocketMQ 4: take over a group other consumers ran, from its committed offsets (docs/migration.md). */
  readonly takeOver?: NonNullable<BridgeConfigInput['routes'][number]['takeOver']>;
}

export interface RocketMQBridgeServiceProps {
  /** Used when no `cluster` is given (a cluster needs a VPC; without either CDK creates a new VPC). */
  readonly vpc?: ec2.IVpc;
  readonly cluster?: ecs.ICluster;
  /** A prebuilt image; default: built from `directory` with `packages/bridge/Dockerfile`. */
  readonly image?: ecs.ContainerImage;
  /** Build context for the image (default: this repository's root). */
  readonly directory?: string;
  readonly routes: readonly RocketMQBridgeRoute[];
  /** RocketMQ 5: the proxy's gRPC endpoint(s), `host:8081` or `h1:8081;h2:8081`. Give this or `nameServer`. */
  readonly proxyEndpoint?: string;
  /** RocketMQ 4.x: the name server address(es), `host:9876` or `h1:9876;h2:9876`. Give this or `proxyEndpoint`. */
  readonly nameServer?: string;
  /** Goes into each envelope's `source` (`rocketmq://<clusterName>`). */
  readonly clusterName?: string;
  readonly namespace?: string;
  /** TLS to the cluster (default true); RocketMQ 4's client has none, so `nameServer` needs an explicit false. */
  readonly sslEnabled?: boolean;
  /** Sign every envelope with this secret's value (consumers given the same secret refuse unsigned ones). */
  readonly envelopeSigningKey?: secretsmanager.ISecret;
  /**
   * The stage's tracing back end, in the task's `TRACING_BACKEND`. Not `off`: the bridge process
   * sends its forward spans to X-Ray's OTLP endpoint itself, signed with the task role's
   * credentials; with `xray` each SQS entry also carries the forward's context as `AWSTraceHeader`,
   * so X-Ray links the forward to the consumer's invocation.
   */
  readonly tracing?: TracingBackend;
  /**
   * Refused at synth: no collector runs beside the bridge. Every container of a task holds the
   * task role's credentials (the signing key, every queue), so the task runs the bridge's own
   * image alone.
   * @deprecated The bridge exports its spans itself; remove the setting.
   */
  readonly traceCollectorImage?: never;
  /**
   * The outbound route: the outbox relays' signed envelopes on `queue`, produced to the cluster; what the bridge
   * refuses goes to `deadLetterQueue` (also the queue's redrive target). The caller grants the task role on them.
   */
  readonly outbound?: { readonly queue: sqs.IQueue; readonly deadLetterQueue: sqs.IQueue };
  /** A secret with JSON keys `accessKey` and `secretKey`, when the cluster enforces ACL. */
  readonly rocketMqCredentials?: secretsmanager.ISecret;
  /** How long a received message stays invisible in RocketMQ before it is redelivered (default 60 s). */
  readonly invisibleDuration?: Duration;
  /** Largest envelope forwarded (default 256 KiB); bigger ones go to the DLQ. */
  readonly maxMessageBytes?: number;
  /** Bridge tasks; all join the same consumer groups and share the messages (default 1). */
  readonly desiredCount?: number;
  /**
   * Target tracking on CPU between `desiredCount` and this many tasks (default: no scaling).
   * More tasks only help up to the topic's parallelism: on RocketMQ 4 one queue is consumed by
   * one client of a group at a time; on RocketMQ 5 the proxies' capacity bounds it.
   */
  readonly maxCount?: number;
  /** CPU utilisation the scaling keeps (default 60 %). */
  readonly cpuTargetPercent?: number;
  readonly cpu?: number;
  readonly memoryLimitMiB?: number;
  readonly vpcSubnets?: ec2.SubnetSelection;
  readonly securityGroups?: ec2.ISecurityGroup[];
  readonly logRetention?: logs.RetentionDays;
  /**
   * Fixed physical names, so that an SCP or a permission boundary can name what only the
   * deployment may pass or run (docs/security.md): the task definition's family, its task role and
   * its execution role. Default: names CloudFormation makes up.
   */
  readonly names?: RocketMQBridgeNames;
}

export interface RocketMQBridgeNames {
  readonly family: string;
  readonly taskRole: string;
  readonly executionRole: string;
}

const HEALTH_PORT = 8080;

/**
 * The bridge as an ECS Fargate service: its configuration in `BRIDGE_CONFIG`, a container health
 * check on the readiness endpoint, logs (and EMF metrics) in CloudWatch, and a task role that may
 * only send to the routes' queues and DLQs or put events on their buses.
 */
export class RocketMQBridgeService extends Construct {
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: RocketMQBridgeServiceProps) {
    super(scope, id);
    assertBridgeProps(props);
    const cluster =
      props.cluster ??
      new ecs.Cluster(this, 'Cluster', {
        ...(props.vpc ? { vpc: props.vpc } : {}),
        containerInsightsV2: ecs.ContainerInsights.ENABLED,
      });

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: props.cpu ?? 256,
      memoryLimitMiB: props.memoryLimitMiB ?? 512,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.X86_64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
      ...(props.names ? namedRoles(this, props.names) : {}),
    });
    const tracing = props.tracing ?? TracingBackend.off;
    this.addBridgeContainer(props, tracing);
    if (tracing !== TracingBackend.off) this.grantSpanExport();
    this.grantForwarding(props.routes);
    props.envelopeSigningKey?.grantRead(this.taskDefinition.taskRole);
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions::AwsSolutions-ECS2',
      reason:
        'BRIDGE_CONFIG holds only routing (topics, tag expressions, queue URLs, endpoints) and is rendered from the catalogue at synth; the RocketMQ ACL keys come from Secrets Manager through `secrets`, never the environment.',
    });
    Validations.of(this.taskDefinition.obtainExecutionRole()).acknowledge({
      id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
      reason:
        'The execution role pulls the image: ecr:GetAuthorizationToken has no resource-level permissions, so it is granted on *; the pull actions themselves are scoped to the asset repository by CDK.',
    });
    this.service = this.fargateService(props, cluster);
  }

  /** The bridge's container: its configuration, its RocketMQ credentials from Secrets Manager, its health check. */
  private addBridgeContainer(props: RocketMQBridgeServiceProps, tracing: TracingBackend): void {
    const config = bridgeConfig(props);
    this.taskDefinition.addContainer('Bridge', {
      image:
        props.image ??
        ecs.ContainerImage.fromAsset(props.directory ?? repositoryRoot(), {
          file: 'packages/bridge/Dockerfile',
          // Only what the Dockerfile copies, so unrelated changes keep the image hash (and skip a rebuild):
          // the package files, the sources and the root filesystem `npm run bridge:rootfs` makes.
          exclude: [
            '*',
            '!package.json',
            '!package-lock.json',
            '!packages/bridge/Dockerfile',
            '!packages/bridge/src',
            '!packages/bridge/image',
            '!packages/runtime/src',
            '!packages/consumers/src',
            '!packages/notifier/src',
            '!packages/ops/src/migration',
            '!packages/ops/src/operations',
            '!.bridge-image',
          ],
        }),
      // Tokens (queue URLs) must be rendered as CloudFormation inside the JSON, hence toJsonString.
      environment: {
        BRIDGE_CONFIG: Stack.of(this).toJsonString(config),
        POWERTOOLS_SERVICE_NAME: 'rocketmq-bridge',
        ...(tracing === TracingBackend.off ? {} : { [TRACING_BACKEND_ENV]: tracing }),
      },
      ...(props.rocketMqCredentials
        ? {
            secrets: {
              ROCKETMQ_ACCESS_KEY: ecs.Secret.fromSecretsManager(props.rocketMqCredentials, 'accessKey'),
              ROCKETMQ_SECRET_KEY: ecs.Secret.fromSecretsManager(props.rocketMqCredentials, 'secretKey'),
            },
          }
        : {}),
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'bridge' }),
      healthCheck: {
        command: [
          'CMD',
          'node',
          '-e',
          `fetch('http://127.0.0.1:${HEALTH_PORT}/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`,
        ],
        interval: Duration.seconds(15),
        timeout: Duration.seconds(5),
        retries: 3,
        startPeriod: Duration.seconds(30),
      },
      // Draining finishes the forward in flight; one forward is bounded by the SDK's retries, far below this.
      stopTimeout: Duration.seconds(60),
      readonlyRootFilesystem: true,
    });
  }

  /** The service, scaling on CPU between `desiredCount` and `maxCount` when they differ. */
  private fargateService(props: RocketMQBridgeServiceProps, cluster: ecs.ICluster): ecs.FargateService {
    const scales = props.maxCount !== undefined && props.maxCount > (props.desiredCount ?? 1);
    const service = new ecs.FargateService(this, 'Service', {
      cluster,
      taskDefinition: this.taskDefinition,
      // With scaling, a deployment keeps the running count (the floor is the scaling minimum)
      // instead of resetting it to desiredCount in the middle of a busy hour.
      ...(scales ? {} : { desiredCount: props.desiredCount ?? 1 }),
      // Extra tasks during a deploy only share the groups' messages; no message is forwarded by two at once.
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { rollback: true },
      assignPublicIp: false,
      ...(props.vpcSubnets ? { vpcSubnets: props.vpcSubnets } : {}),
      ...(props.securityGroups ? { securityGroups: props.securityGroups } : {}),
    });
    if (scales) {
      service
        .autoScaleTaskCount({ minCapacity: props.desiredCount ?? 1, maxCapacity: props.maxCount })
        .scaleOnCpuUtilization('Cpu', {
          targetUtilizationPercent: props.cpuTargetPercent ?? 60,
          scaleOutCooldown: Duration.minutes(1),
          scaleInCooldown: Duration.minutes(5),
        });
    }
    return service;
  }

  /**
   * What X-Ray's OTLP endpoint is authorised as, `xray:PutTraceSegments`, and nothing else (no
   * `PutTelemetryRecords`: that is a daemon's). X-Ray has no resource-level permissions, so the
   * resource is `*`; the global `aws:RequestedRegion` narrows it to the stage's region.
   */
  private grantSpanExport(): void {
    const role = this.taskDefinition.taskRole;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['xray:PutTraceSegments'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:RequestedRegion': Stack.of(this).region } },
      }),
    );
    Validations.of(role).acknowledge({
      id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
      reason:
        "The bridge sends its spans to X-Ray's OTLP endpoint, authorised as xray:PutTraceSegments, which has no resource-level permissions; aws:RequestedRegion keeps it to the stage's region.",
    });
  }

  /** SendMessageBatch is authorised as sqs:SendMessage; nothing else is needed to forward. */
  private grantForwarding(routes: readonly RocketMQBridgeRoute[]): void {
    const role = this.taskDefinition.taskRole;
    const queues = routes.flatMap((r) => (r.queue ? [r.queue, r.dlq] : [r.dlq]));
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [...new Set(queues.map((q) => q.queueArn))],
      }),
    );
    for (const queue of queues) queue.encryptionMasterKey?.grant(role, 'kms:GenerateDataKey', 'kms:Decrypt');
    const buses = routes.flatMap((r) => (r.eventBus ? [r.eventBus] : []));
    if (buses.length > 0) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['events:PutEvents'],
          resources: [...new Set(buses.map((b) => b.eventBusArn))],
        }),
      );
    }
  }
}

/** The task definition's family and roles under fixed names (the trust is what CDK's own roles have). */
function namedRoles(scope: Construct, names: RocketMQBridgeNames): Partial<ecs.FargateTaskDefinitionProps> {
  const ecsTasks = new iam.ServicePrincipal('ecs-tasks.amazonaws.com');
  return {
    family: names.family,
    taskRole: new iam.Role(scope, 'TaskRole', {
      roleName: names.taskRole,
      assumedBy: ecsTasks,
      description: "The RocketMQ bridge: sends to its routes' queues and DLQs, puts events on their buses",
    }),
    executionRole: new iam.Role(scope, 'ExecutionRole', {
      roleName: names.executionRole,
      assumedBy: ecsTasks,
      description:
        "Starts the RocketMQ bridge's tasks: pulls the image, writes its logs, reads its RocketMQ credentials",
    }),
  };
}

function repositoryRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
}

/** Refuses at synth what the bridge would refuse at start, or what would make its service unsafe. */
function assertBridgeProps(props: RocketMQBridgeServiceProps): void {
  if (props.routes.length === 0) throw new Error('RocketMQBridgeService needs at least one route');
  if (props.traceCollectorImage !== undefined)
    throw new Error(
      "RocketMQBridgeService: traceCollectorImage is refused: the bridge sends its spans to X-Ray's OTLP endpoint itself, and no other container runs with its task role, which reads the signing key and sends to every queue (docs/security.md, third review); remove the setting",
    );
  if (!props.proxyEndpoint === !props.nameServer)
    throw new Error(
      'RocketMQBridgeService: give exactly one of proxyEndpoint (RocketMQ 5) or nameServer (RocketMQ 4.x)',
    );
  if (props.maxCount !== undefined && props.maxCount < (props.desiredCount ?? 1))
    throw new Error(
      `RocketMQBridgeService: maxCount ${props.maxCount} is below desiredCount ${props.desiredCount ?? 1}`,
    );
  if (props.nameServer && props.sslEnabled !== false) {
    throw new Error(
      'RocketMQBridgeService: the RocketMQ 4 client (nameServer) has no TLS; set sslEnabled: false explicitly to accept a clear-text link',
    );
  }
  const groupRefusal = rocketmqGroupRefusal(props.nameServer ? 'rocketmq4' : 'rocketmq5', props.routes);
  if (groupRefusal) throw new Error(groupRefusal);
  for (const route of props.routes) {
    if (!route.queue === !route.eventBus)
      throw new Error(`route ${route.group}: give exactly one of queue or eventBus`);
  }
}

/** `BRIDGE_CONFIG`: the link to RocketMQ and one route per group, rendered from the routes' queues and buses. */
function bridgeConfig(props: RocketMQBridgeServiceProps): BridgeConfigInput {
  const invisibleDuration = props.invisibleDuration ?? Duration.seconds(60);
  return {
    ...(props.nameServer
      ? { protocol: 'rocketmq4' as const, nameServer: props.nameServer }
      : { protocol: 'rocketmq5' as const, proxyEndpoint: props.proxyEndpoint! }),
    clusterName: props.clusterName ?? 'DefaultCluster',
    namespace: props.namespace ?? '',
    sslEnabled: props.sslEnabled ?? true,
    ...(props.envelopeSigningKey ? { signing: { secretId: props.envelopeSigningKey.secretArn } } : {}),
    invisibleDurationMs: invisibleDuration.toMilliseconds(),
    ...(props.maxMessageBytes !== undefined ? { maxMessageBytes: props.maxMessageBytes } : {}),
    health: { host: '127.0.0.1', port: HEALTH_PORT },
    routes: props.routes.map((r) => ({
      group: r.group,
      topic: r.topic,
      tagExpression: r.tagExpression ?? '*',
      fifo: r.fifo ?? false,
      ...(r.messageGroupFrom ? { messageGroupFrom: r.messageGroupFrom } : {}),
      ...(r.rocketmqGroup ? { rocketmqGroup: r.rocketmqGroup } : {}),
      ...(r.takeOver ? { takeOver: r.takeOver } : {}),
      target: r.queue
        ? { kind: 'sqs' as const, queueUrl: r.queue.queueUrl }
        : { kind: 'eventbridge' as const, eventBusName: r.eventBus!.eventBusName },
      dlqUrl: r.dlq.queueUrl,
    })),
    ...(props.outbound
      ? { outbound: { queueUrl: props.outbound.queue.queueUrl, dlqUrl: props.outbound.deadLetterQueue.queueUrl } }
      : {}),
  };
}
