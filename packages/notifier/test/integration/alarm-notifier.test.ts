import { randomUUID } from 'node:crypto';
import { createDynamoDb, createSecretsManager, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { dlqAlarmJson, metricMathAlarmJson, snsEvent } from '@rocketmq-lambda/tools/fixtures/sample-alarm-event.ts';
import { FakeDingTalkRobot } from '@rocketmq-lambda/tools/testing/fake-dingtalk-robot.ts';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeliveryBudgetExhaustedError, RobotClient, RobotRejectedError } from '../../src/index.ts';
import {
  captureOutput,
  createStormTable,
  createWebhookSecret,
  lambdaContext,
  notifierContainer,
  updateWebhookSecret,
} from './notifier-harness.ts';
import { SteppingClock } from './test-clocks.ts';

const endpoint = inject('emulatorEndpoint');
const db = createDynamoDb(emulatorConfig(endpoint));
const sm = createSecretsManager(emulatorConfig(endpoint));
let tableName: string;
const robots: FakeDingTalkRobot[] = [];
let output: ReturnType<typeof captureOutput> | undefined;

beforeAll(async () => {
  tableName = await createStormTable(db);
});

afterEach(async () => {
  output?.restore();
  output = undefined;
  await Promise.all(robots.splice(0).map((r) => r.stop()));
});

/** A fresh robot (own token and secret) plus a notifier container whose secret points at it. */
async function setup(options: { keyword?: string; atMobiles?: string[]; storedSecret?: string } = {}) {
  const clock = new SteppingClock();
  const secret = `SEC${randomUUID().replaceAll('-', '')}`;
  const accessToken = randomUUID().replaceAll('-', '');
  const robot = await FakeDingTalkRobot.start({
    accessToken,
    secret,
    clock,
    ...(options.keyword ? { keyword: options.keyword } : {}),
  });
  robots.push(robot);
  const secretId = await createWebhookSecret(sm, {
    webhookUrl: robot.webhookUrl,
    secret: options.storedSecret ?? secret,
    ...(options.keyword ? { keyword: options.keyword } : {}),
    ...(options.atMobiles ? { atMobiles: options.atMobiles } : {}),
  });
  const container = notifierContainer({ db, sm, tableName, secretId, clock });
  output = captureOutput();
  return { clock, secret, accessToken, robot, secretId, ...container };
}

describe('alarm notifier against a fake DingTalk robot', () => {
  it('posts a single-metric ALARM, signed, with the keyword and @-mentions', async () => {
    // Prepare
    const { handler, robot, accessToken } = await setup({ keyword: 'AWS告警', atMobiles: ['13800000000'] });
    // Act
    await handler(snsEvent(dlqAlarmJson()), lambdaContext());
    // Assess
    expect(robot.received).toHaveLength(1);
    const [request] = robot.delivered;
    expect(request).toMatchObject({ errcode: 0, accessToken });
    expect(request!.rawQuery).toMatch(/&timestamp=\d{13}&sign=[A-Za-z0-9%]+$/);
    expect(request!.body?.markdown?.text).toContain('🔴 ALARM · orders-consumer-dlq-not-empty');
    expect(request!.body?.markdown?.text).toContain('QueueName = orders-consumer-dlq');
    expect(request!.body?.markdown?.text).toContain('@13800000000');
    expect(request!.body?.at?.atMobiles).toEqual(['13800000000']);
  });

  it('posts a metric-math OK (recovery) without mentions', async () => {
    const { handler, robot } = await setup({ atMobiles: ['13800000000'] });
    await handler(snsEvent(metricMathAlarmJson({ NewStateValue: 'OK', OldStateValue: 'ALARM' })), lambdaContext());
    expect(robot.delivered).toHaveLength(1);
    const body = robot.delivered[0]!.body!;
    expect(body.markdown?.title).toContain('🟢 OK');
    expect(body.markdown?.text).toContain('Metric math');
    expect(body.at?.atMobiles).toEqual([]);
  });

  it('still delivers a malformed SNS message, readably', async () => {
    const { handler, robot } = await setup();
    await handler(snsEvent('{"AlarmName": broken', { subject: 'manual test' }), lambdaContext());
    expect(robot.delivered).toHaveLength(1);
    expect(robot.delivered[0]!.body?.markdown?.text).toContain('Unrecognized message');
    expect(robot.delivered[0]!.body?.markdown?.text).toContain('{"AlarmName": broken');
  });

  it('delivers an alarm with a 40 KB reason within the 20,000-byte limit', async () => {
    const { handler, robot } = await setup();
    await handler(snsEvent(dlqAlarmJson({ NewStateReason: 'x'.repeat(40 * 1024) })), lambdaContext());
    expect(robot.delivered).toHaveLength(1);
    expect(robot.delivered[0]!.bytes).toBeLessThanOrEqual(20_000);
    expect(robot.delivered[0]!.body?.markdown?.text).toContain('characters truncated');
  });

  it('renders an alarm name carrying markdown and links inert', async () => {
    const { handler, robot } = await setup();
    await handler(
      snsEvent(dlqAlarmJson({ AlarmName: 'a](https://evil.example)[<font color=red>x</font>' })),
      lambdaContext(),
    );
    const text = robot.delivered[0]!.body!.markdown!.text!;
    const targets = [...text.matchAll(/\]\(([^)]*)\)/g)].map((m) => m[1]);
    expect(targets).toHaveLength(1);
    expect(targets[0]).toMatch(/^https:\/\/ap-northeast-1\.console\.aws\.amazon\.com\//);
    expect(text).not.toContain('<font');
  });

  it('retries network failures and 5xx with backoff, then delivers', async () => {
    const { handler, robot } = await setup();
    robot.failNext('reset', 'http-502');
    await handler(snsEvent(dlqAlarmJson()), lambdaContext());
    expect(robot.delivered).toHaveLength(1);
    expect(output!.metricNames()).toContain('RobotUnavailable');
  });

  it('on a 410100 ban fails the invocation without hammering, and delivers on the retry after the ban', async () => {
    // Prepare: another system posted 21 messages with the same robot within a minute.
    const { handler, robot, clock, secret } = await setup();
    const intruder = new RobotClient({ clock });
    const noise = {
      msgtype: 'markdown' as const,
      markdown: { title: 'noise', text: 'noise' },
      at: { atMobiles: [], isAtAll: false as const },
    };
    for (let i = 0; i < 21; i++)
      await intruder.send({ webhookUrl: robot.webhookUrl, secret }, noise).catch(() => undefined);
    const before = robot.received.length;
    const event = snsEvent(dlqAlarmJson());
    // Act: the first invocation meets the ban; Lambda retries the same event after the ban ends.
    const first = handler(event, lambdaContext());
    await expect(first).rejects.toBeInstanceOf(DeliveryBudgetExhaustedError);
    const duringBan = robot.received.length - before;
    clock.advance(10 * 60_000);
    await handler(event, lambdaContext());
    // Assess
    expect(duringBan).toBe(1);
    const ours = robot.delivered.filter((r) => r.body?.markdown?.title !== 'noise');
    expect(ours).toHaveLength(1);
    expect(ours[0]!.body?.markdown?.text).toContain('orders-consumer-dlq-not-empty');
    expect(output!.metricNames()).toEqual(
      expect.arrayContaining(['RobotThrottled', 'AlarmDeliveryDeferred', 'MessagesSent']),
    );
  });

  it('with a wrong secret: one attempt, refresh, errcode logged, alarm-of-last-resort metric, invocation fails', async () => {
    // Prepare
    const { handler, robot } = await setup({ storedSecret: 'SECwrong' });
    // Act
    const result = handler(snsEvent(dlqAlarmJson()), lambdaContext());
    // Assess
    await expect(result).rejects.toBeInstanceOf(RobotRejectedError);
    expect(robot.received).toHaveLength(1);
    expect(robot.received[0]).toMatchObject({ errcode: 310000, errmsg: 'sign not match' });
    expect(output!.metricNames()).toContain('DingTalkConfigurationError');
    const logged = output!.logRecords().find((r) => r.message === 'DingTalk rejected the message; not retrying');
    expect(logged).toMatchObject({ errcode: 310000, errmsg: 'sign not match', level: 'ERROR' });
  });

  it('picks up a rotated secret after a signature error and delivers', async () => {
    // Prepare: the container has cached the secret from an earlier invocation.
    const { handler, robot, secretId } = await setup();
    await handler(snsEvent(dlqAlarmJson()), lambdaContext());
    const rotated = `SEC${randomUUID().replaceAll('-', '')}`;
    robot.rotateSecret(rotated);
    await updateWebhookSecret(sm, secretId, { webhookUrl: robot.webhookUrl, secret: rotated });
    // Act
    await handler(snsEvent(dlqAlarmJson({ NewStateValue: 'OK', OldStateValue: 'ALARM' })), lambdaContext());
    // Assess
    expect(robot.received.map((r) => r.errcode)).toEqual([0, 310000, 0]);
  });

  it('posts a Lambda retry of an already delivered alarm only once', async () => {
    const { handler, robot } = await setup();
    const event = snsEvent(dlqAlarmJson());
    await handler(event, lambdaContext());
    await handler(event, lambdaContext());
    expect(robot.delivered).toHaveLength(1);
  });

  it('never logs the signing secret or the webhook access token', async () => {
    // Prepare: a success, a network fault, a throttle answer and a signature error, all at DEBUG level.
    const { handler, robot, secret, accessToken, secretId } = await setup({ keyword: 'kw' });
    robot.failNext('reset', { errcode: 410100, errmsg: 'send too fast' });
    await handler(snsEvent(dlqAlarmJson()), lambdaContext()).catch(() => undefined);
    await updateWebhookSecret(sm, secretId, { webhookUrl: robot.webhookUrl, secret: 'SECwrong', keyword: 'kw' });
    robot.rotateSecret('SECsomethingelse');
    await handler(snsEvent(dlqAlarmJson()), lambdaContext()).catch(() => undefined);
    // Assess
    const lines = output!.lines;
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      expect(line).not.toContain(secret);
      expect(line).not.toContain('SECwrong');
      expect(line).not.toContain(accessToken);
      expect(line).not.toContain('access_token');
      expect(line).not.toMatch(/[?&]sign=/);
    }
  });
});
