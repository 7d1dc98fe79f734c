import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';

/**
 * How to reach AWS. In Lambda everything comes from the environment; locally and in tests
 * `endpoint` points at the emulator and credentials are dummies.
 */
export interface AwsConfig {
  endpoint?: string;
  region?: string;
  /** SDK-level retries inside one invocation (transient faults) before the record is failed. */
  maxAttempts?: number;
}

export function emulatorConfig(endpoint: string): AwsConfig {
  return { endpoint, region: 'us-east-1' };
}

function baseConfig(config: AwsConfig) {
  return {
    region: config.region ?? process.env.AWS_REGION ?? 'us-east-1',
    maxAttempts: config.maxAttempts ?? 3,
    ...(config.endpoint ? { endpoint: config.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  };
}

export function createDynamoDb(config: AwsConfig = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(new DynamoDBClient(baseConfig(config)), {
    marshallOptions: { removeUndefinedValues: true },
  });
}

export function createSqs(config: AwsConfig = {}): SQSClient {
  return new SQSClient(baseConfig(config));
}

export function createSecretsManager(config: AwsConfig = {}): SecretsManagerClient {
  return new SecretsManagerClient(baseConfig(config));
}

export function createEventBridge(config: AwsConfig = {}): EventBridgeClient {
  return new EventBridgeClient(baseConfig(config));
}

/** Config for code running in Lambda or a local run: `AWS_ENDPOINT_URL` selects the emulator. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): AwsConfig {
  return env.AWS_ENDPOINT_URL ? { endpoint: env.AWS_ENDPOINT_URL } : {};
}
