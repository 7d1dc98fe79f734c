import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The repository root: handler entries in the catalogue are relative to it. */
export const REPOSITORY_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ProjectFunctionProps {
  /** Handler module, relative to the repository root (as in `CONSUMER_GROUPS`). */
  readonly entry: string;
  readonly description: string;
  readonly environment?: Record<string, string>;
  readonly timeout?: Duration;
  readonly memorySize?: number;
  readonly reservedConcurrentExecutions?: number;
  readonly logRetention?: logs.RetentionDays;
}

/**
 * A Lambda function with this project's conventions: Node.js 24 on arm64, bundled into one
 * ESM file by the locally installed esbuild (no Docker), JSON logs in its own log group with
 * a retention, and its own role that can write only to that log group. Callers add the
 * function's data permissions one statement at a time.
 */
export class ProjectFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: ProjectFunctionProps) {
    super(scope, id);
    const entry = path.join(REPOSITORY_ROOT, props.entry);
    if (!existsSync(entry)) throw new MissingHandlerError(props.entry);
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Not AWSLambdaBasicExecutionRole: that managed policy may write to every log group.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: props.description,
    });
    this.logGroup.grantWrite(this.role);
    this.function = new NodejsFunction(this, 'Function', {
      entry,
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(30),
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
      systemLogLevelV2: lambda.SystemLogLevel.WARN,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
      projectRoot: REPOSITORY_ROOT,
      depsLockFilePath: path.join(REPOSITORY_ROOT, 'package-lock.json'),
      bundling: {
        forceDockerBundling: false,
        format: OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        // The SDK is bundled, not taken from the runtime: the exactly-once code depends on
        // the SDK's transaction error shapes, so the deployed version is the tested one.
        bundleAwsSDK: true,
        // Some CommonJS dependencies call `require` at run time; ESM bundles need it defined.
        banner: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);",
      },
    });
  }
}

export class MissingHandlerError extends Error {
  override readonly name = 'MissingHandlerError';
  constructor(readonly entry: string) {
    super(`handler module ${entry} does not exist; it cannot be bundled`);
  }
}
