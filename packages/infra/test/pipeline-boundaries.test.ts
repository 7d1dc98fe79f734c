import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  allowingStatements,
  denyingStatements,
  type PolicyRequest,
  type PolicyStatement,
} from '@rocketmq-lambda/tools/testing/resource-policy.ts';
import { App, cx_api } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import type { PipelineStack } from '../src/pipeline-stack.ts';
import { integrityCheckedInstall, type LockedPackage, lockedPackage } from '../src/pipeline-tooling.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

/**
 * Issue #37, item 1: no CodeBuild project but the pipeline's own deploy actions can deploy; what
 * reports on a stage reads its stack and nothing else; the asset role starts only its projects;
 * the CLIs the pipeline installs are checked against the lockfile's integrity; and the SCP and
 * bootstrap trust docs/security.md gives close what CDK cannot, judged against the synthesized names.
 */
const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const settings = cdkJson.context.rocketmq;
const PIPELINE_ACCOUNT: string = settings.pipeline.account;
const REGION: string = settings.pipeline.region;
const STAGE_ACCOUNTS = [settings.stages.test.account, settings.stages.prod.account] as string[];

type Resource = { Type: string; Properties: Record<string, any> };
type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Condition?: unknown };

let outdir: string;
let pipeline: PipelineStack;
let resources: Record<string, Resource>;
let readerTemplates: Record<'test' | 'prod', Template>;

beforeAll(() => {
  outdir = mkdtempSync(path.join(tmpdir(), 'pipeline-boundaries-'));
  const context = { ...cdkJson.context, [cx_api.BUNDLING_STACKS]: [] };
  const built = buildApp(new App({ outdir, context, stackTraces: false }));
  built.app.synth();
  pipeline = built.pipeline;
  resources = Template.fromStack(pipeline).toJSON().Resources;
  readerTemplates = { test: Template.fromStack(built.readers.test), prod: Template.fromStack(built.readers.prod) };
}, 120_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** A template value as text, the partition placeholder as `aws` (the committed stages' partition). */
function text(value: unknown): string {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's placeholder, literally.
  if (typeof value === 'string') return value.replace('${AWS::Partition}', 'aws');
  if (Array.isArray(value)) return value.map(text).join(',');
  const object = value as Record<string, any>;
  if (object?.Ref === 'AWS::Partition') return 'aws';
  if (object?.['Fn::Join']) return (object['Fn::Join'][1] as unknown[]).map(text).join(object['Fn::Join'][0]);
  if (object?.['Fn::Sub']) return text(object['Fn::Sub']);
  return JSON.stringify(value);
}

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const roleOf = (project: Resource): string => project.Properties.ServiceRole['Fn::GetAtt'][0];
const statementsOf = (roleId: string): Statement[] =>
  ofType('AWS::IAM::Policy')
    .filter(([, p]) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
    .flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
const actions = (s: Statement) => [s.Action].flat();
const assumable = (roleId: string) =>
  statementsOf(roleId)
    .filter((s) => actions(s).includes('sts:AssumeRole'))
    .flatMap((s) => [s.Resource].flat().map(text))
    .sort();
const roleNamed = (name: string) => {
  const found = ofType('AWS::IAM::Role').filter(([, r]) => r.Properties.RoleName === name);
  expect(found, name).toHaveLength(1);
  return found[0]![0];
};
const projects = () => ofType('AWS::CodeBuild::Project');
const projectNamed = (name: string) => projects().find(([, p]) => p.Properties.Name === name)!;
const buildSpecOf = (project: Resource) => JSON.parse(text(project.Properties.Source.BuildSpec));
const iamRole = (account: string, name: string) => `arn:aws:iam::${account}:role/${name}`;
const bootstrapRole = (kind: string, account: string) =>
  iamRole(account, `cdk-hnb659fds-${kind}-role-${account}-${REGION}`);

describe('who can deploy', () => {
  it('no CodeBuild project may assume a stage account’s deploy, execution or lookup role', () => {
    const reachable = new Map(projects().map(([, p]) => [p.Properties.Name as string, assumable(roleOf(p))]));
    for (const [name, arns] of reachable)
      for (const arn of arns)
        expect(arn, `${name} may assume ${arn}`).not.toMatch(
          new RegExp(`:iam::(${STAGE_ACCOUNTS.join('|')}):role/cdk-hnb659fds-(deploy|cfn-exec|lookup)-role-`),
        );
    // What each may assume instead.
    expect(reachable.get('rocketmq-consumers-prod-security-diff')).toEqual([
      iamRole(STAGE_ACCOUNTS[0]!, `rmq-test-stack-reader-${REGION}`),
      iamRole(STAGE_ACCOUNTS[1]!, `rmq-prod-stack-reader-${REGION}`),
    ]);
    expect(reachable.get('rocketmq-consumers-assets-fileasset1')).toEqual(
      STAGE_ACCOUNTS.map((a) => bootstrapRole('file-publishing', a)),
    );
    expect(reachable.get('rocketmq-consumers-selfupdate')).toEqual([`arn:*:iam::${PIPELINE_ACCOUNT}:role/*`]);
    expect(reachable.get('rocketmq-consumers-tests')).toEqual([]);
    expect(reachable.get('rocketmq-consumers-synth')).toEqual([]);
  });

  it('the pipeline’s own role alone assumes the stage deploy roles, for the deploy actions, and starts every build', () => {
    const pipelineRole = roleNamed(`rocketmq-consumers-pipeline-${REGION}`);
    const [, codePipeline] = ofType('AWS::CodePipeline::Pipeline')[0]!;
    expect(codePipeline.Properties.RoleArn).toEqual({ 'Fn::GetAtt': [pipelineRole, 'Arn'] });
    expect(assumable(pipelineRole)).toEqual(STAGE_ACCOUNTS.map((a) => bootstrapRole('deploy', a)));
    const allActions = codePipeline.Properties.Stages.flatMap((s: any) => s.Actions);
    for (const action of allActions) {
      const role = action.RoleArn ? text(action.RoleArn) : undefined;
      if (action.ActionTypeId.Provider === 'CloudFormation') expect(role).toMatch(/cdk-hnb659fds-deploy-role-/);
      else expect(role, `${action.Name} runs as the pipeline role`).toBeUndefined();
    }
    const starts = statementsOf(pipelineRole)
      .filter((s) => actions(s).includes('codebuild:StartBuild'))
      .flatMap((s) => [s.Resource].flat());
    expect(starts.map((arn: any) => arn['Fn::GetAtt'][0]).sort()).toEqual(
      projects()
        .map(([id]) => id)
        .sort(),
    );
  });

  it('the asset roles may start, stop and read only their own projects', () => {
    const assetRole = roleNamed(`rocketmq-consumers-file-assets-${REGION}`);
    const own = projects()
      .filter(([, p]) => roleOf(p) === assetRole)
      .map(([id]) => ({ 'Fn::GetAtt': [id, 'Arn'] }));
    expect(own.length).toBeGreaterThan(0);
    const builds = statementsOf(assetRole).filter((s) => actions(s).some((a) => a.startsWith('codebuild:')));
    const buildActions = builds.filter((s) => actions(s).includes('codebuild:StartBuild'));
    expect(buildActions).toHaveLength(1);
    expect(buildActions[0]!.Resource).toEqual(own);
  });

  it('with the bridge on, its image is published by the image asset role, which starts only its own project', () => {
    const bridge = {
      enabled: true,
      endpoints: 'proxy1.mq.internal:8081',
      vpcId: 'vpc-0a1b2c3d4e5f60718',
      subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
    };
    const rocketmq = { ...settings, stages: { ...settings.stages, test: { ...settings.stages.test, bridge } } };
    const app = new App({ context: { rocketmq, [cx_api.BUNDLING_STACKS]: [] }, stackTraces: false });
    const withBridge = Template.fromStack(buildApp(app).pipeline).toJSON().Resources as Record<string, Resource>;
    const [imageRole] = Object.entries(withBridge).find(
      ([, r]) => r.Type === 'AWS::IAM::Role' && r.Properties.RoleName === `rocketmq-consumers-image-assets-${REGION}`,
    )!;
    const own = Object.entries(withBridge)
      .filter(
        ([, r]) => r.Type === 'AWS::CodeBuild::Project' && r.Properties.ServiceRole['Fn::GetAtt'][0] === imageRole,
      )
      .map(([id, r]) => {
        expect(r.Properties.Name).toMatch(/^rocketmq-consumers-assets-dockerasset\d+$/);
        return { 'Fn::GetAtt': [id, 'Arn'] };
      });
    expect(own).toHaveLength(1);
    const starts = Object.values(withBridge)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: { Ref: string }) => x.Ref === imageRole),
      )
      .flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[])
      .filter((st) => actions(st).includes('codebuild:StartBuild'));
    expect(starts.map((st) => st.Resource)).toEqual([own]);
  }, 120_000);

  it('names every project under the pipeline’s name, and the roles the stage accounts trust', () => {
    for (const [, project] of projects()) expect(project.Properties.Name).toMatch(/^rocketmq-consumers-/);
    for (const role of ['pipeline', 'file-assets', 'stack-reader']) roleNamed(`rocketmq-consumers-${role}-${REGION}`);
  });
});

describe('the CLIs the pipeline installs', () => {
  it('come from the tarball whose sha512 the lockfile holds, installed offline with scripts off', () => {
    const installs = projects().map(([, p]) => [p.Properties.Name, buildSpecOf(p).phases.install?.commands ?? []]);
    for (const [name, commands] of installs)
      for (const command of commands)
        if (/^npm (install|i) /.test(command)) expect(command.split(' ').at(-1), name).toMatch(/^\/tmp\/[\w.-]+\.tgz$/);
    const installing = (tool: 'aws-cdk' | 'cdk-assets') =>
      installs.filter(([, commands]) => commands.join('\n').includes(`${tool}@`)).map(([name]) => name);
    expect(installing('aws-cdk').sort()).toEqual([
      'rocketmq-consumers-prod-security-diff',
      'rocketmq-consumers-selfupdate',
    ]);
    expect(installing('cdk-assets')).toHaveLength(
      projects().filter(([, p]) => /assets-/.test(p.Properties.Name)).length,
    );
    for (const [name, commands] of installs) {
      const tool = commands.join('\n').includes('aws-cdk@')
        ? 'aws-cdk'
        : commands.join('\n').includes('cdk-assets@')
          ? 'cdk-assets'
          : undefined;
      if (tool) expect(commands, name).toEqual(integrityCheckedInstall(lockedPackage(tool)));
    }
    const { integrity } = lockedPackage('cdk-assets');
    const lock = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'package-lock.json'), 'utf8'));
    expect(integrity).toBe(lock.packages['node_modules/cdk-assets'].integrity);
  });

  it('refuse a tarball whose bytes are not the locked ones', () => {
    const bytes = Buffer.from(`a tool's tarball ${process.pid}`);
    const fake: LockedPackage = {
      name: 'cdk-assets',
      version: `0.0.0-test.${process.pid}`,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
    };
    const [, check] = integrityCheckedInstall(fake);
    const tarball = `/tmp/${fake.name}-${fake.version}.tgz`;
    try {
      writeFileSync(tarball, bytes);
      expect(spawnSync('sh', ['-c', check!]).status).toBe(0);
      writeFileSync(tarball, Buffer.concat([bytes, Buffer.from('!')]));
      const refused = spawnSync('sh', ['-c', check!], { encoding: 'utf8' });
      expect(refused.status).not.toBe(0);
      expect(refused.stdout).toContain('FAILED');
    } finally {
      rmSync(tarball, { force: true });
    }
  });
});

describe('what reports on a stage', () => {
  it('each stage’s stack reader may read that stack’s template and status, and trusts only the pipeline’s stack reader', () => {
    for (const stage of ['test', 'prod'] as const) {
      const { account, prefix } = settings.stages[stage];
      const stackName = pipeline[stage].consumers.stackName;
      const roles = Object.values(readerTemplates[stage].findResources('AWS::IAM::Role')) as Resource[];
      expect(roles).toHaveLength(1);
      const role = roles[0]!.Properties;
      expect(role.RoleName).toBe(`${prefix}-stack-reader-${REGION}`);
      expect(role.AssumeRolePolicyDocument.Statement).toHaveLength(1);
      const [trust] = role.AssumeRolePolicyDocument.Statement;
      expect(text(trust.Principal.AWS)).toBe(`arn:aws:iam::${PIPELINE_ACCOUNT}:root`);
      expect(trust.Condition).toEqual({
        ArnEquals: { 'aws:PrincipalArn': expect.anything() },
      });
      expect(text(trust.Condition.ArnEquals['aws:PrincipalArn'])).toBe(
        iamRole(PIPELINE_ACCOUNT, `rocketmq-consumers-stack-reader-${REGION}`),
      );
      expect(role.ManagedPolicyArns).toBeUndefined();
      const statements = role.Policies.flatMap((p: any) => p.PolicyDocument.Statement);
      expect(statements).toHaveLength(1);
      expect(statements[0].Action).toEqual(['cloudformation:GetTemplate', 'cloudformation:DescribeStacks']);
      expect(text(statements[0].Resource)).toBe(`arn:aws:cloudformation:${REGION}:${account}:stack/${stackName}/*`);
      expect(Object.keys(readerTemplates[stage].findResources('AWS::IAM::Policy'))).toEqual([]);
    }
  });
});

/**
 * The buildspecs' own commands, run under `sh` in the synth's output as CodeBuild runs them in its
 * input, with the real CDK CLI; the AWS CLI is a stand-in (no AWS here) that answers as the
 * scenario says and fails on anything it was not written for.
 */
describe('the security diff and the termination-protection check, run', () => {
  let bin: string;
  beforeAll(() => {
    bin = mkdtempSync(path.join(tmpdir(), 'aws-stand-in-'));
    writeFileSync(
      path.join(bin, 'aws'),
      `#!/bin/sh
echo "aws $*" >> "$AWS_CALLS"
case "$*" in
  "configure set "*) exit 0 ;;
  *"describe-stacks --stack-name "*"--query Stacks[0].EnableTerminationProtection --output text") echo "$PROTECTION"; exit 0 ;;
  *"describe-stacks --stack-name "*)
    case "$SCENARIO" in
      deployed) echo '{}'; exit 0 ;;
      absent) echo "An error occurred (ValidationError) when calling the DescribeStacks operation: Stack with id $6 does not exist" >&2; exit 254 ;;
      *) echo "An error occurred (AccessDenied) when calling the DescribeStacks operation: not authorized" >&2; exit 254 ;;
    esac ;;
  *"get-template --stack-name "*"--query TemplateBody --output json") cat "$DEPLOYED"; exit 0 ;;
esac
echo "stand-in: unexpected call: $*" >&2
exit 99
`,
    );
    chmodSync(path.join(bin, 'aws'), 0o755);
  });
  afterAll(() => rmSync(bin, { recursive: true, force: true }));

  /** Each build command in turn, stopping at the first that fails, as CodeBuild does. */
  function runBuild(projectName: string, env: Record<string, string>) {
    const [, project] = projectNamed(projectName);
    const work = mkdtempSync(path.join(tmpdir(), 'codebuild-'));
    const calls = path.join(work, 'calls.log');
    let output = '';
    let status: number | null = 0;
    for (const command of buildSpecOf(project).phases.build.commands as string[]) {
      const run = spawnSync('sh', ['-c', command], {
        cwd: outdir,
        encoding: 'utf8',
        env: {
          ...process.env,
          PATH: `${bin}:${path.join(REPOSITORY_ROOT, 'node_modules', '.bin')}:${process.env.PATH}`,
          AWS_CALLS: calls,
          ...env,
        },
      });
      output += run.stdout + run.stderr;
      status = run.status;
      if (status !== 0) break;
    }
    const called = readFileSync(calls, 'utf8');
    rmSync(work, { recursive: true, force: true });
    rmSync(path.join(outdir, 'deployed-template.json'), { force: true });
    rmSync(path.join(outdir, 'describe-stacks.log'), { force: true });
    return { status, output, called };
  }

  const prodReader = `arn:aws:iam::${STAGE_ACCOUNTS[1]}:role/rmq-prod-stack-reader-${REGION}`;

  it('diffs the production stack against its deployed template, read as the stage’s stack reader', () => {
    // Deployed: production as committed, plus a Deny the commit drops: the diff must list it.
    const prodTemplate = path.join(
      outdir,
      pipeline.prod.artifactId,
      `${pipeline.prod.consumers.artifactId}.template.json`,
    );
    const deployed = JSON.parse(readFileSync(prodTemplate, 'utf8'));
    const [, queuePolicy] = Object.entries(deployed.Resources as Record<string, Resource>).find(
      ([id, r]) => r.Type === 'AWS::SQS::QueuePolicy' && id.startsWith('PointConsumerGroupQueue'),
    )!;
    queuePolicy.Properties.PolicyDocument.Statement.push({
      Sid: 'DroppedByTheCommit',
      Effect: 'Deny',
      Principal: '*',
      Action: 'sqs:DeleteQueue',
      Resource: '*',
    });
    const deployedFile = path.join(tmpdir(), `deployed-${process.pid}.json`);
    writeFileSync(deployedFile, JSON.stringify(deployed));
    try {
      const { status, output, called } = runBuild('rocketmq-consumers-prod-security-diff', {
        SCENARIO: 'deployed',
        DEPLOYED: deployedFile,
      });
      expect(status, output).toBe(0);
      expect(called).toContain(`aws configure set profile.stage.role_arn ${prodReader}`);
      expect(called).toContain(
        `aws --profile stage --region ${REGION} cloudformation get-template --stack-name Prod-Consumers`,
      );
      expect(output).toMatch(/IAM Statement Changes[\s\S]*│ - │[^\n]*│ Deny {3}│ sqs:DeleteQueue/);
    } finally {
      rmSync(deployedFile, { force: true });
    }
  }, 120_000);

  it('diffs against nothing when the stack is not deployed yet, and fails when it cannot read it', () => {
    const absent = runBuild('rocketmq-consumers-prod-security-diff', { SCENARIO: 'absent' });
    expect(absent.status, absent.output).toBe(0);
    expect(absent.output).toContain('Prod-Consumers is not deployed yet: everything below is new.');
    expect(absent.output).toMatch(/IAM Statement Changes[\s\S]*│ \+ │/);
    const denied = runBuild('rocketmq-consumers-prod-security-diff', { SCENARIO: 'denied' });
    expect(denied.status).not.toBe(0);
    expect(denied.output).toContain('AccessDenied');
    expect(denied.output).not.toContain('IAM Statement Changes');
  }, 120_000);

  it('passes when termination protection is on, and fails saying how to turn it on when it is off', () => {
    const on = runBuild('rocketmq-consumers-prod-termination-protection', { PROTECTION: 'True' });
    expect(on.status, on.output).toBe(0);
    expect(on.called).toContain(`aws configure set profile.stage.role_arn ${prodReader}`);
    expect(on.called).not.toContain('update-termination-protection');
    const off = runBuild('rocketmq-consumers-prod-termination-protection', { PROTECTION: 'False' });
    expect(off.status).not.toBe(0);
    expect(off.output).toContain(
      `Termination protection of Prod-Consumers (account ${STAGE_ACCOUNTS[1]}) is off. Turn it on once, as an administrator of that account: aws cloudformation update-termination-protection --enable-termination-protection --region ${REGION} --stack-name Prod-Consumers`,
    );
  });
});

describe('the SCP and the bootstrap trust in docs/security.md', () => {
  const doc = readFileSync(path.join(REPOSITORY_ROOT, 'docs', 'security.md'), 'utf8');
  /** The first JSON block under a heading, as an operator would copy it. */
  const block = (heading: string) => {
    const section = doc.slice(doc.indexOf(heading));
    expect(section.length, heading).toBeLessThan(doc.length);
    return JSON.parse(/```json\n([\s\S]*?)\n```/.exec(section)![1]!);
  };
  const as = (principal: string, action: string, resource: string): PolicyRequest => ({
    principal,
    action,
    resource,
    context: { 'aws:PrincipalArn': principal },
  });
  const generatedName = (id: string) => iamRole(PIPELINE_ACCOUNT, `RocketMqConsumersPipeline-${id}-0A1B2C3D4E5F`);
  const pipelineRoles = () => ({
    pipeline: iamRole(PIPELINE_ACCOUNT, `rocketmq-consumers-pipeline-${REGION}`),
    assets: iamRole(PIPELINE_ACCOUNT, `rocketmq-consumers-file-assets-${REGION}`),
    reader: iamRole(PIPELINE_ACCOUNT, `rocketmq-consumers-stack-reader-${REGION}`),
    tests: generatedName(roleOf(projectNamed('rocketmq-consumers-tests')[1])),
    selfMutation: generatedName(roleOf(projectNamed('rocketmq-consumers-selfupdate')[1])),
    admin: iamRole(PIPELINE_ACCOUNT, 'AWSReservedSSO_AdministratorAccess_0123456789abcdef'),
  });

  it('the pipeline account’s SCP leaves starting the pipeline’s projects to the pipeline, and changing them to CloudFormation', () => {
    // An SCP names no principal: it binds every principal of the account (but service-linked roles).
    const scp = (block('#### SCP for the pipeline account').Statement as PolicyStatement[]).map((s) => ({
      ...s,
      Principal: '*',
    }));
    const denied = (request: PolicyRequest) => denyingStatements(scp, request).length > 0;
    const roles = pipelineRoles();
    const cloudFormation = bootstrapRole('cfn-exec', PIPELINE_ACCOUNT);
    const projectArn = (name: string) => `arn:aws:codebuild:${REGION}:${PIPELINE_ACCOUNT}:project/${name}`;
    const names = projects().map(([, p]) => p.Properties.Name as string);
    expect(names).toContain('rocketmq-consumers-prod-termination-protection');
    for (const name of names) {
      for (const start of ['codebuild:StartBuild', 'codebuild:StartBuildBatch', 'codebuild:RetryBuild']) {
        expect(denied(as(roles.pipeline, start, projectArn(name))), `${start} ${name} by the pipeline`).toBe(false);
        for (const other of [roles.admin, roles.assets, roles.reader, roles.tests, roles.selfMutation, cloudFormation])
          expect(denied(as(other, start, projectArn(name))), `${start} ${name} by ${other}`).toBe(true);
      }
      expect(denied(as(roles.admin, 'codebuild:UpdateProject', projectArn(name)))).toBe(true);
      expect(denied(as(cloudFormation, 'codebuild:UpdateProject', projectArn(name)))).toBe(false);
    }
    const [, codePipeline] = ofType('AWS::CodePipeline::Pipeline')[0]!;
    const pipelineArn = `arn:aws:codepipeline:${REGION}:${PIPELINE_ACCOUNT}:${codePipeline.Properties.Name}`;
    expect(denied(as(roles.admin, 'codepipeline:UpdatePipeline', pipelineArn))).toBe(true);
    expect(denied(as(cloudFormation, 'codepipeline:UpdatePipeline', pipelineArn))).toBe(false);
    for (const role of [roles.pipeline, roles.assets, roles.reader])
      for (const action of ['iam:PassRole', 'iam:PutRolePolicy', 'iam:UpdateAssumeRolePolicy', 'iam:CreateRole']) {
        expect(denied(as(roles.admin, action, role)), `${action} ${role} by an administrator`).toBe(true);
        expect(denied(as(cloudFormation, action, role)), `${action} ${role} by CloudFormation`).toBe(false);
      }
    // Other projects and roles of the account are untouched.
    expect(denied(as(roles.admin, 'codebuild:StartBuild', projectArn('another-app-build')))).toBe(false);
    expect(denied(as(roles.admin, 'iam:PassRole', iamRole(PIPELINE_ACCOUNT, 'another-app-role')))).toBe(false);
  });

  it('the production SCP for the bus leaves its permissions and its archive to CloudFormation alone', () => {
    // The bus's own policy cannot deny PutPermission or RemovePermission (docs/security.md, item 6): this SCP does.
    const sid = '"Sid": "OnlyCloudFormationChangesTheBus"';
    const opening = doc.lastIndexOf('```json', doc.indexOf(sid));
    const body = doc.slice(opening + '```json'.length, doc.indexOf('```', doc.indexOf(sid)));
    const scp: PolicyStatement[] = [{ ...JSON.parse(body), Principal: '*' }];
    const account = STAGE_ACCOUNTS[1]!;
    const bus = `arn:aws:events:${REGION}:${account}:event-bus/rmq-prod-rocketmq`;
    const denied = (principal: string, action: string) => denyingStatements(scp, as(principal, action, bus)).length > 0;
    const changes = ['PutPermission', 'RemovePermission', 'DeleteEventBus', 'UpdateEventBus', 'DeleteArchive'];
    for (const action of changes.map((a) => `events:${a}`)) {
      expect(denied(iamRole(account, 'AWSReservedSSO_AdministratorAccess_0123456789abcdef'), action), action).toBe(
        true,
      );
      expect(denied(iamRole(account, 'rmq-prod-bridge-task'), action), action).toBe(true);
      expect(denied(bootstrapRole('cfn-exec', account), action), `${action} by CloudFormation`).toBe(false);
    }
    // Publishing and reading rules stay with IAM and the bus policy.
    expect(denied(iamRole(account, 'rmq-prod-bridge-task'), 'events:PutEvents')).toBe(false);
    expect(
      denied(iamRole(account, 'AWSReservedSSO_AdministratorAccess_0123456789abcdef'), 'events:DescribeEventBus'),
    ).toBe(false);
  });

  it('the stage accounts’ bootstrap roles trust only the pipeline’s roles that need them', () => {
    const trust = block("#### Trust of the stage accounts' bootstrap roles") as Record<string, PolicyStatement[]>;
    const roles = pipelineRoles();
    const may = (statements: PolicyStatement[], principal: string, role: string) =>
      allowingStatements(statements, as(principal, 'sts:AssumeRole', role)).length > 0;
    for (const account of STAGE_ACCOUNTS) {
      const deploy = bootstrapRole('deploy', account);
      const files = bootstrapRole('file-publishing', account);
      const lookup = bootstrapRole('lookup', account);
      expect(may(trust.DeploymentActionRole!, roles.pipeline, deploy)).toBe(true);
      expect(may(trust.FilePublishingRole!, roles.assets, files)).toBe(true);
      for (const other of [roles.admin, roles.assets, roles.reader, roles.tests, roles.selfMutation])
        expect(may(trust.DeploymentActionRole!, other, deploy), `${other} deploys`).toBe(false);
      for (const other of [roles.admin, roles.pipeline, roles.reader, roles.tests])
        expect(may(trust.FilePublishingRole!, other, files), `${other} publishes`).toBe(false);
      for (const anyone of Object.values(roles)) expect(may(trust.LookupRole!, anyone, lookup)).toBe(false);
      expect(
        may(
          trust.ImagePublishingRole!,
          iamRole(PIPELINE_ACCOUNT, `rocketmq-consumers-image-assets-${REGION}`),
          bootstrapRole('image-publishing', account),
        ),
      ).toBe(true);
    }
    // The names the documented statements trust are the ones the pipeline stack gives its roles.
    for (const name of [roles.pipeline, roles.assets])
      expect(ofType('AWS::IAM::Role').map(([, r]) => iamRole(PIPELINE_ACCOUNT, r.Properties.RoleName))).toContain(name);
    // And another account's role of the same name is not trusted.
    expect(
      may(
        trust.DeploymentActionRole!,
        iamRole('999999999999', `rocketmq-consumers-pipeline-${REGION}`),
        bootstrapRole('deploy', STAGE_ACCOUNTS[1]!),
      ),
    ).toBe(false);
  });
});
