import { configFromEnv, createDynamoDb, createSecretsManager } from '@rocketmq-lambda/runtime/aws/index.ts';
import { ALARM_STORM_TABLE } from '@rocketmq-lambda/runtime/config/index.ts';
import { type AlarmNotification, parseSnsEvent } from './alarm-event.ts';
import { assertTimeZone } from './alarm-message.ts';
import {
  AlarmDispatcher,
  type AlarmDispatcherDeps,
  type DeliveryLogger,
  type DeliveryMetrics,
  type DispatchResult,
} from './alarm-storm.ts';
import { type Clock, systemClock } from './clock.ts';
import { NotifierConfigurationError } from './errors.ts';
import { DynamoDbPendingAlarms } from './pending-alarms.ts';
import { RobotClient } from './robot-client.ts';
import { DynamoDbRateLimiter } from './robot-rate-limit.ts';
import { SecretsManagerWebhookSource } from './webhook-secret.ts';

/** What the notifier reads from its environment. Credentials are deliberately not among them. */
export interface NotifierSettings {
  secretId: string;
  tableName: string;
  timeZone: string;
  /** Region for console links when an alarm has no ARN. */
  consoleRegion: string | undefined;
}

export const DEFAULT_TIME_ZONE = 'Asia/Shanghai';

export function notifierSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): NotifierSettings {
  const secretId = env.DINGTALK_SECRET_ID?.trim();
  if (!secretId) throw new NotifierConfigurationError('DINGTALK_SECRET_ID is not set');
  const tableName = env[ALARM_STORM_TABLE.tableNameEnv]?.trim();
  if (!tableName) throw new NotifierConfigurationError(`${ALARM_STORM_TABLE.tableNameEnv} is not set`);
  const timeZone = env.ALARM_TIME_ZONE?.trim() || DEFAULT_TIME_ZONE;
  try {
    assertTimeZone(timeZone);
  } catch {
    throw new NotifierConfigurationError(`ALARM_TIME_ZONE ${JSON.stringify(timeZone)} is not a known IANA time zone`);
  }
  return { secretId, tableName, timeZone, consoleRegion: env.ALARM_CONSOLE_REGION?.trim() || env.AWS_REGION };
}

export interface NotificationOutcome {
  notification: AlarmNotification;
  result?: DispatchResult;
  error?: unknown;
}

/** Parse → render → rate-limit → sign → send, for every record; shared by the Lambda and `alarm:test`. */
export class AlarmNotifier {
  private readonly dispatcher: AlarmDispatcher;

  constructor(private readonly deps: AlarmDispatcherDeps) {
    this.dispatcher = new AlarmDispatcher(deps);
  }

  /**
   * Delivers every record; throws (after trying all of them) if any could not be delivered, so the
   * invocation fails and Lambda's retries, then the notifier's DLQ, keep the alarm.
   */
  async notify(event: unknown, deadline: number): Promise<NotificationOutcome[]> {
    const notifications = parseSnsEvent(event, new Date(this.deps.clock.now()));
    const outcomes: NotificationOutcome[] = [];
    for (const notification of notifications) {
      this.deps.logger.info('alarm notification received', describe(notification));
      try {
        outcomes.push({ notification, result: await this.dispatcher.deliver(notification, deadline) });
      } catch (error) {
        outcomes.push({ notification, error });
      }
    }
    const failed = outcomes.filter((o) => o.error !== undefined);
    if (failed.length === 1) throw failed[0]!.error;
    if (failed.length > 1) {
      throw new AggregateError(
        failed.map((o) => o.error),
        `${failed.length} notifications not delivered`,
      );
    }
    return outcomes;
  }
}

/** Only what identifies the alarm; never the message body of a foreign publish. */
function describe(n: AlarmNotification): Record<string, unknown> {
  return n.kind === 'alarm'
    ? {
        id: n.id,
        kind: n.kind,
        alarmName: n.alarm.alarmName,
        state: n.alarm.state,
        previousState: n.alarm.previousState,
      }
    : { id: n.id, kind: n.kind, problem: n.problem };
}

export interface NotifierRuntime {
  logger: DeliveryLogger;
  metrics: DeliveryMetrics;
  clock?: Clock;
}

/** The production wiring: Secrets Manager for credentials, DynamoDB for the shared budget and backlog. */
export function notifierFromSettings(settings: NotifierSettings, runtime: NotifierRuntime): AlarmNotifier {
  const aws = configFromEnv();
  const db = createDynamoDb(aws);
  const clock = runtime.clock ?? systemClock;
  return new AlarmNotifier({
    source: new SecretsManagerWebhookSource(createSecretsManager(aws), settings.secretId),
    robot: new RobotClient({ clock }),
    limiter: new DynamoDbRateLimiter(db, settings.tableName),
    backlog: new DynamoDbPendingAlarms(db, settings.tableName),
    clock,
    logger: runtime.logger,
    metrics: runtime.metrics,
    messageOptions: { timeZone: settings.timeZone, fallbackRegion: settings.consoleRegion },
  });
}
