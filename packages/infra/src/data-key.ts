import { lambdaLogGroupName } from '@rocketmq-lambda/runtime/config/index.ts';
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { restrictKeyManagement } from './deployment-guards.ts';

export interface StageDataKeyProps {
  /** The stage's prefix: its functions are `<prefix>-…`, so are their log groups. */
  readonly prefix: string;
}

/**
 * The stage's key for what it keeps at rest that names users, orders and points: its DynamoDB
 * tables and its functions' log groups (a log line holds a business key and an outcome). Under a
 * key of the stage's own, every use is in CloudTrail by table or log group, the key can be
 * disabled to cut all access at once, and only the deployment manages it. Retained with the
 * tables it encrypts: without it they cannot be read.
 *
 * Callers use it only through DynamoDB (`grantTableUse`); CloudWatch Logs may use it for the
 * stage's function log groups alone (the encryption context names the log group).
 */
export class StageDataKey extends Construct {
  readonly key: kms.Key;

  constructor(scope: Construct, id: string, props: StageDataKeyProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.key = new kms.Key(this, 'Key', {
      description: `Encrypts the ${props.prefix} tables and function log groups`,
      alias: `alias/${props.prefix}/data`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
      pendingWindow: Duration.days(30),
    });
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
        actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
        resources: ['*'],
        conditions: {
          ArnLike: {
            'kms:EncryptionContext:aws:logs:arn': stack.formatArn({
              service: 'logs',
              resource: 'log-group',
              resourceName: lambdaLogGroupName(`${props.prefix}-*`),
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
    restrictKeyManagement(this.key);
  }

  /** `role` reads and writes a table under the key: the key's use through DynamoDB only. */
  grantTableUse(role: iam.IRole): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey'],
        resources: [this.key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` } },
      }),
    );
  }
}
