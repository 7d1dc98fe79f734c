import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { FakeDingTalkRobot } from '@rocketmq-lambda/tools/testing/fake-dingtalk-robot.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));

/**
 * The operator command as `npm run alarm:test --` runs it, with stdout AND stderr kept (operators paste both into
 * tickets).
 */
function alarmTest(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', 'packages/tools/src/alarm-test/alarm-test.ts', ...args],
      { cwd: ROOT, env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'DEBUG' } },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}\n${stderr}` }),
    ),
  );
}

/**
 * The alarm notifier's own logs are checked in packages/notifier/test/integration/alarm-notifier.test.ts
 * ("never logs the signing secret or the webhook access token"); this covers the operator
 * command, whose output goes to terminals and tickets, on success and on every failure path.
 */
describe('npm run alarm:test output never contains the DingTalk secret or webhook token', () => {
  const secret = `SEC${randomUUID().replaceAll('-', '')}`;
  const accessToken = randomUUID().replaceAll('-', '');
  let robot: FakeDingTalkRobot;

  beforeAll(async () => {
    robot = await FakeDingTalkRobot.start({ accessToken, secret, keyword: '告警' });
  });
  afterAll(() => robot.stop());

  it.each([
    ['delivered', () => ['--webhook', robot.webhookUrl, '--secret', secret, '--keyword', '告警'], 0],
    ['wrong secret (310000)', () => ['--webhook', robot.webhookUrl, '--secret', `${secret}x`, '--keyword', '告警'], 1],
    ['keyword missing', () => ['--webhook', robot.webhookUrl, '--secret', secret], 1],
    [
      'robot unreachable',
      () => [
        '--webhook',
        `http://127.0.0.1:9/robot/send?access_token=${accessToken}`,
        '--secret',
        secret,
        '--keyword',
        '告警',
      ],
      1,
    ],
  ] as const)(
    '%s',
    async (_name, args, exit) => {
      // Act
      const { code, output } = await alarmTest([...args()]);

      // Assess
      expect(code === 0).toBe(exit === 0);
      expect(output.length).toBeGreaterThan(0);
      expect(output).not.toContain(secret);
      expect(output).not.toContain(accessToken);
      expect(output).not.toMatch(/access_token=[^&\s"'*]{8,}/);
      expect(output).not.toMatch(/[?&]sign=/);
    },
    60_000,
  );
});
