/**
 * Sends a sample (or the given) SNS alarm event to a DingTalk robot through the notifier's own code
 * path (parse → render → rate limit → sign → send → classify), prints DingTalk's errcode/errmsg and
 * exits non-zero unless errcode is 0. Use it to check a new robot before storing it in the secret.
 *
 * The robot's access token and signing secret come from the environment or standard input, never
 * from arguments (the process list and the shell history show those):
 *
 *   DINGTALK_WEBHOOK_URL='https://oapi.dingtalk.com/robot/send?access_token=…' DINGTALK_SECRET=SEC… npm run alarm:test
 * aws secretsmanager get-secret-value --secret-id <id> --query SecretString --output text | npm run alarm:test --
 * --stdin
 *     [--event sns-event.json] [--keyword 告警] [--at 13800000000,13900000000] [--time-zone Asia/Shanghai]
 *
 * `--webhook <url> --secret <SEC…>` remain for local stand-ins only (a loopback webhook).
 */
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import {
  AlarmNotifier,
  DEFAULT_TIME_ZONE,
  DeliveryBudgetExhaustedError,
  DingTalkError,
  InMemoryPendingAlarms,
  InMemoryRateLimiter,
  noDeliveryMetrics,
  parseWebhookSecret,
  RobotClient,
  RobotRejectedError,
  RobotThrottledError,
  RobotUnavailableError,
  StaticWebhookSource,
  systemClock,
  type WebhookConfig,
  WebhookSecretError,
} from '@rocketmq-lambda/notifier/index.ts';
import { isLoopbackUrl } from '@rocketmq-lambda/runtime/config/index.ts';
import { dlqAlarmJson, snsEvent } from '../fixtures/sample-alarm-event.ts';

const USAGE =
  'usage: DINGTALK_WEBHOOK_URL=<url> DINGTALK_SECRET=<SEC…> npm run alarm:test -- [--event <sns-event.json>] ' +
  '[--keyword <kw>] [--at <mobile,…>] [--time-zone <IANA zone>]\n' +
  '   or: npm run alarm:test -- --stdin [options] < robot.json   (the robot secret\'s JSON: {"webhookUrl", "secret", "keyword"?, "atMobiles"?})\n' +
  '   local stand-ins only (a loopback webhook): --webhook <url> [--secret <SEC…>]';

const HOW_TO_PASS =
  'pass the robot as DINGTALK_WEBHOOK_URL and DINGTALK_SECRET in the environment, ' +
  'or its secret JSON on standard input with --stdin';

/** The command line cannot be run as given; nothing was sent. */
class AlarmTestUsageError extends DingTalkError {
  override readonly name = 'AlarmTestUsageError';
}

type Values = ReturnType<typeof parse>['values'];
const parse = () =>
  parseArgs({
    options: {
      webhook: { type: 'string' },
      secret: { type: 'string' },
      stdin: { type: 'boolean' },
      event: { type: 'string' },
      keyword: { type: 'string' },
      at: { type: 'string' },
      'time-zone': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });

/**
 * The robot to test, from standard input, the environment or (local stand-ins only) arguments.
 * An access token or secret in arguments is refused before anything is sent: it is already in
 * the process list and the history, so the message says how to pass it instead.
 */
async function robotOf(values: Values, env: NodeJS.ProcessEnv): Promise<WebhookConfig> {
  if (values.stdin && (values.webhook !== undefined || values.secret !== undefined)) {
    throw new AlarmTestUsageError(
      '--stdin takes the whole robot from standard input; leave out --webhook and --secret',
    );
  }
  const robot: Partial<WebhookConfig> = values.stdin
    ? parseWebhookSecret(await text(process.stdin))
    : {
        webhookUrl: values.webhook ?? env.DINGTALK_WEBHOOK_URL,
        secret: values.secret ?? (env.DINGTALK_SECRET || undefined),
      };
  if (
    (values.webhook !== undefined || values.secret !== undefined) &&
    !(robot.webhookUrl && isLoopbackUrl(robot.webhookUrl))
  ) {
    throw new AlarmTestUsageError(
      `--webhook and --secret are accepted only for a local stand-in (a loopback webhook): arguments show in the process list and the shell history; ${HOW_TO_PASS}`,
    );
  }
  if (!robot.webhookUrl) throw new AlarmTestUsageError(`no robot given: ${HOW_TO_PASS}`);
  return {
    ...robot,
    webhookUrl: robot.webhookUrl,
    ...(values.keyword ? { keyword: values.keyword } : {}),
    ...(values.at
      ? {
          atMobiles: values.at
            .split(',')
            .map((m) => m.trim())
            .filter(Boolean),
        }
      : {}),
  };
}

async function main(): Promise<number> {
  const { values } = parse();
  if (values.help) {
    console.error(USAGE);
    return 0;
  }
  let source: StaticWebhookSource;
  try {
    source = new StaticWebhookSource(await robotOf(values, process.env));
  } catch (err) {
    if (!(err instanceof AlarmTestUsageError || err instanceof WebhookSecretError)) throw err;
    console.error(`alarm:test: ${err.message}\n\n${USAGE}`);
    return 64;
  }
  const event: unknown = values.event
    ? JSON.parse(await readFile(values.event, 'utf8'))
    : snsEvent(dlqAlarmJson({ StateChangeTime: new Date().toISOString().replace('Z', '+0000') }));
  const notifier = new AlarmNotifier({
    source,
    robot: new RobotClient({ clock: systemClock }),
    // One process, one message: the shared DynamoDB state of the Lambda is not needed here.
    limiter: new InMemoryRateLimiter(),
    backlog: new InMemoryPendingAlarms(),
    clock: systemClock,
    logger: new Logger({ serviceName: 'alarm-test', logLevel: 'WARN' }),
    metrics: noDeliveryMetrics,
    messageOptions: { timeZone: values['time-zone'] ?? DEFAULT_TIME_ZONE, fallbackRegion: process.env.AWS_REGION },
    // Report DingTalk's first answer instead of retrying: the operator wants to see it.
    policy: { maxAttempts: 1 },
  });
  try {
    const outcomes = await notifier.notify(event, systemClock.now() + 30_000);
    for (const answer of outcomes.flatMap((o) => o.result?.answers ?? [])) {
      console.log(`errcode=${answer.errcode} errmsg=${answer.errmsg}`);
    }
    return 0;
  } catch (err) {
    const errors = err instanceof AggregateError ? err.errors : [err];
    for (const e of errors) report(e);
    return 1;
  }
}

function report(err: unknown): void {
  const cause = err instanceof DeliveryBudgetExhaustedError && err.lastError ? err.lastError : err;
  if (cause instanceof RobotRejectedError || cause instanceof RobotThrottledError) {
    console.log(`errcode=${cause.errcode} errmsg=${cause.errmsg}`);
  } else if (cause instanceof RobotUnavailableError && cause.errcode !== undefined) {
    console.log(`errcode=${cause.errcode} errmsg=${cause.errmsg ?? ''}`);
  } else if (cause instanceof DingTalkError) {
    console.log(`error: ${cause.message}`);
  } else {
    console.log(`error: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

process.exitCode = await main();
