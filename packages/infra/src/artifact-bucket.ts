import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as pipelines from 'aws-cdk-lib/pipelines';
import { CHECKOV_SKIPS, skipCheckov } from './checkov.ts';

/** How long a replaced or deleted artifact stays recoverable, and how long its access lines are kept. */
const NONCURRENT_ARTIFACT_DAYS = 30;
const ACCESS_LOG_DAYS = 365;

/**
 * The pipeline's artifact bucket holds what deploys (the cloud assembly, the assets): versioned, so
 * an artifact replaced between synth and deployment is still there to compare, and with S3 server
 * access logs, so a read or a write by anyone but the pipeline's roles is on record (CloudTrail
 * keeps no object-level events unless data events are bought). The logs go to a bucket of their
 * own (SSE-S3: server access logging delivers to no KMS-encrypted bucket), which only S3's log
 * delivery for this bucket may write. Call after `buildPipeline()`, when the bucket exists.
 */
export function recordArtifactAccess(pipeline: pipelines.CodePipeline): s3.Bucket {
  const stack = Stack.of(pipeline);
  const artifacts = pipeline.pipeline.artifactBucket;
  const logs = new s3.Bucket(stack, 'ArtifactAccessLogs', {
    encryption: s3.BucketEncryption.S3_MANAGED,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    enforceSSL: true,
    versioned: true,
    lifecycleRules: [
      { expiration: Duration.days(ACCESS_LOG_DAYS), noncurrentVersionExpiration: Duration.days(ACCESS_LOG_DAYS) },
    ],
    removalPolicy: RemovalPolicy.RETAIN,
  });
  logs.addToResourcePolicy(
    new iam.PolicyStatement({
      principals: [new iam.ServicePrincipal('logging.s3.amazonaws.com')],
      actions: ['s3:PutObject'],
      resources: [logs.arnForObjects('artifacts/*')],
      conditions: {
        ArnLike: { 'aws:SourceArn': artifacts.bucketArn },
        StringEquals: { 'aws:SourceAccount': stack.account },
      },
    }),
  );
  skipCheckov(logs, CHECKOV_SKIPS.accessLogBucketOwnLog);
  Validations.of(logs).acknowledge({
    id: 'AwsSolutions::AwsSolutions-S1',
    reason: CHECKOV_SKIPS.accessLogBucketOwnLog.comment,
  });
  const bucket = artifacts.node.defaultChild as s3.CfnBucket;
  bucket.versioningConfiguration = { status: 'Enabled' };
  bucket.lifecycleConfiguration = {
    rules: [{ status: 'Enabled', noncurrentVersionExpiration: { noncurrentDays: NONCURRENT_ARTIFACT_DAYS } }],
  };
  bucket.loggingConfiguration = { destinationBucketName: logs.bucketName, logFilePrefix: 'artifacts/' };
  return logs;
}
