import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { Producer } from 'rocketmq-client-nodejs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { BridgeConfigInput } from '../../bridge/bridge-config.ts';
import { createSqs, emulatorConfig } from '../../lib/aws/index.ts';
import { parseEnvelope } from '../../lib/rocketmq/index.ts';
import { type BridgeImageContext, stageBridgeImageContext } from '../../scripts/bridge-image-context.ts';
import { type ReplayedImage, replayDockerfile, startImageCommand } from '../../scripts/dockerfile-replay.ts';
import { type LocalRocketMQ, startLocalRocketMQ } from '../../scripts/rocketmq/local-rocketmq.ts';
import { BridgeChildProcess, forwardedMsgIds } from './support/bridge-child-process.ts';

/**
 * The bridge as it ships (issue #17), without Docker: the build context CDK stages for the image
 * asset, bridge/Dockerfile replayed in it (scripts/dockerfile-replay.ts), and the image's CMD run
 * as ECS runs it, as the image's user with the task's environment, against a real RocketMQ 5.5.0
 * and the emulator's SQS. Covers the arrow "bridge forwards" for the artefact rather than the
 * sources: the exclude list leaves in all the image needs, the final stage holds production
 * dependencies only, and the process drains on the image's stop signal.
 */
const TOPIC = 'ORDER_TOPIC';
const GROUP = 'bridge-image-group';
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

let out: string;
let context: BridgeImageContext;
let image: ReplayedImage;
let rocketMq: LocalRocketMQ | undefined;
let app: string;

beforeAll(async () => {
  out = mkdtempSync(path.join(tmpdir(), 'bridge-image-test-'));
  // The image's user (node) reaches the stage's root through it, as it reaches `/`.
  chmodSync(out, 0o755);
  context = stageBridgeImageContext(path.join(out, 'cdk.out'));
  const started = Date.now();
  [image, rocketMq] = await Promise.all([
    replayDockerfile({ context: context.directory, dockerfile: context.dockerFile, out: path.join(out, 'stages') }),
    startLocalRocketMQ({ topics: [{ name: TOPIC }], groups: [{ name: GROUP }] }),
  ]);
  app = path.join(image.root, image.workdir);
  console.info(
    `bridge image: synth ${context.synthMs} ms, context ${context.bytes} bytes in ${context.files} files, ` +
      `steps ${JSON.stringify(image.steps.map((s) => [s.line, s.ms]))}; replay and RocketMQ's start side by side ${Date.now() - started} ms`,
  );
}, 600_000);

afterAll(async () => {
  await rocketMq?.stop();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('the bridge image, built and run without Docker', () => {
  it('builds from the directory CDK staged: the package files, bridge/ and lib/, without the RocketMQ harness or jars', () => {
    expect(path.basename(context.directory)).toBe(`asset.${context.assetHash}`);
    expect(context.dockerFile).toBe('bridge/Dockerfile');
    expect(readdirSync(context.directory).sort()).toEqual(['bridge', 'lib', 'package-lock.json', 'package.json']);
    expect(existsSync(path.join(context.directory, 'bridge', 'rocketmq'))).toBe(false);
    expect(existsSync(path.join(context.directory, 'bridge', '.rocketmq'))).toBe(false);
  });

  it("ends with the bundle, the package files and production dependencies only, on Node 24, without npm's cache", async () => {
    expect(image).toMatchObject({
      workdir: '/app',
      user: 'node',
      stopSignal: 'SIGTERM',
      cmd: ['node', 'bridge.mjs'],
      env: { NODE_ENV: 'production' },
    });
    expect(readdirSync(app).sort()).toEqual(['bridge.mjs', 'node_modules', 'package-lock.json', 'package.json']);
    const lock = JSON.parse(readFileSync(path.join(app, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(lock.packages)
      .filter(([, entry]) => entry.dev)
      .map(([location]) => location);
    expect(devOnly).toContain('node_modules/vitest');
    expect(devOnly.filter((location) => existsSync(path.join(app, location)))).toEqual([]);
    expect(existsSync(path.join(app, 'node_modules', 'ali-ons'))).toBe(true);
    expect(existsSync(path.join(image.root, 'root', '.npm', '_cacache'))).toBe(false);

    const version = startImageCommand(image, {}, ['node', '--version']);
    expect(await text(version.stdout!)).toMatch(/^v24\./);
  });

  it('runs its CMD as ECS would: ready, forwards a message as a RocketMQ envelope, drains on SIGTERM and exits 0', async () => {
    // Prepare: the route's queues; the task's environment as the service sets it, with the emulator for AWS.
    const sqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
    const name = `bridge-image-${randomUUID().slice(0, 8)}`;
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
    const config: BridgeConfigInput = {
      proxyEndpoint: rocketMq!.proxyEndpoint,
      clusterName: rocketMq!.clusterName,
      sslEnabled: false,
      awaitDurationMs: 5_000,
      health: { host: '127.0.0.1', port: 0 },
      routes: [{ group: GROUP, topic: TOPIC, tagExpression: 'PAID', target: { kind: 'sqs', queueUrl }, dlqUrl }],
    };
    const started = Date.now();
    const bridge = new BridgeChildProcess(
      startImageCommand(image, {
        BRIDGE_CONFIG: JSON.stringify(config),
        POWERTOOLS_SERVICE_NAME: 'rocketmq-bridge',
        AWS_ENDPOINT_URL: inject('emulatorEndpoint'),
        AWS_REGION: 'us-east-1',
      }),
    );
    try {
      // Act 1: wait for readiness, as the container health check does.
      const port = await bridge.waitFor(
        'health port',
        (lines) => lines.find((l) => l.message === 'health endpoint listening')?.port as number | undefined,
        60_000,
      );
      let ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
      while (ready.status !== 200 && Date.now() - started < 60_000) {
        await sleep(100);
        ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
      }
      const readyMs = Date.now() - started;

      // Act 2: one PAID order on the topic.
      const producer = new Producer({ endpoints: rocketMq!.proxyEndpoint, namespace: '', logger: SILENT });
      await producer.startup();
      const order = { orderNo: 'SO-IMAGE-1', userId: 'u1', points: 10 };
      const { messageId } = await producer.send({
        topic: TOPIC,
        tag: 'PAID',
        keys: [order.orderNo],
        body: Buffer.from(JSON.stringify(order)),
      });
      await producer.shutdown();
      await bridge.waitFor(
        'the order forwarded',
        (lines) => (forwardedMsgIds(lines).includes(messageId) ? true : undefined),
        60_000,
      );
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );

      // Act 3: ECS stops the task with the image's stop signal.
      bridge.kill(image.stopSignal);
      const exit = await bridge.exited;
      console.info(`bridge image: ready ${readyMs} ms after its CMD started`);

      // Assess: ready, the order in the queue as an envelope, a clean drain.
      expect(ready.status).toBe(200);
      expect(Messages).toHaveLength(1);
      const envelope = parseEnvelope(Messages[0]!.Body!);
      expect(envelope).toMatchObject({
        msgId: messageId,
        topic: TOPIC,
        tags: 'PAID',
        keys: [order.orderNo],
        source: `rocketmq://${rocketMq!.clusterName}`,
      });
      expect(JSON.parse(envelope.body)).toEqual(order);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(bridge.lines.some((l) => l.message === 'bridge stopped')).toBe(true);
    } finally {
      bridge.kill('SIGKILL');
    }
  }, 180_000);
});
