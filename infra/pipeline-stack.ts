import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type DefaultStackSynthesizer, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as pipelines from 'aws-cdk-lib/pipelines';
import type { Construct } from 'constructs';
import { recordArtifactAccess } from './artifact-bucket.ts';
import { tuningOf } from './consumer-group.ts';
import { ConsumerStage } from './consumer-stage.ts';
import type { DeploymentSettings, StageSettings } from './deployment-settings.ts';
import { acknowledgePipelineFindings } from './pipeline-acknowledgements.ts';
import { REPOSITORY_ROOT } from './project-function.ts';

/**
 * The version of a tool the pipeline's self-mutation and asset steps install (`aws-cdk`,
 * `cdk-assets`): the one the lockfile resolved, so the pipeline never runs a CLI the project did
 * not (CDK Pipelines otherwise installs the latest of each at every run).
 */
export function lockedVersion(pkg: 'aws-cdk' | 'cdk-assets', root = REPOSITORY_ROOT): string {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const version = lock.packages?.[`node_modules/${pkg}`]?.version;
  if (typeof version !== 'string') throw new Error(`package-lock.json resolves no ${pkg}: run npm install`);
  return version;
}

export interface PipelineStackProps extends StackProps {
  readonly settings: DeploymentSettings;
}

/**
 * The build image every CodeBuild step runs on, and its runtimes: Ubuntu 24.04 (standard 8.0) is
 * the image whose runtime list has Node.js 24, the version `engines` asks for and production runs.
 * The synth step installs no Node of its own (the `node` devDependency's preinstall is an install
 * script, and scripts are off there), so this one is what synthesises the deployed assembly.
 */
const BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_8_0;
const NODE_RUNTIME = codebuild.BuildSpec.fromObject({ phases: { install: { 'runtime-versions': { nodejs: '24' } } } });
/** The emulator's lock (scripts/emulator/requirements.txt) is resolved for CPython 3.11 on linux x86_64. */
const TESTS_RUNTIME = codebuild.BuildSpec.fromObject({
  phases: { install: { 'runtime-versions': { nodejs: '24', python: '3.11' } } },
});

/**
 * CDK Pipelines: source from the repository connection; the tests in a step of their own whose
 * output nothing uses; then the synth step, whose cloud assembly is what self-mutation, the asset
 * steps and the stages deploy, so it installs with scripts off and runs nothing but the synth (cdk-nag
 * runs there too); then test, a security diff of production for the approver, the manual approval,
 * production. The pipeline updates itself first, so changing it is a commit like any other.
 */
export class PipelineStack extends Stack {
  readonly pipeline: pipelines.CodePipeline;
  readonly test: ConsumerStage;
  readonly prod: ConsumerStage;
  /** The project the approver reads before promoting to production; its own role only reads. */
  readonly securityDiff: pipelines.CodeBuildStep;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    const { pipeline: source, stages, runbookUrl } = props.settings;
    const input = pipelines.CodePipelineSource.connection(source.repository, source.branch, {
      connectionArn: source.connectionArn,
    });
    const tests = new pipelines.CodeBuildStep('Tests', {
      input,
      partialBuildSpec: TESTS_RUNTIME,
      // As on a developer's machine and in CI, install scripts included: nothing this step makes is
      // deployed. moto server and cfn-lint come from .venv, which emulator:setup provisions from the
      // hash lock scripts/emulator/requirements.txt.
      installCommands: ['npm ci --no-audit --no-fund', 'npm run emulator:setup'],
      commands: ['npm test', 'npm run lint:cfn'],
    });
    const synth = new pipelines.ShellStep('Synth', {
      input,
      // No install scripts: nothing outside the lockfiles' integrity hashes runs or lands.
      // esbuild needs none (its platform binary is an optional dependency in the lockfile), and
      // the Node that runs the synth is the build image's.
      installCommands: ['npm ci --ignore-scripts --no-audit --no-fund'],
      // A stage with the bridge needs its image's root filesystem in the build context before the
      // synth stages it: made from bridge/image/rootfs.lock.json, every byte checked (no-op otherwise).
      commands: ['npm run bridge:rootfs -- --if-bridge-enabled', 'npm run synth'],
    });
    synth.addStepDependency(tests);
    this.pipeline = new pipelines.CodePipeline(this, 'Pipeline', {
      pipelineName: 'rocketmq-consumers',
      pipelineType: codepipeline.PipelineType.V2,
      // Test and production are separate accounts: artifacts are encrypted with a key both may use.
      crossAccountKeys: true,
      enableKeyRotation: true,
      cliVersion: lockedVersion('aws-cdk'),
      cdkAssetsCliVersion: lockedVersion('cdk-assets'),
      synth,
      codeBuildDefaults: {
        buildEnvironment: { buildImage: BUILD_IMAGE, computeType: codebuild.ComputeType.MEDIUM },
        partialBuildSpec: NODE_RUNTIME,
      },
    });
    this.test = new ConsumerStage(this, 'Test', stageProps(stages.test, runbookUrl));
    this.pipeline.addStage(this.test, { post: [protectStacks(this.test, this.partition)] });
    this.prod = new ConsumerStage(this, 'Prod', stageProps(stages.prod, runbookUrl));
    this.securityDiff = securityDiff(this.pipeline, this.prod, synth);
    const approval = new pipelines.ManualApprovalStep('PromoteToProduction', {
      comment:
        'Test stage deployed and watched. Read the SecurityDiff action first: what this commit broadens in production (IAM, resource and key policies, security groups). Promote it?',
      reviewUrl: codeBuildProjectUrl(props.settings.pipeline, SECURITY_DIFF_PROJECT),
    });
    approval.addStepDependency(this.securityDiff);
    this.pipeline.addStage(this.prod, {
      pre: [this.securityDiff, approval],
      post: [protectStacks(this.prod, this.partition)],
    });
    this.pipeline.buildPipeline();
    recordArtifactAccess(this.pipeline);
    acknowledgePipelineFindings(this.pipeline);
  }
}

const SECURITY_DIFF_PROJECT = 'rocketmq-consumers-prod-security-diff';

function codeBuildProjectUrl({ account, region }: { account: string; region: string }, project: string): string {
  return `https://${region}.console.aws.amazon.com/codesuite/codebuild/${account}/projects/${project}/history?region=${region}`;
}

/**
 * `cdk diff --security-only` of the stage's stack, from the synth's cloud assembly against the
 * deployed template: what the commit would broaden (IAM statements, resource and key policies,
 * security group rules). `--method=template` reads the template through the stage account's CDK
 * lookup role (bootstrap: ReadOnlyAccess, kms:Decrypt denied); no change set, so the deploy role is
 * not needed. The step's role may assume that lookup role and nothing else, so what reports on the
 * stack cannot change it; if the lookup role cannot be assumed the CLI falls back to the deploy
 * role, which this role may not assume either, and the step fails rather than show nothing.
 */
function securityDiff(scope: Construct, stage: ConsumerStage, synth: pipelines.ShellStep): pipelines.CodeBuildStep {
  const synthesizer = stage.consumers.synthesizer as DefaultStackSynthesizer;
  const lookupRole = synthesizer.lookupRole?.replace(PARTITION_PLACEHOLDER, Stack.of(scope).partition);
  if (!lookupRole) throw new Error(`${stage.stageName}: the stack's synthesizer names no lookup role to read it with`);
  const role = new iam.Role(scope, 'SecurityDiffRole', {
    assumedBy: new iam.ServicePrincipal('codebuild.amazonaws.com'),
    description: `Reads the deployed ${stage.consumers.stackName} template (through the stage account's CDK lookup role) to show the approver what a commit broadens`,
  });
  role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: [lookupRole] }));
  return new pipelines.CodeBuildStep('SecurityDiff', {
    input: synth,
    projectName: SECURITY_DIFF_PROJECT,
    role,
    installCommands: [`npm install -g aws-cdk@${lockedVersion('aws-cdk')}`],
    commands: [`cdk diff --app ${stage.artifactId} --method=template --security-only --fail-on=never --no-color`],
  });
}

/**
 * CloudFormation deploy actions ignore a stack's `terminationProtection` (aws/aws-cdk#17871): only
 * the CLI sets it. After each deployment this step sets it through the stage account's CDK deploy
 * role (the bootstrap grants it cloudformation:UpdateTerminationProtection) and fails unless the
 * stack reports it on.
 */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the synthesizer's CloudFormation placeholder, literally.
const PARTITION_PLACEHOLDER = '${AWS::Partition}';

function protectStacks(stage: ConsumerStage, partition: string): pipelines.CodeBuildStep {
  const stack = stage.consumers;
  const synthesizer = stack.synthesizer as DefaultStackSynthesizer;
  // The synthesizer writes the partition as a CloudFormation placeholder; the pipeline and its
  // stages share a partition, so the pipeline's own partition token stands in for it.
  const deployRole = synthesizer.deployRoleArn.replace(PARTITION_PLACEHOLDER, partition);
  const target = `--profile stage --region ${stack.region}`;
  return new pipelines.CodeBuildStep('ProtectStacks', {
    commands: [
      `aws configure set profile.stage.role_arn ${deployRole}`,
      'aws configure set profile.stage.credential_source EcsContainer',
      `aws ${target} cloudformation update-termination-protection --enable-termination-protection --stack-name ${stack.stackName}`,
      `test "$(aws ${target} cloudformation describe-stacks --stack-name ${stack.stackName} --query 'Stacks[0].EnableTerminationProtection' --output text)" = True`,
    ],
    rolePolicyStatements: [new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: [deployRole] })],
  });
}

function stageProps(stage: StageSettings, runbookUrl: string) {
  return {
    env: { account: stage.account, region: stage.region },
    consumers: {
      prefix: stage.prefix,
      runbookUrl,
      services: stage.services,
      alarmTimeZone: stage.alarmTimeZone,
      dingTalkSecretName: stage.dingTalkSecretName,
      operatorEmail: stage.operatorEmail,
      notifierReservedConcurrency: stage.notifierReservedConcurrency,
      bridge: stage.bridge,
      senderRoleArns: stage.senderRoleArns,
      operatorRoleArns: stage.operatorRoleArns,
      keyRevokerRoleArns: stage.keyRevokerRoleArns,
      tracing: { backend: stage.tracing, ...(stage.adotLayerArn ? { adotLayerArn: stage.adotLayerArn } : {}) },
      tuning: {
        maxConcurrency: stage.maxConcurrency,
        batchSize: stage.batchSize,
        filterAtEventSource: stage.filterAtEventSource,
        ...(stage.maxBatchingWindowSeconds !== undefined
          ? { maxBatchingWindow: Duration.seconds(stage.maxBatchingWindowSeconds) }
          : {}),
      },
      groupTuning: Object.fromEntries(
        Object.entries(stage.groups ?? {}).map(([group, { vpc: _, ...tuning }]) => [group, tuningOf(tuning)]),
      ),
      groupVpcs: Object.fromEntries(
        Object.entries(stage.groups ?? {}).flatMap(([group, { vpc }]) => (vpc ? [[group, vpc]] : [])),
      ),
    },
  };
}
