import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricMathAlarmJson, snsEvent } from '../../../scripts/fixtures/sample-alarm-event.ts';
import { FakeDingTalkRobot } from '../../support/fake-dingtalk-robot.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The operator command exactly as `npm run alarm:test --` runs it (tsx under this Node). */
async function alarmTest(args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/alarm-test.ts', ...args], { cwd: ROOT });
    return { code: 0, stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, stdout: e.stdout };
  }
}

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
    const { code } = await alarmTest(['--webhook', robot.webhookUrl, '--secret', secret, '--keyword', '告警', '--event', file]);
    expect(code).toBe(0);
    expect(robot.delivered.at(-1)?.body?.markdown?.text).toContain('payments-consumer-error-rate');
  });

  it('prints DingTalk errcode and errmsg and exits non-zero for a wrong secret', async () => {
    const { code, stdout } = await alarmTest(['--webhook', robot.webhookUrl, '--secret', 'SECwrong', '--keyword', '告警']);
    expect(stdout).toContain('errcode=310000 errmsg=sign not match');
    expect(code).not.toBe(0);
  });

  it('exits non-zero when the keyword is missing', async () => {
    const { code, stdout } = await alarmTest(['--webhook', robot.webhookUrl, '--secret', secret]);
    expect(stdout).toContain('errcode=310000 errmsg=keywords not in content');
    expect(code).not.toBe(0);
  });
});
