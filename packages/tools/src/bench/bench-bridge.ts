/**
 * The bridge benchmark: what one bridge task costs per message forwarded from a real local
 * RocketMQ to SQS, against a consumer of the same broker that only receives and acks.
 *
 *   npm run bench:bridge -- [--messages 10000] [--latency-ms 5] [--source 5|4|both] [--sqs stand-in|emulator]
 *                           [--in-flight n] [--pairs 3] [--signing signed|unsigned|both]
 *                           [--log-level INFO] [--cpu-prof-dir dir] [--json]
 *
 * For each source (RocketMQ 5.5.0 through its proxy, 4.7.1 through its name server), one run:
 * a fresh broker, a producer preloads `messages` PAID orders, and consumer groups drain them in
 * turn: a warm-up (bare, then through the bridge), then `pairs` times the bare consumer followed
 * by the bridge.
 *   - The bare consumer: the bridge's own consumer for the route, receiving and acking in several
 *     lanes and forwarding nothing (the source's limit on this machine).
 *   - The bridge: the production `Bridge` with its default settings and one route (`--in-flight`
 *     overrides maxBatchesInFlight, 1 being the old one-batch-at-a-time pump), signing every
 *     envelope as production does (`--signing unsigned` not, `both` adds an unsigned drain to each
 *     pair), metrics on, logging at production's INFO (`--log-level`), tracing off, forwarding to
 *     SQS with `latency-ms` added to every SQS call at the SDK client.
 * SQS is an in-process stand-in by default (packages/tools/src/bridge-bench/sqs-stand-in.ts) or the moto
 * emulator. Runs on loopback only: npm runs it inside `unshare --net` like the bridge tests.
 *
 * The measure is CPU per message, of the consumer and of the broker, each drain's own; the pairs
 * alternate so that drift during the run (the broker's varies about 10 %) falls on both sides.
 * With --json, one line per source: {cpuRatioBridgeToBare, brokerCpuRatioBridgeToBare (medians of
 * the pairs' ratios), forwardedPerSec, bareReceiveAckPerSec, ratio, p50ForwardMs, p99ForwardMs,
 * cpuMicrosPerMessage, drains, ...}. p50/p99ForwardMs: per message, from the receive that returned
 * it to its ack. Linux only (unshare, and /proc for the broker's CPU).
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type BridgeConfig, parseBridgeConfig } from '@rocketmq-lambda/bridge/index.ts';
import { BRIDGE_SQS_CLIENT_SETTINGS, Bridge, createRouteSource } from '@rocketmq-lambda/bridge/internal.ts';
import { generateSigningKey, type SigningKeyRing, StaticSigningKeys } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { drainBare } from '../bridge-bench/bare-consumer.ts';
import { BENCH_TOPIC, type BenchCluster, SourceVersion, startBenchCluster } from '../bridge-bench/bench-cluster.ts';
import { brokerThreadMicros, CpuMeter } from '../bridge-bench/cpu-meter.ts';
import { profiled } from '../bridge-bench/cpu-profile.ts';
import { startSqsStandIn } from '../bridge-bench/sqs-stand-in.ts';
import { discardTelemetryLines } from '../bridge-bench/telemetry-lines.ts';
import { type Drain, TimedSource } from '../bridge-bench/timed-source.ts';
import { startEmulator } from '../emulator/emulator.ts';
import { injectLatency } from '../instrumentation/latency-injection.ts';
import { median, positiveInt } from './bench-support.ts';

/**
 * Throw-away drains first, one bare and one through the bridge: the broker's JIT and V8's warm up
 * on them, so no measured drain runs on a cold JVM or on the bridge's unoptimised code (without
 * the bridge's warm-up its first drain cost 1.7× its third).
 */
const WARM_UP_GROUP = 'bench-warm-up-group';
const WARM_UP_BRIDGE_GROUP = 'bench-warm-up-bridge-group';
/** Receive lanes of the bare consumer: more than this gave it no more on the 2-core machine. */
const BARE_LANES = 8;
const SqsSide = { StandIn: 'stand-in', Emulator: 'emulator' } as const;
type SqsSide = (typeof SqsSide)[keyof typeof SqsSide];
/** Which bridge drains each pair holds: signed as production runs, unsigned, or both (a third drain per pair). */
const Signing = { Signed: 'signed', Unsigned: 'unsigned', Both: 'both' } as const;
type Signing = (typeof Signing)[keyof typeof Signing];
const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];
const DrainKind = { Bare: 'bare', Bridge: 'bridge', BridgeUnsigned: 'bridgeUnsigned' } as const;
type DrainKind = (typeof DrainKind)[keyof typeof DrainKind];

interface CpuPerMessage {
  /** The consumer (the bridge or the bare consumer): this process without the SQS stand-in's thread. */
  consumer: number;
  /** The broker's JVMs. On one machine both share the cores, so a message costs their sum. */
  broker: number;
}

interface DrainFigures {
  kind: DrainKind;
  pair: number;
  perSec: number;
  cpuMicrosPerMessage: CpuPerMessage;
  /** The broker's CPU per message less what it burns with no consumer at all over as long as the drain took. */
  brokerBeyondIdleMicrosPerMessage: number;
}

interface BenchFigures {
  source: string;
  sqs: SqsSide;
  batchesInFlight: number;
  messages: number;
  latencyMs: number;
  pairs: number;
  signing: Signing;
  /** Medians over the pairs. */
  forwardedPerSec: number;
  bareReceiveAckPerSec: number;
  ratio: number;
  /** Median over the pairs of the bridge's CPU per message over the bare consumer's, in the consumer. */
  cpuRatioBridgeToBare: number;
  /** The same for the broker's CPU per message while it serves each. */
  brokerCpuRatioBridgeToBare: number;
  /** With `--signing both`: the same medians for the unsigned bridge drains. */
  unsigned?: { forwardedPerSec: number; cpuRatioBridgeToBare: number; brokerCpuRatioBridgeToBare: number };
  /** Over every signed bridge drain's messages. */
  p50ForwardMs: number;
  p99ForwardMs: number;
  /** Bridge tasks (processes) forwarding: always one here. */
  tasks: number;
  /** Medians over the pairs, per kind of drain. */
  cpuMicrosPerMessage: Partial<Record<DrainKind, CpuPerMessage>>;
  /** Every measured drain, in the order it ran. */
  drains: DrainFigures[];
  /**
   * The broker's CPU a second with no consumer receiving (timers, revive and long-poll threads),
   * measured after the warm-up: a drain that takes longer pays more of it per message.
   */
  brokerIdleMicrosPerSec: number;
  /** Where that idle burn goes: the broker's busiest threads over the same watch, µs a second each. */
  brokerIdleThreads: Record<string, number>;
  /** The median ratio of the broker's CPU per message beyond that idle burn, bridge to bare. */
  brokerBeyondIdleRatioBridgeToBare: number;
}

/** SQS as the bridge sees it: a client with the latency added, a queue, and how many distinct messages it holds. */
interface SqsSink {
  readonly client: SQSClient;
  readonly queueUrl: string;
  distinctMessages(): Promise<number>;
  /** CPU of the stand-in's thread in this process (0 for the emulator, a process of its own). */
  inProcessCpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

class BenchIncompleteError extends Error {
  override readonly name = 'BenchIncompleteError';
}

export async function bridgeBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: 'string', default: '10000' },
      'latency-ms': { type: 'string', default: '5' },
      source: { type: 'string', default: '5' },
      sqs: { type: 'string', default: SqsSide.StandIn },
      'in-flight': { type: 'string' },
      pairs: { type: 'string', default: '3' },
      signing: { type: 'string', default: Signing.Signed },
      /** Writes a V8 CPU profile of each measured drain: <dir>/<bare|bridge|bridgeUnsigned>-<pair>.cpuprofile. */
      'cpu-prof-dir': { type: 'string' },
      /** The bridge's log level; INFO, Powertools' default, is production's (a `forwarded` line per batch). */
      'log-level': { type: 'string', default: 'INFO' },
      json: { type: 'boolean', default: false },
    },
  });
  const messages = positiveInt(values.messages, 'messages');
  const latencyMs = Number(values['latency-ms']);
  if (!(latencyMs >= 0)) throw new Error(`--latency-ms must be ≥ 0, got ${values['latency-ms']}`);
  const sqs = oneOf(values.sqs, Object.values(SqsSide), 'sqs');
  const batchesInFlight = values['in-flight'] === undefined ? undefined : positiveInt(values['in-flight'], 'in-flight');
  const pairs = positiveInt(values.pairs, 'pairs');
  const signing = oneOf(values.signing, Object.values(Signing), 'signing');
  const sources =
    values.source === 'both'
      ? Object.values(SourceVersion)
      : [oneOf(values.source, Object.values(SourceVersion), 'source')];
  const logLevel = oneOf(values['log-level'], LOG_LEVELS, 'log-level');
  // Metrics and logs on, as in production (awslogs ships the lines there); here they are dropped, not printed.
  discardTelemetryLines();

  for (const source of sources) {
    const figures = await benchSource(source, {
      messages,
      latencyMs,
      sqs,
      batchesInFlight,
      pairs,
      signing,
      logLevel,
      profileDir: values['cpu-prof-dir'],
    });
    print(figures);
    if (values.json) console.log(JSON.stringify(figures));
  }
}

interface BenchOptions {
  readonly messages: number;
  readonly latencyMs: number;
  readonly sqs: SqsSide;
  /** The bridge's maxBatchesInFlight; its default when not given. */
  readonly batchesInFlight: number | undefined;
  readonly pairs: number;
  readonly signing: Signing;
  readonly logLevel: LogLevel;
  readonly profileDir: string | undefined;
}

/** The drains of one run, in order: a bare drain, then the bridge's (signed, unsigned or both), `pairs` times. */
function drainPlan(pairs: number, signing: Signing): { kind: DrainKind; pair: number; group: string }[] {
  const bridgeKinds: DrainKind[] =
    signing === Signing.Both
      ? [DrainKind.Bridge, DrainKind.BridgeUnsigned]
      : [signing === Signing.Signed ? DrainKind.Bridge : DrainKind.BridgeUnsigned];
  return Array.from({ length: pairs }, (_, i) => i + 1).flatMap((pair) =>
    [DrainKind.Bare, ...bridgeKinds].map((kind) => ({ kind, pair, group: `bench-${kind}-group-${pair}` })),
  );
}

async function benchSource(version: SourceVersion, options: BenchOptions): Promise<BenchFigures> {
  const { messages, latencyMs } = options;
  const plan = drainPlan(options.pairs, options.signing);
  const cluster = await startBenchCluster(version, [WARM_UP_GROUP, WARM_UP_BRIDGE_GROUP, ...plan.map((d) => d.group)]);
  const sink = await startSqsSink(options.sqs, latencyMs);
  const signingKeys = new StaticSigningKeys(generateSigningKey());
  try {
    const preloadStarted = performance.now();
    await cluster.preload(messages);
    console.error(
      `RocketMQ ${cluster.version}: ${messages} messages preloaded in ${Math.round(performance.now() - preloadStarted)} ms`,
    );
    const logger = new Logger({ serviceName: 'bench-bridge', logLevel: options.logLevel });
    const cpu = new CpuMeter(() => sink.inProcessCpuMicros());
    const timed = (config: BridgeConfig) =>
      new TimedSource(createRouteSource(config, config.routes[0]!, { logger }), messages, cpu);

    await drainBare(timed(configFor(cluster, sink, WARM_UP_GROUP)), BARE_LANES);
    const warmUpBridge = configFor(cluster, sink, WARM_UP_BRIDGE_GROUP, options.batchesInFlight);
    await forwardAll(warmUpBridge, { sink, logger, signingKeys }, timed(warmUpBridge));
    const { brokerIdleMicrosPerSec, brokerIdleThreads } = await brokerIdle(cpu);
    const drains: DrainFigures[] = [];
    const forwardMs: number[] = [];
    for (const { kind, pair, group } of plan) {
      let drain: Drain;
      const profile = options.profileDir && join(options.profileDir, `${kind}-${pair}.cpuprofile`);
      if (kind === DrainKind.Bare) {
        drain = await profiled(profile || undefined, () =>
          drainBare(timed(configFor(cluster, sink, group)), BARE_LANES),
        );
      } else {
        const config = configFor(cluster, sink, group, options.batchesInFlight);
        const keys = kind === DrainKind.Bridge ? signingKeys : undefined;
        const forwarded = await profiled(profile || undefined, () =>
          forwardAll(config, { sink, logger, signingKeys: keys }, timed(config)),
        );
        drain = forwarded.drain;
        if (kind === DrainKind.Bridge) forwardMs.push(...forwarded.forwardMs);
      }
      const idleMicrosPerMessage = (brokerIdleMicrosPerSec * drain.ms) / 1000 / messages;
      drains.push({
        kind,
        pair,
        perSec: Math.round(messages / (drain.ms / 1000)),
        cpuMicrosPerMessage: perMessage(drain, messages),
        brokerBeyondIdleMicrosPerMessage: Math.round(drain.cpu.brokerMicros / messages - idleMicrosPerMessage),
      });
      console.error(`  pair ${pair} ${kind.padEnd(14)} ${JSON.stringify(drains.at(-1))}`);
    }
    // Every drain sends the same messages: the stand-in counts distinct envelope ids, the emulator every message.
    const arrived = await sink.distinctMessages();
    if (arrived < messages) throw new BenchIncompleteError(`SQS holds ${arrived} distinct messages of ${messages}`);
    const { maxBatchesInFlight } = configFor(cluster, sink, WARM_UP_GROUP, options.batchesInFlight);
    return {
      ...figuresOf(cluster.version, maxBatchesInFlight, options, drains, forwardMs),
      brokerIdleMicrosPerSec,
      brokerIdleThreads,
    };
  } finally {
    await sink.stop();
    await cluster.stop();
  }
}

/** How long the broker is watched with no consumer receiving. */
const IDLE_WATCH_MS = 5_000;

/** The broker's threads listed by name in `brokerIdleThreads`, busiest first. */
const IDLE_THREADS_LISTED = 8;

async function brokerIdle(cpu: CpuMeter) {
  const before = await cpu.read();
  const threadsBefore = brokerThreadMicros();
  await sleep(IDLE_WATCH_MS);
  const after = await cpu.read();
  const perSec = (micros: number) => Math.round((micros * 1000) / IDLE_WATCH_MS);
  const threads = [...brokerThreadMicros()]
    .map(([name, micros]) => [name, perSec(micros - (threadsBefore.get(name) ?? 0))] as const)
    .toSorted((a, b) => b[1] - a[1])
    .slice(0, IDLE_THREADS_LISTED);
  return {
    brokerIdleMicrosPerSec: perSec(after.brokerMicros - before.brokerMicros),
    brokerIdleThreads: Object.fromEntries(threads),
  };
}

function perMessage(drain: Drain, messages: number): CpuPerMessage {
  return {
    consumer: Math.round(drain.cpu.consumerMicros / messages),
    broker: Math.round(drain.cpu.brokerMicros / messages),
  };
}

function figuresOf(
  source: string,
  batchesInFlight: number,
  options: BenchOptions,
  drains: DrainFigures[],
  forwardMs: number[],
): Omit<BenchFigures, 'brokerIdleMicrosPerSec' | 'brokerIdleThreads'> {
  const of = (kind: DrainKind) => drains.filter((d) => d.kind === kind);
  const bare = of(DrainKind.Bare);
  /** Median over the pairs of `value(bridge drain, bare drain of the same pair)`. */
  const overPairs = (kind: DrainKind, value: (bridge: DrainFigures, bare: DrainFigures) => number) =>
    median(of(kind).map((d) => value(d, bare.find((b) => b.pair === d.pair)!)));
  const cpuRatio = (side: keyof CpuPerMessage) => (bridge: DrainFigures, b: DrainFigures) =>
    bridge.cpuMicrosPerMessage[side] / b.cpuMicrosPerMessage[side];
  const medianCpu = (list: DrainFigures[]): CpuPerMessage => ({
    consumer: median(list.map((d) => d.cpuMicrosPerMessage.consumer)),
    broker: median(list.map((d) => d.cpuMicrosPerMessage.broker)),
  });
  const main = options.signing === Signing.Unsigned ? DrainKind.BridgeUnsigned : DrainKind.Bridge;
  const sorted = forwardMs.toSorted((a, b) => a - b);
  return {
    source,
    sqs: options.sqs,
    batchesInFlight,
    messages: options.messages,
    latencyMs: options.latencyMs,
    pairs: options.pairs,
    signing: options.signing,
    forwardedPerSec: median(of(main).map((d) => d.perSec)),
    bareReceiveAckPerSec: median(bare.map((d) => d.perSec)),
    ratio: round(
      overPairs(main, (d, b) => d.perSec / b.perSec),
      2,
    ),
    cpuRatioBridgeToBare: round(overPairs(main, cpuRatio('consumer')), 2),
    brokerCpuRatioBridgeToBare: round(overPairs(main, cpuRatio('broker')), 2),
    brokerBeyondIdleRatioBridgeToBare: round(
      overPairs(main, (d, b) => d.brokerBeyondIdleMicrosPerMessage / b.brokerBeyondIdleMicrosPerMessage),
      2,
    ),
    ...(options.signing === Signing.Both
      ? {
          unsigned: {
            forwardedPerSec: median(of(DrainKind.BridgeUnsigned).map((d) => d.perSec)),
            cpuRatioBridgeToBare: round(overPairs(DrainKind.BridgeUnsigned, cpuRatio('consumer')), 2),
            brokerCpuRatioBridgeToBare: round(overPairs(DrainKind.BridgeUnsigned, cpuRatio('broker')), 2),
          },
        }
      : {}),
    p50ForwardMs: round(percentileOf(sorted, 50), 1),
    p99ForwardMs: round(percentileOf(sorted, 99), 1),
    tasks: 1,
    cpuMicrosPerMessage: Object.fromEntries(
      Object.values(DrainKind)
        .filter((kind) => of(kind).length > 0)
        .map((kind) => [kind, medianCpu(of(kind))]),
    ),
    drains,
  };
}

function configFor(cluster: BenchCluster, sink: SqsSink, group: string, maxBatchesInFlight?: number): BridgeConfig {
  return parseBridgeConfig({
    ...cluster.connection,
    ...(maxBatchesInFlight === undefined ? {} : { maxBatchesInFlight }),
    routes: [
      {
        group,
        topic: BENCH_TOPIC,
        tagExpression: 'PAID',
        target: { kind: 'sqs', queueUrl: sink.queueUrl },
        dlqUrl: sink.queueUrl,
      },
    ],
  });
}

/** The production bridge on a timed source; resolves once every message was forwarded and acked. */
async function forwardAll(
  config: BridgeConfig,
  deps: { sink: SqsSink; logger: Logger; signingKeys: SigningKeyRing | undefined },
  timed: TimedSource,
) {
  const bridge = new Bridge(config, {
    sqs: deps.sink.client,
    logger: deps.logger,
    sourceFor: () => timed,
    ...(deps.signingKeys ? { signingKeys: deps.signingKeys } : {}),
  });
  await bridge.start();
  try {
    return { drain: await timed.drained, forwardMs: timed.forwardMs };
  } finally {
    await bridge.stop();
  }
}

async function startSqsSink(side: SqsSide, latencyMs: number): Promise<SqsSink> {
  const clientFor = (endpoint: string) => {
    const client = new SQSClient({
      region: 'us-east-1',
      endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 3,
      ...BRIDGE_SQS_CLIENT_SETTINGS,
    });
    injectLatency(client, latencyMs);
    return client;
  };
  if (side === SqsSide.StandIn) {
    const standIn = await startSqsStandIn();
    return {
      client: clientFor(standIn.endpoint),
      queueUrl: `${standIn.endpoint}/000000000000/bench`,
      distinctMessages: () => standIn.distinctIds(),
      inProcessCpuMicros: () => standIn.cpuMicros(),
      stop: () => standIn.stop(),
    };
  }
  const emulator = await startEmulator();
  const client = clientFor(emulator.endpoint);
  const queueUrl = (await client.send(new CreateQueueCommand({ QueueName: 'bench' }))).QueueUrl!;
  return {
    client,
    queueUrl,
    // Nothing is redelivered within one run (the invisible duration is a minute), so the count is the distinct count.
    distinctMessages: async () =>
      Number(
        (
          await client.send(
            new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
          )
        ).Attributes?.ApproximateNumberOfMessages ?? 0,
      ),
    inProcessCpuMicros: async () => 0,
    stop: () => emulator.stop(),
  };
}

function print(f: BenchFigures): void {
  console.error(
    [
      `RocketMQ ${f.source} → bridge (${f.batchesInFlight} batches in flight, ${f.signing}) → SQS ${f.sqs} (+${f.latencyMs} ms per call), ${f.messages} messages, ${f.pairs} pairs, ${f.tasks} task`,
      `  medians over the pairs: bare receive+ack ${f.bareReceiveAckPerSec} msg/s, forwarded ${f.forwardedPerSec} msg/s, ratio ${f.ratio}`,
      `  forward latency    p50 ${f.p50ForwardMs} ms   p99 ${f.p99ForwardMs} ms`,
      ...Object.entries(f.cpuMicrosPerMessage).map(
        ([kind, { consumer, broker }]) =>
          `  CPU per message    ${kind.padEnd(14)} ${consumer} µs in the consumer + ${broker} µs in the broker`,
      ),
      `  broker idle        ${f.brokerIdleMicrosPerSec} µs a second; beyond it, broker ratio bridge/bare ${f.brokerBeyondIdleRatioBridgeToBare}`,
      `  busiest idle threads (µs a second): ${Object.entries(f.brokerIdleThreads)
        .map(([name, micros]) => `${name} ${micros}`)
        .join(', ')}`,
      `  CPU ratio bridge/bare: consumer ${f.cpuRatioBridgeToBare}, broker ${f.brokerCpuRatioBridgeToBare}` +
        (f.unsigned
          ? ` (unsigned: consumer ${f.unsigned.cpuRatioBridgeToBare}, broker ${f.unsigned.brokerCpuRatioBridgeToBare})`
          : ''),
    ].join('\n'),
  );
}

/** Nearest-rank percentile of ascending values. */
function percentileOf(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T {
  if (!allowed.includes(value as T)) throw new Error(`--${name} must be one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
