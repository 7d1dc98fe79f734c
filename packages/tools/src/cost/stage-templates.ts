import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildApp, buildSandboxApp, REPOSITORY_ROOT, SANDBOX_CONTEXT_KEY } from '@rocketmq-lambda/infra/index.ts';
import { App } from 'aws-cdk-lib';
import { Template as Assertions } from 'aws-cdk-lib/assertions';
import type { Template } from './stage-cost.ts';

/** The sandbox settings docs/deploy.md's recipe starts from. */
export const SANDBOX_EXAMPLE = 'packages/infra/src/sandbox.example.json';

/**
 * A bridge of the default size (`bridge` in a stage's settings: two tasks of 0.5 vCPU and 1 GB)
 * on a network given by id, as docs/bridge.md's example stage has it.
 */
const EXAMPLE_BRIDGE = {
  enabled: true,
  endpoints: 'proxy1.mq.internal:8081;proxy2.mq.internal:8081',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [
    { id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' },
    { id: 'subnet-0a1b2c3d4e5f60712', availabilityZone: 'ap-northeast-1c' },
  ],
};

/**
 * The templates the cost table counts, synthesized offline: cdk.json's test stage with a bridge
 * of the default size, the sandbox of the recipe (`packages/infra/src/sandbox.example.json`), and the pipeline.
 */
export function stageTemplates(): { stage: Template; sandbox: Template; pipeline: Template } {
  const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
  const base = cdkJson.context.rocketmq;
  const context = {
    rocketmq: { ...base, stages: { ...base.stages, test: { ...base.stages.test, bridge: EXAMPLE_BRIDGE } } },
  };
  const { pipeline } = buildApp(new App({ context }));
  const { stack } = buildSandboxApp(
    new App({ context: { ...cdkJson.context, [SANDBOX_CONTEXT_KEY]: path.join(REPOSITORY_ROOT, SANDBOX_EXAMPLE) } }),
  );
  const json = (s: Parameters<typeof Assertions.fromStack>[0]) => Assertions.fromStack(s).toJSON() as Template;
  return { stage: json(pipeline.test.consumers), sandbox: json(stack), pipeline: json(pipeline) };
}
