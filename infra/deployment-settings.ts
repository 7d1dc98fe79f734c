import type { Node } from 'constructs';
import { z } from 'zod';

/**
 * Everything that differs between deployments, read from CDK context (`cdk.json` or `-c key=value`).
 * The defaults in cdk.json are placeholders, so `cdk synth` needs no credentials and no look-ups;
 * docs/deploy.md says which values to set before the first deployment.
 */
const account = z.string().regex(/^\d{12}$/, 'an AWS account id is 12 digits');
const region = z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as ap-northeast-1');

const stageSchema = z.object({
  account,
  region,
  /** Prefix of every physical name of this deployment. */
  prefix: z.string().regex(/^[a-z][a-z0-9-]{1,30}$/),
  couponServiceUrl: z.url(),
  alarmTimeZone: z.string().optional(),
  dingTalkSecretName: z.string().optional(),
  operatorEmail: z.email().optional(),
  notifierReservedConcurrency: z.number().int().nonnegative().optional(),
  maxConcurrency: z.number().int().min(2).max(1000).optional(),
  batchSize: z.number().int().min(1).max(10_000).optional(),
  maxBatchingWindowSeconds: z.number().int().min(0).max(300).optional(),
  /** false: no tag filter in the event source, so unreadable bodies are dead-lettered by the consumer instead of dropped. */
  filterAtEventSource: z.boolean().optional(),
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
export type PipelineSettings = z.infer<typeof pipelineSchema>;
export type DeploymentSettings = z.infer<typeof settingsSchema>;

export const CONTEXT_KEY = 'rocketmq';

export class InvalidDeploymentSettingsError extends Error {
  override readonly name = 'InvalidDeploymentSettingsError';
}

export function deploymentSettings(node: Node): DeploymentSettings {
  const raw = node.tryGetContext(CONTEXT_KEY);
  const parsed = settingsSchema.safeParse(typeof raw === 'string' ? JSON.parse(raw) : raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${CONTEXT_KEY}.${i.path.join('.')}: ${i.message}`).join('; ');
    throw new InvalidDeploymentSettingsError(`invalid deployment settings in the CDK context: ${problems}`);
  }
  return parsed.data;
}
