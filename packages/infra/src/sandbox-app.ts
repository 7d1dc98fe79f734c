import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONSUMER_GROUPS } from '@rocketmq-lambda/runtime/config/index.ts';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { z } from 'zod';
import { RocketMQConsumersStack } from './consumer-stack.ts';
import { CONTEXT_KEY, InvalidDeploymentSettingsError, stageSchema } from './deployment-settings.ts';
import { stageProps } from './pipeline-stack.ts';

/** `cdk … -c sandbox=<file>`: deploy one stage from that settings file, without the pipeline. */
export const SANDBOX_CONTEXT_KEY = 'sandbox';
export const SANDBOX_STACK_ID = 'RocketMqConsumersSandbox';

/**
 * What a sandbox adds to a stage's settings (the keys of `stages.<stage>` in cdk.json): which
 * groups to deploy, so a trial needs no outside service its other groups call, and where alarm
 * descriptions link to (default: cdk.json's `runbookUrl`).
 */
const sandboxExtras = z
  .object({
    consumerGroups: z
      .array(z.enum(CONSUMER_GROUPS.map((g) => g.group) as [string, ...string[]]))
      .min(1)
      .optional(),
    runbookUrl: z.url().optional(),
  })
  .loose();

export interface SandboxSettings {
  readonly stage: z.infer<typeof stageSchema>;
  readonly consumerGroups?: readonly string[];
  readonly runbookUrl: string;
}

/** The settings file the context names, read and checked like cdk.json's stages; any problem names the file and key. */
export function sandboxSettings(app: App, root = process.cwd()): SandboxSettings {
  const file = String(app.node.tryGetContext(SANDBOX_CONTEXT_KEY));
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(path.resolve(root, file), 'utf8'));
  } catch (error) {
    throw new InvalidDeploymentSettingsError(`cannot read the sandbox settings ${file}: ${(error as Error).message}`);
  }
  const extras = sandboxExtras.safeParse(raw);
  const { consumerGroups, runbookUrl, ...stageKeys } = typeof raw === 'object' && raw !== null ? raw : {};
  const stage = stageSchema.safeParse(stageKeys);
  const issues = [...(extras.success ? [] : extras.error.issues), ...(stage.success ? [] : stage.error.issues)];
  const fallbackRunbook = (app.node.tryGetContext(CONTEXT_KEY) as { runbookUrl?: string } | undefined)?.runbookUrl;
  const runbook = (runbookUrl as string | undefined) ?? fallbackRunbook;
  if (issues.length > 0 || !stage.success || !runbook) {
    const problems = issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    if (!runbook) problems.push('runbookUrl: not set here, nor in cdk.json');
    throw new InvalidDeploymentSettingsError(`the sandbox settings ${file} are invalid: ${problems.join('; ')}`);
  }
  return {
    stage: stage.data,
    ...(consumerGroups ? { consumerGroups: consumerGroups as string[] } : {}),
    runbookUrl: runbook,
  };
}

/**
 * One stage alone, for a trial in an account of one's own (docs/deploy.md, "A sandbox"): the
 * consumers' stack the pipeline deploys to each stage, from a settings file instead of cdk.json's
 * stages, with no pipeline, no repository connection and no termination protection, so
 * `cdk destroy` removes it. cdk-nag's checks run as on the pipeline's synth.
 */
export function buildSandboxApp(app: App = new App()): { app: App; stack: RocketMQConsumersStack } {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const settings = sandboxSettings(app);
  const { env, consumers } = stageProps(settings.stage, settings.runbookUrl);
  const stack = new RocketMQConsumersStack(app, SANDBOX_STACK_ID, {
    ...consumers,
    env,
    groups: settings.consumerGroups
      ? CONSUMER_GROUPS.filter((g) => settings.consumerGroups!.includes(g.group))
      : CONSUMER_GROUPS,
    description: `RocketMQ consumers with exactly-once effects, a sandbox stage (${settings.stage.prefix})`,
  });
  return { app, stack };
}
