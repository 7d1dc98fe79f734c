import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SecretSigningKeys } from '../../../../src/aws/index.ts';
import {
  CONSUMER_ENV,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  lifetimeEnvironment,
  lifetimesOf,
  OUTBOX_ENV,
  outboxTableName,
  TABLE_ENV,
} from '../../../../src/config/index.ts';
import { InvalidConsumerConfigError } from '../../../../src/consumer/failures/errors.ts';
import { consumerConfigFromEnv } from '../../../../src/consumer/lambda/consumer-config.ts';
import type { ConsumerModule } from '../../../../src/consumer/lambda/define-consumer.ts';
import { lazyHandler } from '../../../../src/consumer/lambda/define-consumer.ts';

const ROOT = resolve(import.meta.dirname, '../../../../../..');

/** Everything the CDK app writes into a group's function environment, as Lambda starts it. */
function deployedEnvironment(def: ConsumerGroupDefinition): NodeJS.ProcessEnv {
  const { lifetimes, recordTtlSeconds } = lifetimesOf(def);
  return {
    AWS_LAMBDA_FUNCTION_NAME: `rmq-prod-${def.functionName}`,
    AWS_REGION: 'ap-northeast-1',
    // Loopback: the key ring's first read, started during init, fails at once instead of reaching out.
    AWS_ENDPOINT_URL: 'http://127.0.0.1:1',
    [CONSUMER_ENV.group]: def.group,
    [CONSUMER_ENV.deadLetterQueueUrl]: `https://sqs.ap-northeast-1.amazonaws.com/333333333333/rmq-prod-${def.group}-dlq`,
    ...Object.fromEntries(def.tables.map((t) => [TABLE_ENV[t], `rmq-prod-${t}`])),
    ...(def.publishes?.length ? { [OUTBOX_ENV.table]: outboxTableName('rmq-prod', def.group) } : {}),
    ...lifetimeEnvironment(lifetimes, recordTtlSeconds),
    COUPON_SERVICE_URL: 'https://coupons.example.com',
    COUPON_SERVICE_AUTH: JSON.stringify({ kind: 'bearer', secretId: 'rmq-prod/coupon-service-token' }),
    NOTIFICATION_SERVICE_URL: 'https://notifications.example.com',
    NOTIFICATION_SERVICE_AUTH: JSON.stringify({ kind: 'bearer', secretId: 'rmq-prod/notification-service-token' }),
    [CONSUMER_ENV.envelopeSigningSecret]: 'rmq-prod/envelope-signing-key',
  };
}

/** The group's Lambda entry point, built the way its module's `handler` is: during init, from the environment. */
async function coldStart(def: ConsumerGroupDefinition, env: NodeJS.ProcessEnv) {
  const { consumer } = (await import(pathToFileURL(resolve(ROOT, def.entry)).href)) as { consumer: ConsumerModule };
  return () => lazyHandler(() => consumer.create(consumerConfigFromEnv(def, env)), env);
}

describe.each(CONSUMER_GROUPS)('a deployed $group function and the envelope signing key', (def) => {
  it('starts with the environment the CDK app writes, holding the key ring of the named secret', async () => {
    const env = deployedEnvironment(def);
    expect(await coldStart(def, env)).not.toThrow();
    expect(consumerConfigFromEnv(def, env).envelopeKeys).toBeInstanceOf(SecretSigningKeys);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
  ])('refuses to start, during init, when ENVELOPE_SIGNING_SECRET is %s', async (_, value) => {
    const env = { ...deployedEnvironment(def), [CONSUMER_ENV.envelopeSigningSecret]: value };
    const start = await coldStart(def, env);
    expect(start).toThrow(InvalidConsumerConfigError);
    expect(start).toThrow(
      'environment variable ENVELOPE_SIGNING_SECRET is not set: a consumer started from its environment acts only on envelopes the bridge signed',
    );
  });
});
