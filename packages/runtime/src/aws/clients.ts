import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { STSClient } from '@aws-sdk/client-sts';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * How to reach AWS. In Lambda everything comes from the environment; locally and in tests
 * `endpoint` points at the emulator and credentials are dummies.
 */
export interface AwsConfig {
  endpoint?: string;
  /** DynamoDB's own endpoint when it is not `endpoint` (the local run's second emulator process). */
  dynamoDbEndpoint?: string;
  region?: string;
  /** SDK-level retries inside one invocation (transient faults) before the record is failed. */
  maxAttempts?: number;
}

export function emulatorConfig(endpoint: string, dynamoDbEndpoint?: string): AwsConfig {
  return {
    endpoint,
    region: 'us-east-1',
    ...(dynamoDbEndpoint && dynamoDbEndpoint !== endpoint ? { dynamoDbEndpoint } : {}),
  };
}

function baseConfig(config: AwsConfig, endpoint = config.endpoint) {
  return {
    region: config.region ?? process.env.AWS_REGION ?? 'us-east-1',
    maxAttempts: config.maxAttempts ?? 3,
    ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  };
}

export function createDynamoDb(config: AwsConfig = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(
    new DynamoDBClient(baseConfig(config, config.dynamoDbEndpoint ?? config.endpoint)),
    {
      marshallOptions: { removeUndefinedValues: true },
    },
  );
}

/** `settings`: client settings of the caller's own (the bridge turns the SDK's MD5 check off, see sqs-target.ts). */
export function createSqs(config: AwsConfig = {}, settings: Partial<SQSClientConfig> = {}): SQSClient {
  return new SQSClient({ ...baseConfig(config), ...settings });
}

export function createSecretsManager(config: AwsConfig = {}): SecretsManagerClient {
  return new SecretsManagerClient(baseConfig(config));
}

export function createEventBridge(config: AwsConfig = {}): EventBridgeClient {
  return new EventBridgeClient(baseConfig(config));
}

export function createCloudWatchLogs(config: AwsConfig = {}): CloudWatchLogsClient {
  return new CloudWatchLogsClient(baseConfig(config));
}

export function createSts(config: AwsConfig = {}): STSClient {
  return new STSClient(baseConfig(config));
}

/**
 * Config for code running in Lambda or a local run: `AWS_ENDPOINT_URL` selects the emulator, and
 * `AWS_ENDPOINT_URL_DYNAMODB` (the SDK's own name for it) DynamoDB's, when that runs apart.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): AwsConfig {
  if (!env.AWS_ENDPOINT_URL) return {};
  return {
    endpoint: env.AWS_ENDPOINT_URL,
    ...(env.AWS_ENDPOINT_URL_DYNAMODB ? { dynamoDbEndpoint: env.AWS_ENDPOINT_URL_DYNAMODB } : {}),
  };
}
