import { describe, expect, it } from 'vitest';
import { configFromEnv, emulatorConfig } from '../../../src/aws/clients.ts';

describe('where the AWS clients send their calls', () => {
  it('takes DynamoDB’s own endpoint from AWS_ENDPOINT_URL_DYNAMODB, the SDK’s name for it', () => {
    expect(
      configFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566', AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:4567' }),
    ).toEqual({
      endpoint: 'http://127.0.0.1:4566',
      dynamoDbEndpoint: 'http://127.0.0.1:4567',
    });
    expect(configFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' })).toEqual({ endpoint: 'http://127.0.0.1:4566' });
    // In Lambda neither is set: the SDK's own endpoints.
    expect(configFromEnv({ AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:4567' })).toEqual({});
  });

  it('leaves DynamoDB on the main endpoint when both are one', () => {
    expect(emulatorConfig('http://127.0.0.1:4566', 'http://127.0.0.1:4566')).toEqual({
      endpoint: 'http://127.0.0.1:4566',
      region: 'us-east-1',
    });
    expect(emulatorConfig('http://127.0.0.1:4566', 'http://127.0.0.1:4567')).toMatchObject({
      dynamoDbEndpoint: 'http://127.0.0.1:4567',
    });
  });
});
