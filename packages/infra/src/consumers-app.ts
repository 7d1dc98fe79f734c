import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deploymentSettings } from './deployment-settings.ts';
import { PipelineStack } from './pipeline-stack.ts';
import type { SecurityBaselineCheck } from './security-baseline.ts';
import { StageReaderStack } from './stage-reader-stack.ts';

/**
 * The CDK app: the pipeline stack, which holds the test and production stages, and per stage
 * account the stack reader the pipeline reads that stage through (deployed once, by hand).
 * cdk-nag's AwsSolutions checks run on every synthesis; a finding fails it. `securityBaseline`
 * checks the Deny and bus policy statements against the committed baseline: `cdk synth` (and so the
 * pipeline's synth step) runs with it; tests that synthesise other settings run without.
 */
export function buildApp(
  app: App = new App(),
  { securityBaseline }: { securityBaseline?: SecurityBaselineCheck } = {},
): {
  app: App;
  pipeline: PipelineStack;
  readers: { test: StageReaderStack; prod: StageReaderStack };
} {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  if (securityBaseline) Validations.of(app).addPlugins(securityBaseline);
  const settings = deploymentSettings(app.node);
  const pipeline = new PipelineStack(app, 'RocketMqConsumersPipeline', {
    env: { account: settings.pipeline.account, region: settings.pipeline.region },
    settings,
    description: 'CDK Pipeline deploying the RocketMQ consumers to test, then production',
  });
  const reader = (id: 'Test' | 'Prod', stage: 'test' | 'prod') => {
    const { account, region, prefix } = settings.stages[stage];
    return new StageReaderStack(app, `RocketMqConsumersReader-${id}`, {
      env: { account, region },
      prefix,
      stackName: pipeline[stage].consumers.stackName,
      pipeline: settings.pipeline,
      description: `Lets the pipeline read ${pipeline[stage].consumers.stackName} and nothing else; deployed once, by hand`,
    });
  };
  return { app, pipeline, readers: { test: reader('Test', 'test'), prod: reader('Prod', 'prod') } };
}
