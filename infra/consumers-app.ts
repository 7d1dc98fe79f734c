import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deploymentSettings } from './deployment-settings.ts';
import { PipelineStack } from './pipeline-stack.ts';

/**
 * The CDK app: the pipeline stack, which holds the test and production stages.
 * cdk-nag's AwsSolutions checks run on every synthesis; a finding fails it.
 */
export function buildApp(app: App = new App()): { app: App; pipeline: PipelineStack } {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const settings = deploymentSettings(app.node);
  const pipeline = new PipelineStack(app, 'RocketMqConsumersPipeline', {
    env: { account: settings.pipeline.account, region: settings.pipeline.region },
    settings,
    description: 'CDK Pipeline deploying the RocketMQ consumers to test, then production',
  });
  return { app, pipeline };
}
