/**
 * Sends a sample (or the given) SNS alarm event to a DingTalk robot through the notifier's own code
 * path (parse → render → rate limit → sign → send → classify), prints DingTalk's errcode/errmsg and
 * exits non-zero unless errcode is 0. Use it to check a new robot before storing it in the secret.
 *
 *   npm run alarm:test -- --webhook 'https://oapi.dingtalk.com/robot/send?access_token=…' --secret SEC… \
 *     [--event sns-event.json] [--keyword 告警] [--at 13800000000,13900000000] [--time-zone Asia/Shanghai]
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { AlarmNotifier, DEFAULT_TIME_ZONE } from '../lib/dingtalk/alarm-notifier.ts';
import { systemClock } from '../lib/dingtalk/clock.ts';
import { DeliveryBudgetExhaustedError, DingTalkError, RobotRejectedError, RobotThrottledError, RobotUnavailableError } from '../lib/dingtalk/errors.ts';
import { noDeliveryMetrics } from '../lib/dingtalk/notifier-metrics.ts';
import { InMemoryPendingAlarms } from '../lib/dingtalk/pending-alarms.ts';
import { RobotClient } from '../lib/dingtalk/robot-client.ts';
import { InMemoryRateLimiter } from '../lib/dingtalk/robot-rate-limit.ts';
import { dlqAlarmJson, snsEvent } from './fixtures/sample-alarm-event.ts';
import { StaticWebhookSource } from '../lib/dingtalk/webhook-secret.ts';

const USAGE =
  'usage: npm run alarm:test -- --webhook <url> [--secret <SEC…>] [--event <sns-event.json>] ' +
  '[--keyword <kw>] [--at <mobile,…>] [--time-zone <IANA zone>]';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      webhook: { type: 'string' },
      secret: { type: 'string' },
      event: { type: 'string' },
      keyword: { type: 'string' },
      at: { type: 'string' },
      'time-zone': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help || !values.webhook) {
    console.error(USAGE);
    return values.help ? 0 : 64;
  }
  const event: unknown = values.event ? JSON.parse(await readFile(values.event, 'utf8')) : snsEvent(dlqAlarmJson({ StateChangeTime: new Date().toISOString().replace('Z', '+0000') }));
  const source = new StaticWebhookSource({
    webhookUrl: values.webhook,
    ...(values.secret ? { secret: values.secret } : {}),
    ...(values.keyword ? { keyword: values.keyword } : {}),
    ...(values.at ? { atMobiles: values.at.split(',').map((m) => m.trim()).filter(Boolean) } : {}),
  });
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
