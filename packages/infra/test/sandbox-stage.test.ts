import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { queueName } from '@rocketmq-lambda/runtime/config/index.ts';
import { costTable, pipelineCost, stageCost, type Template } from '@rocketmq-lambda/tools/cost/stage-cost.ts';
import { SANDBOX_EXAMPLE, stageTemplates } from '@rocketmq-lambda/tools/cost/stage-templates.ts';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidDeploymentSettingsError } from '../src/deployment-settings.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';
import { buildSandboxApp, SANDBOX_CONTEXT_KEY, SANDBOX_STACK_ID } from '../src/sandbox-app.ts';

const run = promisify(execFile);
const example = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, SANDBOX_EXAMPLE), 'utf8'));
const docs = readFileSync(path.join(REPOSITORY_ROOT, 'docs/deploy.md'), 'utf8');

let outdir: string;
let template: Template;
beforeAll(async () => {
  // Act: the recipe's synth, as written in docs/deploy.md, with the example settings: offline, no credentials.
  outdir = mkdtempSync(path.join(tmpdir(), 'sandbox-synth-'));
  await run('npx', ['cdk', 'synth', '-c', `sandbox=${SANDBOX_EXAMPLE}`, '--quiet', '-o', outdir], {
    cwd: REPOSITORY_ROOT,
    env: { ...process.env, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '' },
  });
  template = JSON.parse(readFileSync(path.join(outdir, `${SANDBOX_STACK_ID}.template.json`), 'utf8'));
}, 300_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const ofType = (type: string) => Object.values(template.Resources).filter((r) => r.Type === type);

describe('a sandbox: one stage from a settings file, without the pipeline (docs/deploy.md, "A sandbox")', () => {
  it('synthesizes its stack alone, for the settings’ account and region, with the groups it names', () => {
    const manifest = JSON.parse(readFileSync(path.join(outdir, 'manifest.json'), 'utf8'));
    const stacks = Object.entries(manifest.artifacts as Record<string, { type: string; environment?: string }>).filter(
      ([, a]) => a.type === 'aws:cloudformation:stack',
    );
    expect(stacks.map(([id, a]) => [id, a.environment])).toEqual([
      [SANDBOX_STACK_ID, `aws://${example.account}/${example.region}`],
    ]);
    const queues = ofType('AWS::SQS::Queue').map((q) => q.Properties?.QueueName);
    expect(queues).toContain(queueName(example.prefix, 'point-consumer-group'));
    expect(queues.filter((n) => String(n).includes('coupon') || String(n).includes('order-status'))).toEqual([]);
    expect(ofType('AWS::CodePipeline::Pipeline')).toEqual([]);
  });

  it('lets the operator role of its settings send the test message to the source queue', () => {
    const policies = JSON.stringify(ofType('AWS::SQS::QueuePolicy').map((p) => p.Properties));
    expect(policies).toContain(example.operatorRoleArns[0]);
  });

  it('refuses settings it cannot deploy, naming the file and the key', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-settings-'));
    try {
      const file = path.join(dir, 'sandbox.json');
      writeFileSync(file, JSON.stringify({ ...example, account: '12345', consumerGroups: ['no-such-group'] }));
      const build = () => buildSandboxApp(new App({ context: { [SANDBOX_CONTEXT_KEY]: file } }));
      expect(build).toThrow(InvalidDeploymentSettingsError);
      expect(build).toThrow(`the sandbox settings ${file} are invalid`);
      expect(build).toThrow('account: an AWS account id is 12 digits');
      expect(build).toThrow('consumerGroups.0');
      expect(build).toThrow('runbookUrl: not set here, nor in cdk.json');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what a stage costs a month, counted from its template (docs/deploy.md, "What a stage costs a month")', () => {
  it('docs/deploy.md holds the table the synthesized templates give', () => {
    const templates = stageTemplates();
    const table = costTable({
      stage: stageCost(templates.stage),
      sandbox: stageCost(templates.sandbox),
      pipeline: pipelineCost(templates.pipeline),
    });
    expect(docs).toContain(table);
  }, 300_000);

  it('counts the sandbox’s fixed items from the template the recipe synthesizes', () => {
    const items = Object.fromEntries(stageCost(template).map((i) => [i.item, i.count]));
    expect(items).toMatchObject({
      'KMS keys': ofType('AWS::KMS::Key').length,
      'Secrets Manager secrets': ofType('AWS::SecretsManager::Secret').length,
      'CloudWatch alarm metrics': ofType('AWS::CloudWatch::Alarm').length,
      'CloudWatch dashboards': 1,
      'EventBridge archives': 1,
    });
  });
});
