import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { metricMathAlarmJson, snsEvent } from '@rocketmq-lambda/tools/fixtures/sample-alarm-event.ts';
import { FakeDingTalkRobot } from '@rocketmq-lambda/tools/testing/fake-dingtalk-robot.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * The operator command exactly as `npm run alarm:test --` runs it (tsx under this Node), with its environment and
 * standard input.
 */
function alarmTest(
  args: string[],
  given: { env?: Record<string, string>; stdin?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', 'packages/tools/src/alarm-test/alarm-test.ts', ...args],
      { cwd: ROOT, env: { ...process.env, ...given.env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(given.stdin ?? '');
  });
}

const TOKEN = 'f00dfeedf00dfeedf00dfeedf00dfeed';

describe('npm run alarm:test', () => {
  const secret = `SEC${randomUUID().replaceAll('-', '')}`;
  let robot: FakeDingTalkRobot;

  beforeAll(async () => {
    robot = await FakeDingTalkRobot.start({ accessToken: randomUUID().replaceAll('-', ''), secret, keyword: '告警' });
  });
  afterAll(() => robot.stop());

  it('sends the sample alarm, prints errcode 0 and exits 0', async () => {
    // Act
    const { code, stdout } = await alarmTest(['--webhook', robot.webhookUrl, '--secret', secret, '--keyword', '告警']);
    // Assess
    expect(stdout).toContain('errcode=0 errmsg=ok');
    expect(code).toBe(0);
    expect(robot.delivered.at(-1)?.body?.markdown?.text).toContain('orders-consumer-dlq-not-empty');
  });

  it('sends a given SNS event file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'alarm-test-'));
    const file = join(dir, 'event.json');
    await writeFile(file, JSON.stringify(snsEvent(metricMathAlarmJson())));
    const { code } = await alarmTest([
      '--webhook',
      robot.webhookUrl,
      '--secret',
      secret,
      '--keyword',
      '告警',
      '--event',
      file,
    ]);
    expect(code).toBe(0);
    expect(robot.delivered.at(-1)?.body?.markdown?.text).toContain('payments-consumer-error-rate');
  });

  it('prints DingTalk errcode and errmsg and exits non-zero for a wrong secret', async () => {
    const { code, stdout } = await alarmTest([
      '--webhook',
      robot.webhookUrl,
      '--secret',
      'SECwrong',
      '--keyword',
      '告警',
    ]);
    expect(stdout).toContain('errcode=310000 errmsg=sign not match');
    expect(code).not.toBe(0);
  });

  it('exits non-zero when the keyword is missing', async () => {
    const { code, stdout } = await alarmTest(['--webhook', robot.webhookUrl, '--secret', secret]);
    expect(stdout).toContain('errcode=310000 errmsg=keywords not in content');
    expect(code).not.toBe(0);
  });

  it('takes the robot from the environment', async () => {
    // Act
    const { code, stdout } = await alarmTest(['--keyword', '告警'], {
      env: { DINGTALK_WEBHOOK_URL: robot.webhookUrl, DINGTALK_SECRET: secret },
    });
    // Assess
    expect(stdout).toContain('errcode=0 errmsg=ok');
    expect(code).toBe(0);
  });

  it('takes the robot secret’s JSON on standard input', async () => {
    // Prepare: the value stored in Secrets Manager, keyword included
    const stored = JSON.stringify({ webhookUrl: robot.webhookUrl, secret, keyword: '告警' });
    // Act
    const { code, stdout } = await alarmTest(['--stdin'], { stdin: stored });
    // Assess
    expect(stdout).toContain('errcode=0 errmsg=ok');
    expect(code).toBe(0);
  });

  it.each([
    [
      'both as arguments',
      [`--webhook`, `https://oapi.dingtalk.com/robot/send?access_token=${TOKEN}`, '--secret', 'SECnot-for-argv'],
      {},
    ],
    [
      'the secret as an argument',
      ['--secret', 'SECnot-for-argv'],
      { DINGTALK_WEBHOOK_URL: `https://oapi.dingtalk.com/robot/send?access_token=${TOKEN}` },
    ],
  ])('refuses a real robot’s credentials given %s, says how to pass them, sends nothing', async (_name, args, env) => {
    // Act
    const { code, stdout, stderr } = await alarmTest(args, { env });
    // Assess: the usage exit, before any request (an attempt would end in an error and exit 1)
    expect(code).toBe(64);
    expect(stderr).toContain('accepted only for a local stand-in (a loopback webhook)');
    expect(stderr).toContain('DINGTALK_WEBHOOK_URL and DINGTALK_SECRET in the environment');
    expect(stderr).toContain('--stdin');
    expect(`${stdout}${stderr}`).not.toContain(TOKEN);
    expect(`${stdout}${stderr}`).not.toContain('SECnot-for-argv');
  });

  it('refuses a webhook over plain http that is not a loopback host, naming the rule', async () => {
    const { code, stderr } = await alarmTest([], {
      env: { DINGTALK_WEBHOOK_URL: `http://oapi.dingtalk.com/robot/send?access_token=${TOKEN}` },
    });
    expect(code).toBe(64);
    expect(stderr).toContain('webhookUrl must use https; http is accepted only for a loopback host');
    expect(stderr).not.toContain(TOKEN);
  });
});
