import { POINTS, consumer as pointsConsumer } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { describe, expect, it } from 'vitest';
import {
  CONSUMER_ENV,
  lifetimeEnvironment,
  lifetimesOf,
  OUTBOX_ENV,
  outboxTableName,
  TABLE_ENV,
} from '../../../../src/config/index.ts';
import { InvalidConsumerConfigError } from '../../../../src/consumer/failures/errors.ts';
import { consumerConfigFromEnv } from '../../../../src/consumer/lambda/consumer-config.ts';

/** The points function's environment as the CDK app writes it, its outbox table included. */
function deployedEnvironment(): NodeJS.ProcessEnv {
  const { lifetimes, recordTtlSeconds } = lifetimesOf(POINTS);
  return {
    AWS_REGION: 'ap-northeast-1',
    AWS_ENDPOINT_URL: 'http://127.0.0.1:1',
    [CONSUMER_ENV.group]: POINTS.group,
    [CONSUMER_ENV.deadLetterQueueUrl]: 'https://sqs.ap-northeast-1.amazonaws.com/333333333333/rmq-prod-points-dlq',
    ...Object.fromEntries(POINTS.tables.map((t) => [TABLE_ENV[t], `rmq-prod-${t}`])),
    [OUTBOX_ENV.table]: outboxTableName('rmq-prod', POINTS.group),
    ...lifetimeEnvironment(lifetimes, recordTtlSeconds),
    [CONSUMER_ENV.envelopeSigningSecret]: 'rmq-prod/envelope-signing-key',
  };
}

describe('a publishing group is never wired without its outbox table', () => {
  it('reads the outbox table from OUTBOX_TABLE and starts with it', () => {
    const config = consumerConfigFromEnv(POINTS, deployedEnvironment());
    expect(config.outboxTable).toBe('rmq-prod-point-consumer-group-outbox');
    expect(() => pointsConsumer.create(config)).not.toThrow();
  });

  it('refuses the cold start when OUTBOX_TABLE is not set', () => {
    const { [OUTBOX_ENV.table]: _, ...env } = deployedEnvironment();
    expect(() => consumerConfigFromEnv(POINTS, env)).toThrow(InvalidConsumerConfigError);
    expect(() => consumerConfigFromEnv(POINTS, env)).toThrow('environment variable OUTBOX_TABLE is not set');
  });

  it('refuses a configuration of the local run or a test that gives no outbox table, naming what it publishes', () => {
    const { outboxTable: _, ...config } = consumerConfigFromEnv(POINTS, deployedEnvironment());
    expect(() => pointsConsumer.create(config)).toThrow(InvalidConsumerConfigError);
    expect(() => pointsConsumer.create(config)).toThrow(
      'consumer group point-consumer-group: its entry publishes (POINTS_TOPIC), but no outbox table was given to write its messages to (OUTBOX_TABLE when deployed)',
    );
  });
});
