import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lambdaLogGroupName } from '@rocketmq-lambda/runtime/config/index.ts';
import { CfnDeletionPolicy, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { CHECKOV_SKIPS, skipCheckov } from './checkov.ts';
import { functionTracingProps, type StageTracing, tracingWildcardReason } from './function-tracing.ts';

/** The repository root: handler entries in the catalogue are relative to it. */
export const REPOSITORY_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export interface ProjectFunctionProps {
  /** Handler module, relative to the repository root (as in `CONSUMER_GROUPS`). */
  readonly entry: string;
  /**
   * Physical name, under the deployment prefix (`<prefix>-…`), so an SCP or a permission boundary can deny
   * `lambda:InvokeFunction` on the prefix to every principal but the ones that may invoke (docs/security.md).
   */
  readonly functionName: string;
  readonly description: string;
  readonly environment?: Record<string, string>;
  readonly timeout?: Duration;
  readonly memorySize?: number;
  readonly reservedConcurrentExecutions?: number;
  readonly logRetention?: logs.RetentionDays;
  /** The key the log group is encrypted with: the stage's data key (a log line names an order and a user). */
  readonly logKey: kms.IKey;
  /** Run in a VPC (default: outside any). */
  readonly network?: FunctionNetwork;
  /** The stage's tracing back end (default: off). */
  readonly tracing?: StageTracing;
}

export interface FunctionNetwork {
  readonly vpc: ec2.IVpc;
  readonly subnets: readonly ec2.ISubnet[];
  readonly securityGroups: readonly ec2.ISecurityGroup[];
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
      // Named as Lambda would name it, so that `ops trace` finds a function's lines by its name.
      logGroupName: lambdaLogGroupName(props.functionName),
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      encryptionKey: props.logKey,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // A stage deployed before the groups were named gets a new group; the old one, with its
    // lines, is kept rather than deleted by the replacement (docs/deploy.md), and expires with
    // its retention.
    (this.logGroup.node.defaultChild as logs.CfnLogGroup).cfnOptions.updateReplacePolicy = CfnDeletionPolicy.RETAIN;
    // Not AWSLambdaBasicExecutionRole: that managed policy may write to every log group.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: props.description,
    });
    this.logGroup.grantWrite(this.role);
    const tracingWildcard = tracingWildcardReason(props.tracing);
    if (props.network) allowNetworkInterfaces(this, this.role, props.network, tracingWildcard);
    else if (tracingWildcard)
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
        reason: tracingWildcard,
      });
    const tracing = functionTracingProps(this, props.tracing);
    this.function = new NodejsFunction(this, 'Function', {
      functionName: props.functionName,
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
      environment: { NODE_OPTIONS: '--enable-source-maps', ...tracing.environment, ...props.environment },
      ...(tracing.tracing ? { tracing: tracing.tracing } : {}),
      ...(tracing.layers ? { layers: tracing.layers } : {}),
      ...(props.network
        ? {
            vpc: props.network.vpc,
            vpcSubnets: { subnets: [...props.network.subnets] },
            securityGroups: [...props.network.securityGroups],
          }
        : {}),
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
    skipCheckov(
      this.function,
      CHECKOV_SKIPS.lambdaEnvironmentKey,
      ...(props.network ? [] : [CHECKOV_SKIPS.lambdaOutsideVpc]),
    );
  }
}

/**
 * What Lambda needs to attach a function to its subnets, as inline statements instead of the
 * AWSLambdaVPCAccessExecutionRole managed policy (which grants them, and log writes, on *):
 * network interfaces are created only in the given subnets with the given security groups. The
 * interfaces' own ids are Lambda's to choose, and the Describe actions have no resource-level
 * permissions, so those two stay wildcards, acknowledged for cdk-nag with this reason.
 */
function allowNetworkInterfaces(
  scope: Construct,
  role: iam.Role,
  network: FunctionNetwork,
  /** Why else the role holds a wildcard (active tracing): one acknowledgement per finding, so both reasons in it. */
  alsoWildcard: string | undefined,
): void {
  const stack = Stack.of(scope);
  const ec2Arn = (resource: string, resourceName: string) =>
    stack.formatArn({ service: 'ec2', resource, resourceName });
  const interfaces = ec2Arn('network-interface', '*');
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['ec2:CreateNetworkInterface'],
      resources: [
        interfaces,
        ...network.subnets.map((s) => ec2Arn('subnet', s.subnetId)),
        ...network.securityGroups.map((g) => ec2Arn('security-group', g.securityGroupId)),
      ],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
      resources: [interfaces],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'], resources: ['*'] }),
  );
  const reason =
    "Lambda's VPC attachment: it names the function's network interfaces itself (created only in the group's subnets with its security groups), and ec2:DescribeNetworkInterfaces/DescribeSubnets have no resource-level permissions.";
  // The interfaces' ARN as cdk-nag prints it: pseudo parameters as `<AWS::…>`.
  const pseudo = (value: string, name: string) => (Token.isUnresolved(value) ? `<AWS::${name}>` : value);
  const renderedInterfaces = `arn:<AWS::Partition>:ec2:${pseudo(stack.region, 'Region')}:${pseudo(stack.account, 'AccountId')}:network-interface/*`;
  Validations.of(role).acknowledge({
    id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
    reason: alsoWildcard ? `${reason} ${alsoWildcard}` : reason,
  });
  Validations.of(role).acknowledge({ id: `AwsSolutions::AwsSolutions-IAM5[Resource::${renderedInterfaces}]`, reason });
}

export class MissingHandlerError extends Error {
  override readonly name = 'MissingHandlerError';
  constructor(readonly entry: string) {
    super(`handler module ${entry} does not exist; it cannot be bundled`);
  }
}
