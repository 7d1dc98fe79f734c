import { Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { iamRoleArn, pipelineRoleName, stageReaderRoleName } from './pipeline-identities.ts';

export interface StageReaderStackProps extends StackProps {
  readonly env: { readonly account: string; readonly region: string };
  /** The stage's prefix, which names the role. */
  readonly prefix: string;
  /** The stage stack the pipeline reads: its template for the security diff, its termination protection. */
  readonly stackName: string;
  /** Where the pipeline runs: its stack reader is the one principal trusted. */
  readonly pipeline: { readonly account: string; readonly region: string };
}

/**
 * The one role of a stage account the pipeline's security diff and termination-protection checks
 * use: `cloudformation:GetTemplate` and `DescribeStacks` on the stage's stack, nothing else. The
 * bootstrap's lookup role would do (it is `ReadOnlyAccess`), but it also reads the stage's queues
 * and tables. Deployed once per stage account by an administrator of that account (`cdk deploy
 * RocketMqConsumersReader-<Stage>`), never by the pipeline: what reports on a commit cannot be
 * widened by that commit.
 */
export class StageReaderStack extends Stack {
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: StageReaderStackProps) {
    super(scope, id, { ...props, terminationProtection: true });
    const { prefix, stackName, pipeline } = props;
    const stageStack = this.formatArn({ service: 'cloudformation', resource: 'stack', resourceName: `${stackName}/*` });
    this.role = new iam.Role(this, 'StackReader', {
      roleName: stageReaderRoleName(prefix, this.region),
      description: `Lets the pipeline read ${stackName}'s template and termination protection, and nothing else`,
      // Trust by account with aws:PrincipalArn rather than naming the role as principal: IAM refuses
      // a principal that does not exist yet, and keeps a recreated role's old id, not its name.
      assumedBy: new iam.AccountPrincipal(pipeline.account).withConditions({
        ArnEquals: {
          'aws:PrincipalArn': iamRoleArn(
            this.partition,
            pipeline.account,
            pipelineRoleName('stack-reader', pipeline.region),
          ),
        },
      }),
      inlinePolicies: {
        ReadTheStageStack: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              actions: ['cloudformation:GetTemplate', 'cloudformation:DescribeStacks'],
              resources: [stageStack],
            }),
          ],
        }),
      },
    });
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:cloudformation:${this.region}:${this.account}:stack/${stackName}/*]`,
      reason:
        "A CloudFormation stack's ARN ends with the id CloudFormation gives it at creation; the wildcard stands for that id of this one stack, whose name is fixed.",
    });
  }
}
