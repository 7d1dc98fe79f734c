import { configFromEnv, type AwsConfig } from '../aws/clients.ts';
import { CONSUMER_ENV, queueLifetimesFromEnvironment } from '../config/consumer-environment.ts';
import type { QueueLifetimes } from '../config/delivery-lifetimes.ts';
import { TABLE_ENV, type TableKey } from '../config/resources.ts';
import { InvalidConsumerConfigError } from '../idempotency/errors.ts';
import { RetrySchedule } from '../rocketmq/retry-schedule.ts';

/** What every consumer function needs from its deployment, read once at start-up. */
export interface ConsumerRuntimeConfig {
  aws: AwsConfig;
  tables: Partial<Record<TableKey, string>>;
  deadLetterQueueUrl: string;
  schedule: RetrySchedule;
  ttlSeconds?: number;
  /** The source queue and DLQ as deployed; the middleware refuses a schedule or TTL they cannot carry. */
  queueLifetimes?: QueueLifetimes;
}

export { CONSUMER_ENV };

export function consumerConfigFromEnv(tables: readonly TableKey[], env: NodeJS.ProcessEnv = process.env): ConsumerRuntimeConfig {
  const required = (name: string) => {
    const value = env[name];
    if (!value) throw new InvalidConsumerConfigError(`environment variable ${name} is not set`);
    return value;
  };
  const ttl = env[CONSUMER_ENV.ttlSeconds];
  return {
    aws: configFromEnv(env),
    tables: Object.fromEntries(tables.map((t) => [t, required(TABLE_ENV[t])])),
    deadLetterQueueUrl: required(CONSUMER_ENV.deadLetterQueueUrl),
    schedule: RetrySchedule.parse(env[CONSUMER_ENV.retryDelays]),
    ...(ttl ? { ttlSeconds: Number(ttl) } : {}),
    queueLifetimes: queueLifetimesFromEnvironment(env),
  };
}

/**
 * Builds the handler on first use, so importing a handler module (tests, tools) never needs
 * its environment. In Lambda it is built during init instead: a configuration the consumer
 * refuses (a missing table, a TTL shorter than the retry window) fails the cold start,
 * before any message is received.
 */
export function lazyHandler<H extends (...args: never[]) => unknown>(build: () => H, env: NodeJS.ProcessEnv = process.env): H {
  let built: H | undefined = env.AWS_LAMBDA_FUNCTION_NAME ? build() : undefined;
  return ((...args: Parameters<H>) => (built ??= build())(...args)) as H;
}
