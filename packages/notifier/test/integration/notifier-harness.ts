import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateSecretCommand, PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ALARM_STORM_TABLE } from '@rocketmq-lambda/runtime/config/index.ts';
import type { Context } from 'aws-lambda';
import { vi } from 'vitest';
import { createAlarmNotifierHandler } from '../../functions/alarm-notifier/handler.ts';
import {
  AlarmNotifier,
  type Clock,
  type DispatchPolicy,
  DynamoDbPendingAlarms,
  DynamoDbRateLimiter,
  powertoolsDeliveryMetrics,
  RobotClient,
  SecretsManagerWebhookSource,
  type WebhookConfig,
} from '../../src/index.ts';

// Vitest's workers look like Powertools' dev mode (metrics silently off, logs through the global
// console); these tests assert on the real JSON output, so say explicitly that this is not dev mode.
process.env.POWERTOOLS_DEV = 'false';
process.env.POWERTOOLS_METRICS_DISABLED = 'false';

/** The storm table exactly as exported for the infrastructure code. */
export async function createStormTable(db: DynamoDBDocumentClient): Promise<string> {
  const tableName = `dingtalk-storm-${randomUUID()}`;
  await db.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [
        { AttributeName: ALARM_STORM_TABLE.partitionKey.name, AttributeType: ALARM_STORM_TABLE.partitionKey.type },
        { AttributeName: ALARM_STORM_TABLE.sortKey.name, AttributeType: ALARM_STORM_TABLE.sortKey.type },
      ],
      KeySchema: [
        { AttributeName: ALARM_STORM_TABLE.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: ALARM_STORM_TABLE.sortKey.name, KeyType: 'RANGE' },
      ],
      BillingMode: ALARM_STORM_TABLE.billingMode,
    }),
  );
  return tableName;
}

export async function createWebhookSecret(sm: SecretsManagerClient, value: WebhookConfig): Promise<string> {
  const name = `dingtalk-robot-${randomUUID()}`;
  await sm.send(new CreateSecretCommand({ Name: name, SecretString: JSON.stringify(value) }));
  return name;
}

export async function updateWebhookSecret(sm: SecretsManagerClient, name: string, value: WebhookConfig): Promise<void> {
  await sm.send(new PutSecretValueCommand({ SecretId: name, SecretString: JSON.stringify(value) }));
}

/** Everything the process writes to stdout/stderr (Powertools logs and EMF metrics), swallowed. */
export function captureOutput() {
  const lines: string[] = [];
  const collect = (chunk: unknown) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(collect as typeof process.stdout.write);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(collect as typeof process.stderr.write);
  return {
    lines,
    restore() {
      out.mockRestore();
      err.mockRestore();
    },
    /** Metric names published through EMF. */
    metricNames(): string[] {
      return lines.flatMap((line) => {
        try {
          const json = JSON.parse(line) as { _aws?: { CloudWatchMetrics?: { Metrics: { Name: string }[] }[] } };
          return json._aws?.CloudWatchMetrics?.flatMap((m) => m.Metrics.map((x) => x.Name)) ?? [];
        } catch {
          return [];
        }
      });
    },
    logRecords(): Record<string, unknown>[] {
      return lines.flatMap((line) => {
        try {
          const json = JSON.parse(line) as Record<string, unknown>;
          return '_aws' in json ? [] : [json];
        } catch {
          return [];
        }
      });
    },
  };
}

export function lambdaContext(remainingMs = 60_000): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'alarm-notifier',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:ap-northeast-1:123456789012:function:alarm-notifier',
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/alarm-notifier',
    logStreamName: 'test',
    getRemainingTimeInMillis: () => remainingMs,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export interface ContainerOptions {
  db: DynamoDBDocumentClient;
  sm: SecretsManagerClient;
  tableName: string;
  secretId: string;
  clock: Clock;
  policy?: Partial<DispatchPolicy>;
  timeZone?: string;
  /** The dispatcher's jitter; a seeded generator makes a run repeatable. Default `Math.random`. */
  random?: () => number;
}

/**
 * One simulated Lambda container: the real handler (Middy, Powertools) around the production
 * wiring, with the emulator's clients and an injected clock.
 */
export function notifierContainer(options: ContainerOptions) {
  const logger = new Logger({ serviceName: 'alarm-notifier', logLevel: 'DEBUG' });
  const metrics = new Metrics({ namespace: 'DingTalkAlarmNotifierTest', serviceName: 'alarm-notifier' });
  const notifier = new AlarmNotifier({
    source: new SecretsManagerWebhookSource(options.sm, options.secretId),
    robot: new RobotClient({ clock: options.clock, timeoutMs: 5_000 }),
    limiter: new DynamoDbRateLimiter(options.db, options.tableName),
    backlog: new DynamoDbPendingAlarms(options.db, options.tableName),
    clock: options.clock,
    logger,
    metrics: powertoolsDeliveryMetrics(metrics),
    messageOptions: { timeZone: options.timeZone ?? 'Asia/Shanghai' },
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  const handler = createAlarmNotifierHandler({ logger, metrics, clock: options.clock, notifier });
  return { handler, notifier };
}
