import { takeOverSchema } from '@rocketmq-lambda/bridge/index.ts';
import {
  CONSUMER_GROUPS,
  OUTSIDE_SERVICES,
  type OutsideServiceName,
  TRACING_BACKENDS,
  TracingBackend,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { Node } from 'constructs';
import { z } from 'zod';
import { serviceSettingSchema } from './outside-service.ts';

/**
 * Everything that differs between deployments, read from CDK context (`cdk.json` or `-c key=value`).
 * The defaults in cdk.json are placeholders, so `cdk synth` needs no credentials and no look-ups;
 * docs/deploy.md says which values to set before the first deployment.
 */
const account = z.string().regex(/^\d{12}$/, 'an AWS account id is 12 digits');
const region = z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as ap-northeast-1');

/** A network given by id (no look-ups, so synth stays offline): the bridge's tasks and VPC-placed groups. */
const vpcId = z.string().regex(/^vpc-[0-9a-f]+$/);
const subnets = z
  .array(z.object({ id: z.string().regex(/^subnet-[0-9a-f]+$/), availabilityZone: z.string().min(1) }))
  .min(1);
const securityGroupIds = z.array(z.string().regex(/^sg-[0-9a-f]+$/)).default([]);

/**
 * A role ARN a resource policy lists by `ArnNotLike`. A wildcard may stand for a path segment or
 * for what follows a fixed start of the role's name (an SSO permission set's generated suffix),
 * never for the name itself: `role/*` or `role/ops-*` would cancel the policy that lists it.
 */
const MIN_FIXED_NAME_CHARS = 8;
/** Every SSO role's name starts so: a prefix no longer than this names every permission set at once. */
const SSO_ROLE_NAME_START = 'AWSReservedSSO_';
const roleArn = z
  .string()
  .regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/*?-]+$/, 'an IAM role ARN')
  .refine(
    (arn) => {
      const name = arn.slice(arn.lastIndexOf('/') + 1);
      const wildcard = name.search(/[*?]/);
      if (wildcard < 0) return true;
      const fixed = name.slice(0, wildcard);
      return fixed.length >= MIN_FIXED_NAME_CHARS && !SSO_ROLE_NAME_START.startsWith(fixed);
    },
    {
      message: `a wildcard may follow only a fixed start of the role's name of at least ${MIN_FIXED_NAME_CHARS} characters, one that names a single permission set for an SSO role (role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_RedriveOperator_*), never stand for the name`,
    },
  );

/**
 * Where a group's function runs inside a VPC: private subnets with a route to the AWS APIs it calls
 * (NAT or VPC endpoints for SQS, DynamoDB, Secrets Manager) and to its outside services, and
 * security groups added to the one the group gets (outbound to port 443 and its services' ports).
 */
const vpcPlacementSchema = z.strictObject({ vpcId, subnets, securityGroupIds });

const groupTuningSchema = z
  .object({
    batchSize: z.number().int().min(1).max(10_000),
    maxBatchingWindowSeconds: z.number().int().min(0).max(300),
    maxConcurrency: z.number().int().min(2).max(1000),
    timeoutSeconds: z.number().int().min(1).max(900),
    memorySize: z.number().int().min(128).max(10_240),
    filterAtEventSource: z.boolean(),
    packing: z.boolean(),
    /** Run the group's function in a VPC (default: outside any VPC). */
    vpc: vpcPlacementSchema,
  })
  .partial()
  .strict();

/**
 * The stage's RocketMQ bridge (ECS Fargate; packages/infra/src/bridge/). Off unless `enabled`, so a synth needs
 * no cluster. The network is given by id (no look-ups: synth stays offline); routes are not
 * configured here: they derive from the consumer-group catalogue.
 */
const bridgeSchema = z
  .object({
    enabled: z.boolean().default(false),
    /** `rocketmq5`: gRPC proxy endpoints; `rocketmq4`: name server addresses (remoting). */
    protocol: z.enum(['rocketmq5', 'rocketmq4']).default('rocketmq5'),
    /** `host:port`, several separated by `;`. */
    endpoints: z.string().regex(/^[\w.-]+:\d+(;[\w.-]+:\d+)*$/, 'host:port, several separated by ;'),
    clusterName: z.string().min(1).default('DefaultCluster'),
    namespace: z.string().default(''),
    /**
     * TLS to the cluster (default on). RocketMQ 4's remoting client has none: `rocketmq4` needs `false`, said
     * explicitly.
     */
    tls: z.boolean().default(true),
    /**
     * Refused when false: every deployed stage has the signing key, its consumers refuse to start
     * without it, and its bridge signs every envelope. Kept so a stage that still says `false` is
     * told why, not silently ignored.
     */
    signEnvelopes: z
      .boolean()
      .default(true)
      .refine((sign) => sign, {
        message:
          'is false, but every deployed stage signs envelopes: its consumers refuse to start without the key and dead-letter unsigned envelopes, so the bridge must sign (remove the setting)',
      }),
    /** Secrets Manager secret with `{accessKey, secretKey}` when the cluster enforces ACL. */
    credentialsSecretName: z.string().min(1).optional(),
    vpcId,
    /** Private subnets that reach the cluster and AWS endpoints, with their availability zones. */
    subnets,
    /** Extra security groups for the tasks (e.g. one the cluster's security group admits). */
    securityGroupIds,
    /**
     * IPv4 blocks the cluster listens in (its proxies, or its name servers and brokers): the tasks'
     * security group lets them out on the cluster's ports only towards these (default: any address,
     * on those ports only). The ports come from `endpoints` and, on RocketMQ 4, `brokerPorts`.
     */
    clusterCidrs: z.array(z.cidrv4()).min(1).default(['0.0.0.0/0']),
    /**
     * RocketMQ 4.x: the ports of the brokers the name servers hand out (each broker's `listenPort`,
     * default 10911). RocketMQ 5 clients talk to the proxies alone, so it is refused there.
     */
    brokerPorts: z.array(z.number().int().min(1).max(65_535)).min(1).optional(),
    /**
     * Per catalogue group, the RocketMQ consumer group its route consumes as instead of the group's
     * own name: the legacy group a cutover takes over (`takeOver`, RocketMQ 4), or a shadow stage's
     * group. The catalogue group keeps naming the queues, records and metrics (docs/migration.md).
     */
    routes: z
      .record(
        z.string(),
        z
          .object({
            rocketmqGroup: z.string().min(1),
            takeOver: takeOverSchema.optional(),
          })
          .strict(),
      )
      .default({}),
    /** Tasks running when idle; every task joins every route's consumer group and shares its messages. */
    desiredCount: z.number().int().min(1).max(100).default(2),
    /** Upper bound of CPU target tracking. */
    maxCount: z.number().int().min(1).max(100).default(4),
    cpuTargetPercent: z.number().int().min(10).max(90).default(60),
    cpu: z.union([z.literal(256), z.literal(512), z.literal(1024), z.literal(2048), z.literal(4096)]).default(512),
    memoryMiB: z.number().int().min(512).max(30_720).default(1024),
    /** A route whose newest forwarded message was stored longer ago than this alarms (lag). */
    lagAlarmSeconds: z.number().int().min(60).default(300),
  })
  .strict()
  .refine((b) => b.maxCount >= b.desiredCount, {
    message: 'maxCount must be at least desiredCount',
    path: ['maxCount'],
  })
  .refine((b) => b.protocol === 'rocketmq4' || b.brokerPorts === undefined, {
    message:
      'brokerPorts is for rocketmq4, whose clients pull from the brokers; rocketmq5 clients reach the proxies only',
    path: ['brokerPorts'],
  })
  .refine((b) => !(b.protocol === 'rocketmq4' && b.tls), {
    message:
      'protocol is rocketmq4, whose remoting client has no TLS, but tls is true (the default): set tls to false to accept a clear-text link on a private network',
    path: ['tls'],
  });

export const stageSchema = z
  .object({
    account,
    region,
    /** Prefix of every physical name of this deployment. */
    prefix: z.string().regex(/^[a-z][a-z0-9-]{1,30}$/),
    /** Each outside service a group of the catalogue calls (`OUTSIDE_SERVICES`): URL and authentication. */
    services: z
      .partialRecord(
        z.enum(Object.keys(OUTSIDE_SERVICES) as [OutsideServiceName, ...OutsideServiceName[]]),
        serviceSettingSchema,
      )
      .default({}),
    alarmTimeZone: z.string().optional(),
    dingTalkSecretName: z.string().optional(),
    operatorEmail: z.email().optional(),
    notifierReservedConcurrency: z.number().int().nonnegative().optional(),
    maxConcurrency: z.number().int().min(2).max(1000).optional(),
    batchSize: z.number().int().min(1).max(10_000).optional(),
    maxBatchingWindowSeconds: z.number().int().min(0).max(300).optional(),
    /**
     * false: no tag filter in the event source, so unreadable bodies are dead-lettered by the consumer instead of
     * dropped.
     */
    filterAtEventSource: z.boolean().optional(),
    /** Per consumer group, over its catalogue tuning: `{"point-consumer-group": {"maxConcurrency": 50}}`. */
    groups: z.record(z.string(), groupTuningSchema).optional(),
    bridge: bridgeSchema.optional(),
    /**
     * IAM roles allowed, besides the stage's bridge, to send to the source queues and put events on
     * the bus (ARNs, `*` allowed): a bridge run elsewhere, the role operators redrive dead letters
     * with. Everyone else is denied by the queues' and the bus's resource policies.
     */
    senderRoleArns: z.array(roleArn).default([]),
    /**
     * IAM roles operators run `ops` writes with (`dlq redrive`, `dlq resign`, `keys revoke`): they
     * may send to the source queues and the DLQs, read the signing key (to re-sign reviewed letters)
     * and put new values on the stage's secrets. Everyone else is denied by the resource policies.
     */
    operatorRoleArns: z.array(roleArn).default([]),
    /**
     * Break-glass IAM roles that may revoke a version of the signing key (`ops keys revoke`) and do
     * nothing else: label it `revoked-<id>` and, when it is the current one, put the replacement.
     * They cannot read the key, move another label or change any other secret, so a stage without
     * operator roles can still take a compromised key out at once (docs/runbook.md).
     */
    keyRevokerRoleArns: z.array(roleArn).default([]),
    /**
     * Where the consumers' and the bridge's spans go: `off` (none made), `xray` (Lambda active
     * tracing; the bridge sets SQS's AWSTraceHeader) or `adot` (the ADOT layer exports them; needs
     * `adotLayerArn`). docs/architecture.md, "Trace context".
     */
    tracing: z.enum(TRACING_BACKENDS).default(TracingBackend.off),
    /** `tracing: adot` only: the AWS Distro for OpenTelemetry Lambda layer (Node.js, arm64) in the stage's region. */
    adotLayerArn: z
      .string()
      .regex(/^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[\w-]+:\d+$/, 'a Lambda layer version ARN')
      .optional(),
  })
  .refine((s) => s.tracing === TracingBackend.adot || s.adotLayerArn === undefined, {
    message:
      'adotLayerArn is set but tracing is not adot: the layer would not be attached (set tracing to adot, or remove adotLayerArn)',
    path: ['adotLayerArn'],
  })
  .refine((s) => s.tracing !== TracingBackend.adot || s.adotLayerArn !== undefined, {
    message:
      "tracing is adot but adotLayerArn is not set: name the ADOT Lambda layer (Node.js, arm64) of the stage's region",
    path: ['tracing'],
  });

const pipelineSchema = z.object({
  account,
  region,
  /** `owner/repo` as the connection names it. */
  repository: z.string().regex(/^[^/\s]+\/[^/\s]+$/),
  branch: z.string().min(1),
  /** A CodeStar / CodeConnections connection, authorised once in the console. */
  connectionArn: z.string().regex(/^arn:aws[a-z-]*:(codestar-connections|codeconnections):/),
});

const settingsSchema = z.object({
  pipeline: pipelineSchema,
  stages: z.object({ test: stageSchema, prod: stageSchema }),
  runbookUrl: z.url(),
});

export type StageSettings = z.infer<typeof stageSchema>;
export type BridgeStageSettings = z.infer<typeof bridgeSchema>;
export type VpcPlacement = z.infer<typeof vpcPlacementSchema>;
export type PipelineSettings = z.infer<typeof pipelineSchema>;
export type DeploymentSettings = z.infer<typeof settingsSchema>;

export const CONTEXT_KEY = 'rocketmq';

export class InvalidDeploymentSettingsError extends Error {
  override readonly name = 'InvalidDeploymentSettingsError';
}

/** Per-group settings for a group the catalogue does not have would silently apply to nothing. */
function unknownGroups(settings: DeploymentSettings): string[] {
  const known = new Set<string>(CONSUMER_GROUPS.map((g) => g.group));
  return Object.entries(settings.stages).flatMap(([stage, s]) =>
    [
      ...Object.keys(s.groups ?? {}).map((g) => [`groups.${g}`, g] as const),
      ...Object.keys(s.bridge?.routes ?? {}).map((g) => [`bridge.routes.${g}`, g] as const),
    ]
      .filter(([, g]) => !known.has(g))
      .map(([path]) => `${CONTEXT_KEY}.stages.${stage}.${path}: not a consumer group of the catalogue`),
  );
}

export function deploymentSettings(node: Node): DeploymentSettings {
  const raw = node.tryGetContext(CONTEXT_KEY);
  const parsed = settingsSchema.safeParse(typeof raw === 'string' ? JSON.parse(raw) : raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${CONTEXT_KEY}.${i.path.join('.')}: ${i.message}`).join('; ');
    throw new InvalidDeploymentSettingsError(`invalid deployment settings in the CDK context: ${problems}`);
  }
  const unknown = unknownGroups(parsed.data);
  if (unknown.length > 0)
    throw new InvalidDeploymentSettingsError(`invalid deployment settings in the CDK context: ${unknown.join('; ')}`);
  return parsed.data;
}
