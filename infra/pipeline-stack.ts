import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import * as pipelines from 'aws-cdk-lib/pipelines';
import type { Construct } from 'constructs';
import { tuningOf } from './consumer-group.ts';
import { ConsumerStage } from './consumer-stage.ts';
import { acknowledgePipelineFindings } from './pipeline-acknowledgements.ts';
import type { DeploymentSettings, StageSettings } from './deployment-settings.ts';

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
      synth: new pipelines.ShellStep('Synth', {
        input: pipelines.CodePipelineSource.connection(source.repository, source.branch, { connectionArn: source.connectionArn }),
        installCommands: [
          // cfn-lint is for `npm run lint:cfn`; the `node` devDependency brings Node 24. The
          // integration tests run against moto server from .venv, which emulator:setup provisions
          // from scripts/emulator/requirements.txt, as on a developer's machine.
          'pip3 install --quiet "cfn-lint==1.*"',
          'npm ci --no-audit --no-fund',
          'npm run emulator:setup',
        ],
        commands: ['npm test', 'npm run lint:cfn', 'npm run synth'],
      }),
      synthCodeBuildDefaults: {
        buildEnvironment: { buildImage: codebuild.LinuxBuildImage.STANDARD_7_0, computeType: codebuild.ComputeType.MEDIUM },
      },
    });
    this.test = new ConsumerStage(this, 'Test', stageProps(stages.test, runbookUrl));
    this.pipeline.addStage(this.test);
    this.prod = new ConsumerStage(this, 'Prod', stageProps(stages.prod, runbookUrl));
    this.pipeline.addStage(this.prod, {
      pre: [new pipelines.ManualApprovalStep('PromoteToProduction', { comment: 'Test stage deployed and watched: promote this commit to production?' })],
    });
    this.pipeline.buildPipeline();
    acknowledgePipelineFindings(this.pipeline);
  }
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
      tuning: {
        maxConcurrency: stage.maxConcurrency,
        batchSize: stage.batchSize,
        filterAtEventSource: stage.filterAtEventSource,
        ...(stage.maxBatchingWindowSeconds !== undefined ? { maxBatchingWindow: Duration.seconds(stage.maxBatchingWindowSeconds) } : {}),
      },
      groupTuning: Object.fromEntries(Object.entries(stage.groups ?? {}).map(([group, tuning]) => [group, tuningOf(tuning)])),
    },
  };
}
