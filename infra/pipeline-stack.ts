import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type DefaultStackSynthesizer, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as pipelines from 'aws-cdk-lib/pipelines';
import type { Construct } from 'constructs';
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
 * CDK Pipelines: source from the repository connection, one synth step that installs, runs the
 * README's tests and synthesises (cdk-nag runs there too), then test, manual approval, production.
 * The pipeline updates itself first, so changing it is a commit like any other.
 */
export class PipelineStack extends Stack {
  readonly pipeline: pipelines.CodePipeline;
  readonly test: ConsumerStage;
  readonly prod: ConsumerStage;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    const { pipeline: source, stages, runbookUrl } = props.settings;
    this.pipeline = new pipelines.CodePipeline(this, 'Pipeline', {
      pipelineName: 'rocketmq-consumers',
      pipelineType: codepipeline.PipelineType.V2,
      // Test and production are separate accounts: artifacts are encrypted with a key both may use.
      crossAccountKeys: true,
      enableKeyRotation: true,
      cliVersion: lockedVersion('aws-cdk'),
      cdkAssetsCliVersion: lockedVersion('cdk-assets'),
      synth: new pipelines.ShellStep('Synth', {
        input: pipelines.CodePipelineSource.connection(source.repository, source.branch, {
          connectionArn: source.connectionArn,
        }),
        installCommands: [
          // The `node` devDependency brings Node 24. moto server and cfn-lint come from .venv,
          // which emulator:setup provisions from scripts/emulator/requirements.txt (both pinned
          // there), as on a developer's machine.
          'npm ci --no-audit --no-fund',
          'npm run emulator:setup',
        ],
        commands: ['npm test', 'npm run lint:cfn', 'npm run synth'],
      }),
      synthCodeBuildDefaults: {
        buildEnvironment: {
          buildImage: codebuild.LinuxBuildImage.STANDARD_7_0,
          computeType: codebuild.ComputeType.MEDIUM,
        },
      },
    });
    this.test = new ConsumerStage(this, 'Test', stageProps(stages.test, runbookUrl));
    this.pipeline.addStage(this.test, { post: [protectStacks(this.test, this.partition)] });
    this.prod = new ConsumerStage(this, 'Prod', stageProps(stages.prod, runbookUrl));
    this.pipeline.addStage(this.prod, {
      pre: [
        new pipelines.ManualApprovalStep('PromoteToProduction', {
          comment: 'Test stage deployed and watched: promote this commit to production?',
        }),
      ],
      post: [protectStacks(this.prod, this.partition)],
    });
    this.pipeline.buildPipeline();
    acknowledgePipelineFindings(this.pipeline);
  }
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
