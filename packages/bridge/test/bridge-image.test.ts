import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type BridgeImageContext, stageBridgeImageContext } from '@rocketmq-lambda/tools/image/bridge-image-context.ts';
import {
  BRIDGE_ROOTFS_LOCK,
  makeBridgeRootfs,
  ROOTFS_LOCK_DIGEST,
  readRootfsLock,
} from '@rocketmq-lambda/tools/image/bridge-image-rootfs.ts';
import {
  type ReplayedImage,
  replayDockerfile,
  startImageCommand,
} from '@rocketmq-lambda/tools/image/dockerfile-replay.ts';
import { Producer } from 'rocketmq-client-nodejs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { BridgeConfigInput } from '../src/bridge-config.ts';
import { BridgeChildProcess, forwardedMsgIds } from './support/bridge-child-process.ts';
import { type SharedRocketMQ5, sharedRocketMQ5 } from './support/shared-rocketmq.ts';

/**
 * The bridge as it ships (issues #17 and #25), without Docker: its root filesystem made from the
 * lock (offline, from the downloads test:bridge fetched before entering its namespace), the build
 * context CDK stages for the image asset, packages/bridge/Dockerfile replayed in it FROM scratch
 * (packages/tools/src/image/dockerfile-replay.ts: every RUN inside the stage's own root, on the image's own Node),
 * and the image's CMD run as ECS runs it, inside the image, as its user, with the task's
 * environment and read-only root, against a real RocketMQ 5.5.0 and the emulator's SQS, with the
 * task definition's own health check. Covers the arrow "bridge forwards" for the artefact rather
 * than the sources: the exclude list leaves in all the image needs, nothing in the image floats, the
 * final stage holds production dependencies only, and the process drains on the image's stop signal.
 */
const TOPIC = 'IMAGE_ORDER_TOPIC';
const GROUP = 'bridge-image-group';
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

let out: string;
let context: BridgeImageContext;
let image: ReplayedImage;
let rocketMq: SharedRocketMQ5 | undefined;
let app: string;
/** The synthesized task definition's container: the health check and root filesystem ECS applies. */
let container: { HealthCheck: { Command: string[] }; ReadonlyRootFilesystem: boolean };

/** The bridge's container definition in the test stage's template of the assembly CDK wrote. */
function bridgeContainer(cdkOut: string): typeof container {
  const stage = path.join(cdkOut, readdirSync(cdkOut).find((d) => d.endsWith('-Test'))!);
  const template = JSON.parse(
    readFileSync(path.join(stage, readdirSync(stage).find((f) => f.endsWith('.template.json'))!), 'utf8'),
  );
  const resources = template.Resources as Record<
    string,
    { Type: string; Properties: { ContainerDefinitions: Array<typeof container> } }
  >;
  const [task] = Object.values(resources).filter((r) => r.Type === 'AWS::ECS::TaskDefinition');
  return task!.Properties.ContainerDefinitions[0]!;
}

/** Runs a command in the image (as the task would) to its end: exit code and output. */
async function inImage(command: readonly string[]): Promise<{ code: number | null; out: string }> {
  const child = startImageCommand(image, {}, command, { readOnlyRoot: container.ReadonlyRootFilesystem });
  const [out, err, code] = await Promise.all([
    text(child.stdout!),
    text(child.stderr!),
    new Promise<number | null>((resolve) => child.once('close', resolve)),
  ]);
  return { code, out: `${out}${err}` };
}

beforeAll(async () => {
  out = mkdtempSync(path.join(tmpdir(), 'bridge-image-test-'));
  // The image's user (node) reaches the stage's root through it, as it reaches `/`.
  chmodSync(out, 0o755);
  await makeBridgeRootfs();
  context = stageBridgeImageContext(path.join(out, 'cdk.out'));
  container = bridgeContainer(path.join(out, 'cdk.out'));
  const started = Date.now();
  [image, rocketMq] = await Promise.all([
    replayDockerfile({ context: context.directory, dockerfile: context.dockerFile, out: path.join(out, 'stages') }),
    sharedRocketMQ5({ topics: [{ name: TOPIC }], groups: [{ name: GROUP }] }),
  ]);
  app = path.join(image.root, image.workdir);
  console.info(
    `bridge image: synth ${context.synthMs} ms, context ${context.bytes} bytes in ${context.files} files, ` +
      `steps ${JSON.stringify(image.steps.map((s) => [s.line, s.ms]))}; replay and RocketMQ's start side by side ${Date.now() - started} ms`,
  );
}, 600_000);

afterAll(async () => {
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('the bridge image, built and run without Docker', () => {
  it('builds from the directory CDK staged: the package files, the sources under packages/ and the root filesystem, without the RocketMQ harness or jars', () => {
    expect(path.basename(context.directory)).toBe(`asset.${context.assetHash}`);
    expect(context.dockerFile).toBe('packages/bridge/Dockerfile');
    expect(readdirSync(context.directory).sort()).toEqual([
      '.bridge-image',
      'package-lock.json',
      'package.json',
      'packages',
    ]);
    expect(existsSync(path.join(context.directory, 'packages', 'bridge', 'rocketmq'))).toBe(false);
    expect(existsSync(path.join(context.directory, 'packages', 'bridge', '.rocketmq'))).toBe(false);
  });

  it('starts from nothing that floats: the locked Debian files, the lockfile’s Node, no shell and no package manager', async () => {
    const lock = readRootfsLock();
    // Every Dockerfile stage is FROM scratch, and the final root holds only what the Dockerfile put there.
    expect(readFileSync(path.join(context.directory, context.dockerFile), 'utf8').match(/^FROM .*/gm)).toEqual([
      'FROM scratch AS build',
      'FROM scratch',
    ]);
    expect(readdirSync(image.root).sort()).toEqual(['app', 'dev', 'etc', 'lib', 'lib64', 'proc', 'sys', 'usr']);
    for (const absent of ['bin', 'sbin', 'usr/bin', 'usr/sbin', 'usr/local/lib/node_modules', 'var/lib/dpkg'])
      expect(existsSync(path.join(image.root, absent)), absent).toBe(false);
    // Made from this commit's lock: the Debian packages' copyright files, and the lock's digest.
    expect(readdirSync(path.join(image.root, 'usr/share/doc')).sort()).toEqual(
      lock.debian.packages.map((p) => p.name).sort(),
    );
    expect(readFileSync(path.join(image.root, ROOTFS_LOCK_DIGEST), 'utf8').trim()).toBe(
      createHash('sha256').update(readFileSync(BRIDGE_ROOTFS_LOCK)).digest('hex'),
    );
    // The image's Node is byte for byte the one every test here runs on (the node devDependency's binary).
    const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
    expect(digest(path.join(image.root, 'usr/local/bin/node'))).toBe(
      digest(createRequire(import.meta.url).resolve('node/bin/node')),
    );
    // Run inside the image: its own Node on its own glibc, as uid 1000, on a root it cannot write.
    const probe = await inImage([
      'node',
      '-p',
      'JSON.stringify([process.execPath, process.version, process.report.getReport().header.glibcVersionRuntime, process.getuid(), (() => { try { require("fs").writeFileSync("/app/x", ""); return "written"; } catch (e) { return e.code; } })()])',
    ]);
    expect(probe.code).toBe(0);
    expect(JSON.parse(probe.out)).toEqual([
      '/usr/local/bin/node',
      `v${lock.node.version}`,
      lock.debian.packages.find((p) => p.name === 'libc6')!.version.split('-')[0],
      1000,
      'EROFS',
    ]);
    expect(container.ReadonlyRootFilesystem).toBe(true);
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

    expect((await inImage(['node', '--version'])).out).toMatch(/^v24\./);
  });

  it('runs its CMD as ECS would: healthy by the task’s own check, forwards a message as a RocketMQ envelope, drains on SIGTERM and exits 0', async () => {
    // Prepare: the route's queues; the task's environment as the service sets it, with the emulator for AWS.
    const sqs = createSqs(emulatorConfig(inject('emulatorEndpoint')));
    const name = `bridge-image-${randomUUID().slice(0, 8)}`;
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
    const [kind, ...healthCheck] = container.HealthCheck.Command;
    expect(kind).toBe('CMD');
    const healthPort = Number(/http:\/\/127\.0\.0\.1:(\d+)\/health\/ready/.exec(healthCheck.join(' '))![1]);
    const config: BridgeConfigInput = {
      proxyEndpoint: rocketMq!.proxyEndpoint,
      clusterName: rocketMq!.clusterName,
      sslEnabled: false,
      awaitDurationMs: 5_000,
      // Where the task definition's health check asks (the service sets the bridge's health port to it).
      health: { host: '127.0.0.1', port: healthPort },
      routes: [{ group: GROUP, topic: TOPIC, tagExpression: 'PAID', target: { kind: 'sqs', queueUrl }, dlqUrl }],
    };
    const started = Date.now();
    const bridge = new BridgeChildProcess(
      startImageCommand(
        image,
        {
          BRIDGE_CONFIG: JSON.stringify(config),
          POWERTOOLS_SERVICE_NAME: 'rocketmq-bridge',
          AWS_ENDPOINT_URL: inject('emulatorEndpoint'),
          AWS_REGION: 'us-east-1',
        },
        image.cmd,
        { readOnlyRoot: container.ReadonlyRootFilesystem },
      ),
    );
    try {
      // Act 1: wait until the task definition's health check, run in the image as ECS runs it, passes.
      const port = await bridge.waitFor(
        'health port',
        (lines) => lines.find((l) => l.message === 'health endpoint listening')?.port as number | undefined,
        60_000,
      );
      let health = await inImage(healthCheck);
      while (health.code !== 0 && Date.now() - started < 60_000) {
        await sleep(250);
        health = await inImage(healthCheck);
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
      const afterStop = await inImage(healthCheck);
      console.info(`bridge image: healthy ${readyMs} ms after its CMD started`);

      // Assess: healthy by the task's own check (and unhealthy once stopped), the order in the queue
      // as an envelope, a clean drain.
      expect(port).toBe(healthPort);
      expect(health).toEqual({ code: 0, out: '' });
      expect(afterStop.code).toBe(1);
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
