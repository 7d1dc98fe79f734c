import { randomUUID } from 'node:crypto';
import { createDynamoDb, createSecretsManager, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { dlqAlarmJson, snsEvent } from '@rocketmq-lambda/tools/fixtures/sample-alarm-event.ts';
import { seededRandom } from '@rocketmq-lambda/tools/local/seeded-random.ts';
import { FakeDingTalkRobot } from '@rocketmq-lambda/tools/testing/fake-dingtalk-robot.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  captureOutput,
  createStormTable,
  createWebhookSecret,
  lambdaContext,
  notifierContainer,
} from './notifier-harness.ts';
import { AcceleratedClock } from './test-clocks.ts';

const endpoint = inject('emulatorEndpoint');
const db = createDynamoDb(emulatorConfig(endpoint));
const sm = createSecretsManager(emulatorConfig(endpoint));

/**
 * The moments at which the alarms are raised and the dispatchers' jitter: the same on every run, so a failure can be
 * replayed.
 */
const STORM_SEED = 20240618;

describe('alarm storm', () => {
  // One virtual minute passes in 20 real seconds (slow enough for a busy emulator beside the lane's
  // other files: at 12 s an alarm now and then ran out of its delivery budget); the robot, the table
  // and the notifier all share this clock.
  const clock = new AcceleratedClock(3);
  let robot: FakeDingTalkRobot;
  let output: ReturnType<typeof captureOutput>;

  beforeAll(async () => {
    robot = await FakeDingTalkRobot.start({ accessToken: randomUUID().replaceAll('-', ''), secret: 'SECstorm', clock });
  });
  afterAll(async () => {
    output?.restore();
    await robot.stop();
  });

  it(`delivers 100 alarms raised within one minute without a ban and without losing any (seed ${STORM_SEED})`, {
    timeout: 120_000,
  }, async () => {
    // Prepare: ten warm containers sharing the robot's secret and the storm table.
    const tableName = await createStormTable(db);
    const secretId = await createWebhookSecret(sm, { webhookUrl: robot.webhookUrl, secret: 'SECstorm' });
    // Each container jitters its waits with its own seeded generator, as each Lambda container has its own.
    const containers = Array.from({ length: 10 }, (_, c) =>
      notifierContainer({ db, sm, tableName, secretId, clock, random: seededRandom(STORM_SEED + 1 + c) }),
    );
    const names = Array.from({ length: 100 }, (_, i) => `consumer-group-${String(i).padStart(3, '0')}-dlq-not-empty`);
    const random = seededRandom(STORM_SEED);
    const raisedAt = names.map(() => random() * 60_000);
    const start = clock.now();
    output = captureOutput();

    // Act: each alarm is its own SNS delivery, at a seeded random moment of the minute, in any container.
    const invocations = names.map(async (name, i) => {
      await clock.sleep(raisedAt[i]!);
      const event = snsEvent(dlqAlarmJson({ AlarmName: name }), { timestamp: new Date(clock.now()).toISOString() });
      await containers[i % containers.length]!.handler(event, lambdaContext(60_000));
    });
    const results = await Promise.allSettled(invocations);
    output.restore();
    const elapsedMinutes = (clock.now() - start) / 60_000;

    // Assess
    const failures = results.filter((r) => r.status === 'rejected');
    expect(failures).toEqual([]);
    expect(robot.received.filter((r) => r.errcode !== 0)).toEqual([]);
    expect(robot.maxRequestsInAnyMinute()).toBeLessThanOrEqual(20);
    const texts = robot.delivered.map((r) => r.body?.markdown?.text ?? '');
    for (const name of names) {
      expect(
        texts.filter((t) => t.includes(name)),
        name,
      ).toHaveLength(1);
    }
    expect(robot.delivered.length).toBeLessThan(30);
    expect(output.metricNames()).toContain('SummariesSent');
    console.log(
      `storm: ${robot.delivered.length} messages for 100 alarms, at most ${robot.maxRequestsInAnyMinute()} in any minute, ` +
        `done after ${elapsedMinutes.toFixed(2)} virtual minutes`,
    );
  });
});
