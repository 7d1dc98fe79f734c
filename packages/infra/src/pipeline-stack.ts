import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
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
import { nameAndScopeAssetSteps } from './pipeline-assets.ts';
import {
  iamRoleArn,
  PIPELINE_NAME,
  pipelineProjectName,
  pipelineRoleName,
  stageReaderRoleName,
} from './pipeline-identities.ts';
import { integrityCheckedInstall, lockedPackage, lockedVersion, pinGeneratedToolInstalls } from './pipeline-tooling.ts';

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
/** The emulator's lock (packages/tools/src/emulator/requirements.txt) is resolved for CPython 3.11 on linux x86_64. */
const TESTS_RUNTIME = codebuild.BuildSpec.fromObject({
  phases: { install: { 'runtime-versions': { nodejs: '24', python: '3.11' } } },
});

/**
 * CDK Pipelines: source from the repository connection; the tests in a step of their own whose
 * output nothing uses; then the synth step, whose cloud assembly is what self-mutation, the asset
 * steps and the stages deploy, so it installs with scripts off and runs nothing but the synth (cdk-nag
 * and the security baseline check run there too); then test, a security diff of production for the
 * approver, the manual approval, production. The pipeline updates itself first, so changing it is a
 * commit like any other: branch protection is what guards it (docs/security.md, #37).
 *
 * Only the pipeline's own role deploys (through the stage accounts' CDK deploy roles) and starts
 * builds; no CodeBuild project of a stage step may assume a deploy role. What reports on a stage
 * (the security diff, the termination-protection checks) reads it through the stage's stack
 * reader, which may read that stack's template and status and nothing else.
 */
export class PipelineStack extends Stack {
  readonly pipeline: pipelines.CodePipeline;
  readonly test: ConsumerStage;
  readonly prod: ConsumerStage;
  /** The project the approver reads before promoting to production; its role only reads templates. */
  readonly securityDiff: pipelines.CodeBuildStep;
  /** CodePipeline's role: the one principal that starts the pipeline's builds and deploys the stages. */
  readonly pipelineRole: iam.Role;
  /** The security diff's and the checks' role: it may assume the stages' stack readers and nothing else. */
  readonly stackReader: iam.Role;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    const { pipeline: source, stages, runbookUrl } = props.settings;
    const input = pipelines.CodePipelineSource.connection(source.repository, source.branch, {
      connectionArn: source.connectionArn,
    });
    const tests = new pipelines.CodeBuildStep('Tests', {
      input,
      projectName: pipelineProjectName('tests'),
      partialBuildSpec: TESTS_RUNTIME,
      // As on a developer's machine and in CI, install scripts included: nothing this step makes is
      // deployed. moto server and cfn-lint come from .venv, which emulator:setup provisions from the
      // hash lock packages/tools/src/emulator/requirements.txt.
      installCommands: ['npm ci --no-audit --no-fund', 'npm run emulator:setup'],
      commands: ['npm test', 'npm run lint:cfn'],
    });
    const synth = new pipelines.CodeBuildStep('Synth', {
      input,
      projectName: pipelineProjectName('synth'),
      // No install scripts: nothing outside the lockfiles' integrity hashes runs or lands.
      // esbuild needs none (its platform binary is an optional dependency in the lockfile), and
      // the Node that runs the synth is the build image's.
      installCommands: ['npm ci --ignore-scripts --no-audit --no-fund'],
      // A stage with the bridge needs its image's root filesystem in the build context before the
      // synth stages it: made from packages/bridge/image/rootfs.lock.json, every byte checked (no-op otherwise).
      commands: ['npm run bridge:rootfs -- --if-bridge-enabled', 'npm run synth'],
    });
    synth.addStepDependency(tests);
    this.pipelineRole = new iam.Role(this, 'PipelineRole', {
      roleName: pipelineRoleName('pipeline', this.region),
      assumedBy: new iam.ServicePrincipal('codepipeline.amazonaws.com'),
      description: 'CodePipeline: starts the pipeline builds and deploys the stages through their CDK deploy roles',
    });
    this.pipeline = new pipelines.CodePipeline(this, 'Pipeline', {
      pipelineName: PIPELINE_NAME,
      pipelineType: codepipeline.PipelineType.V2,
      role: this.pipelineRole,
      // One principal starts builds and assumes the deploy roles, so the stage accounts' trust and
      // the account's SCP name one role, not one generated per action.
      usePipelineRoleForActions: true,
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
    this.stackReader = new iam.Role(this, 'StackReaderRole', {
      roleName: pipelineRoleName('stack-reader', this.region),
      assumedBy: new iam.ServicePrincipal('codebuild.amazonaws.com'),
      description: "Reads the stage stacks' templates and termination protection through each stage's stack reader",
    });
    this.test = new ConsumerStage(this, 'Test', stageProps(stages.test, runbookUrl));
    this.pipeline.addStage(this.test, { post: [this.terminationProtectionCheck(this.test, stages.test)] });
    this.prod = new ConsumerStage(this, 'Prod', stageProps(stages.prod, runbookUrl));
    this.securityDiff = this.securityDiffOf(this.prod, stages.prod, synth);
    const approval = new pipelines.ManualApprovalStep('PromoteToProduction', {
      comment:
        'Test stage deployed and watched. Read the SecurityDiff action first: what this commit broadens in production (IAM, queue, topic, secret and key policies, security groups; not the bus policy, which the synth checks against its baseline). Promote it?',
      reviewUrl: codeBuildProjectUrl(props.settings.pipeline, SECURITY_DIFF_PROJECT),
    });
    approval.addStepDependency(this.securityDiff);
    this.pipeline.addStage(this.prod, {
      pre: [this.securityDiff, approval],
      post: [this.terminationProtectionCheck(this.prod, stages.prod)],
    });
    this.pipeline.buildPipeline();
    recordArtifactAccess(this.pipeline);
    nameAndScopeAssetSteps(this.pipeline);
    pinGeneratedToolInstalls(this.pipeline);
    acknowledgePipelineFindings(this.pipeline, [this.pipelineRole, this.stackReader]);
  }

  /** The stage's stack reader, in the stage's account; the stack reader role may assume it. */
  private stageReaderOf({ account, region, prefix }: StageSettings): string {
    const arn = iamRoleArn(this.partition, account, stageReaderRoleName(prefix, region));
    this.stackReader.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: [arn] }));
    return arn;
  }

  /** AWS CLI arguments that act as the stage's stack reader (the build's own role assumes it). */
  private asStageReader(settings: StageSettings): { configure: string[]; target: string } {
    return {
      configure: [
        `aws configure set profile.stage.role_arn ${this.stageReaderOf(settings)}`,
        'aws configure set profile.stage.credential_source EcsContainer',
      ],
      target: `--profile stage --region ${settings.region}`,
    };
  }

  /**
   * `cdk diff --security-only` of the stage's stack, from the synth's cloud assembly against the
   * deployed template, which the step reads through the stage's stack reader (`GetTemplate`) and
   * hands to the CLI (`--template`), so the CLI itself needs no credentials. A stack not deployed yet
   * is diffed against an empty template; any other failure to read it fails the step, and the
   * approval is not reached. Advisory (`--fail-on=never`): what must not change unreviewed is
   * enforced at synth by the security baseline.
   */
  private securityDiffOf(
    stage: ConsumerStage,
    settings: StageSettings,
    synth: pipelines.CodeBuildStep,
  ): pipelines.CodeBuildStep {
    const name = stage.consumers.stackName;
    const { configure, target } = this.asStageReader(settings);
    return new pipelines.CodeBuildStep('SecurityDiff', {
      input: synth,
      projectName: SECURITY_DIFF_PROJECT,
      role: this.stackReader,
      installCommands: integrityCheckedInstall(lockedPackage('aws-cdk')),
      commands: [
        ...configure,
        `if aws ${target} cloudformation describe-stacks --stack-name ${name} > /dev/null 2> describe-stacks.log; ` +
          `then aws ${target} cloudformation get-template --stack-name ${name} --query TemplateBody --output json > deployed-template.json; ` +
          `elif grep -q 'does not exist' describe-stacks.log; then echo '{}' > deployed-template.json && echo '${name} is not deployed yet: everything below is new.'; ` +
          'else cat describe-stacks.log; false; fi',
        `cdk diff --app ${stage.artifactId} --template deployed-template.json --security-only --fail-on=never --no-color`,
      ],
    });
  }

  /**
   * CloudFormation deploy actions ignore a stack's `terminationProtection` (aws/aws-cdk#17871): only
   * the CLI sets it. Setting it takes `cloudformation:UpdateTerminationProtection`, which only the
   * deploy role holds, and no build may hold that: an administrator of the stage account turns it
   * on once, after the stack's first deployment. After each deployment this step reads it through
   * the stage's stack reader and fails, saying how to turn it on, unless it is on.
   */
  private terminationProtectionCheck(stage: ConsumerStage, settings: StageSettings): pipelines.CodeBuildStep {
    const { stackName: name, account, region } = stage.consumers;
    const { configure, target } = this.asStageReader(settings);
    const turnOn = `aws cloudformation update-termination-protection --enable-termination-protection --region ${region} --stack-name ${name}`;
    return new pipelines.CodeBuildStep('TerminationProtection', {
      projectName: pipelineProjectName(`${stage.stageName.toLowerCase()}-termination-protection`),
      role: this.stackReader,
      commands: [
        ...configure,
        `test "$(aws ${target} cloudformation describe-stacks --stack-name ${name} --query 'Stacks[0].EnableTerminationProtection' --output text)" = True || ` +
          `{ echo 'Termination protection of ${name} (account ${account}) is off. Turn it on once, as an administrator of that account: ${turnOn}; then retry this action.'; false; }`,
      ],
    });
  }
}

const SECURITY_DIFF_PROJECT = pipelineProjectName('prod-security-diff');

function codeBuildProjectUrl({ account, region }: { account: string; region: string }, project: string): string {
  return `https://${region}.console.aws.amazon.com/codesuite/codebuild/${account}/projects/${project}/history?region=${region}`;
}

/** A stage's settings as the props of its consumers' stack: the pipeline's stages and a sandbox alike. */
export function stageProps(stage: StageSettings, runbookUrl: string) {
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
