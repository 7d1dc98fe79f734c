/**
 * The bridge benchmark: how many messages a second one bridge task forwards from a real local
 * RocketMQ to SQS, against what the same broker gives a consumer that only receives and acks.
 *
 *   npm run bench:bridge -- [--messages 10000] [--latency-ms 5] [--source 5|4|both] [--sqs stand-in|emulator]
 *                           [--in-flight n] [--json]
 *
 * For each source (RocketMQ 5.5.0 through its proxy, 4.7.1 through its name server), one run:
 * a fresh broker, a producer preloads `messages` PAID orders, and four consumer groups drain them
 * in turn: a warm-up, the bare consumer, the bridge, the bare consumer again.
 *   - The bare consumer: the bridge's own consumer for the route, receiving and acking in several
 *     lanes and forwarding nothing (the source's limit on this machine).
 *   - The bridge: the production `Bridge` with its default settings and one route (`--in-flight`
 *     overrides maxBatchesInFlight, 1 being the old one-batch-at-a-time pump), forwarding to SQS
 *     with `latency-ms` added to every SQS call at the SDK client.
 * SQS is an in-process stand-in by default (scripts/bridge-bench/sqs-stand-in.ts) or the moto
 * emulator. Runs on loopback only: npm runs it inside `unshare --net` like the bridge tests.
 *
 * With --json, one line per source: {forwardedPerSec, bareReceiveAckPerSec, ratio, p50ForwardMs,
 * p99ForwardMs, tasks, cpuMicrosPerMessage, ...}. p50/p99ForwardMs: per message, from the receive
 * that returned it to its ack. Linux only (unshare, and /proc for the broker's CPU).
 */
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Bridge } from '../bridge/bridge.ts';
import { type BridgeConfig, parseBridgeConfig } from '../bridge/bridge-config.ts';
import { createRouteSource } from '../bridge/route-source.ts';
import { drainBare } from './bridge-bench/bare-consumer.ts';
import { BENCH_TOPIC, type BenchCluster, SourceVersion, startBenchCluster } from './bridge-bench/bench-cluster.ts';
import { CpuMeter } from './bridge-bench/cpu-meter.ts';
import { startSqsStandIn } from './bridge-bench/sqs-stand-in.ts';
import { type Drain, TimedSource } from './bridge-bench/timed-source.ts';
import { startEmulator } from './emulator/emulator.ts';
import { injectLatency } from './instrumentation/latency-injection.ts';

process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

/** A throw-away drain first: the broker's JIT warms up on it, so neither measured drain runs on a cold JVM. */
const WARM_UP_GROUP = 'bench-warm-up-group';
const BARE_GROUPS = ['bench-bare-group-1', 'bench-bare-group-2'] as const;
const BRIDGE_GROUP = 'bench-bridge-group';
/** Receive lanes of the bare consumer: more than this gave it no more on the 2-core machine. */
const BARE_LANES = 8;
const SqsSide = { StandIn: 'stand-in', Emulator: 'emulator' } as const;
type SqsSide = (typeof SqsSide)[keyof typeof SqsSide];

interface BenchFigures {
  source: string;
  sqs: SqsSide;
  batchesInFlight: number;
  messages: number;
  latencyMs: number;
  forwardedPerSec: number;
  /** Mean of the two bare drains, one before and one after the bridge's, so drift during the run cancels. */
  bareReceiveAckPerSec: number;
  bareDrainsPerSec: readonly number[];
  ratio: number;
  p50ForwardMs: number;
  p99ForwardMs: number;
  /** Bridge tasks (processes) forwarding: always one here. */
  tasks: number;
  /**
   * CPU per message during a drain: the consumer (the bridge or the bare consumer; this process
   * without the SQS stand-in's thread) and the broker's JVMs. On one machine both share the cores,
   * so a message costs their sum.
   */
  cpuMicrosPerMessage: Record<'bare' | 'bridge', { consumer: number; broker: number }>;
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

async function main() {
  const { values } = parseArgs({
    options: {
      messages: { type: 'string', default: '10000' },
      'latency-ms': { type: 'string', default: '5' },
      source: { type: 'string', default: '5' },
      sqs: { type: 'string', default: SqsSide.StandIn },
      'in-flight': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const messages = positiveInt(values.messages, 'messages');
  const latencyMs = Number(values['latency-ms']);
  if (!(latencyMs >= 0)) throw new Error(`--latency-ms must be ≥ 0, got ${values['latency-ms']}`);
  const sqs = oneOf(values.sqs, Object.values(SqsSide), 'sqs');
  const batchesInFlight = values['in-flight'] === undefined ? undefined : positiveInt(values['in-flight'], 'in-flight');
  const sources =
    values.source === 'both'
      ? Object.values(SourceVersion)
      : [oneOf(values.source, Object.values(SourceVersion), 'source')];

  for (const source of sources) {
    const figures = await benchSource(source, { messages, latencyMs, sqs, batchesInFlight });
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
}

async function benchSource(version: SourceVersion, options: BenchOptions): Promise<BenchFigures> {
  const { messages, latencyMs } = options;
  const cluster = await startBenchCluster(version, [WARM_UP_GROUP, ...BARE_GROUPS, BRIDGE_GROUP]);
  const sink = await startSqsSink(options.sqs, latencyMs);
  try {
    const preloadStarted = performance.now();
    await cluster.preload(messages);
    console.error(
      `RocketMQ ${cluster.version}: ${messages} messages preloaded in ${Math.round(performance.now() - preloadStarted)} ms`,
    );
    const logger = new Logger({ serviceName: 'bench-bridge', logLevel: 'WARN' });
    const cpu = new CpuMeter(() => sink.inProcessCpuMicros());
    const timed = (config: BridgeConfig) =>
      new TimedSource(createRouteSource(config, config.routes[0]!, { logger }), messages, cpu);
    const bare = (group: string) => drainBare(timed(configFor(cluster, sink, group)), BARE_LANES);

    await bare(WARM_UP_GROUP);
    const bareBefore = await bare(BARE_GROUPS[0]);
    const bridgeConfig = configFor(cluster, sink, BRIDGE_GROUP, options.batchesInFlight);
    const { drain: bridge, forwardMs } = await forwardAll(bridgeConfig, sink, logger, timed(bridgeConfig));
    const bareAfter = await bare(BARE_GROUPS[1]);
    const arrived = await sink.distinctMessages();
    if (arrived < messages) throw new BenchIncompleteError(`SQS holds ${arrived} distinct messages of ${messages}`);

    const bareDrainsPerSec = [bareBefore, bareAfter].map((d) => messages / (d.ms / 1000));
    const forwardedPerSec = messages / (bridge.ms / 1000);
    const perMessage = (...drains: Drain[]) => {
      const sum = (micros: (d: Drain) => number) =>
        drains.reduce((total, d) => total + micros(d), 0) / (drains.length * messages);
      return {
        consumer: Math.round(sum((d) => d.cpu.consumerMicros)),
        broker: Math.round(sum((d) => d.cpu.brokerMicros)),
      };
    };
    const bareReceiveAckPerSec = (bareDrainsPerSec[0]! + bareDrainsPerSec[1]!) / 2;
    const sorted = forwardMs.toSorted((a, b) => a - b);
    return {
      source: cluster.version,
      sqs: options.sqs,
      batchesInFlight: bridgeConfig.maxBatchesInFlight,
      messages,
      latencyMs,
      forwardedPerSec: Math.round(forwardedPerSec),
      bareReceiveAckPerSec: Math.round(bareReceiveAckPerSec),
      bareDrainsPerSec: bareDrainsPerSec.map(Math.round),
      ratio: round(forwardedPerSec / bareReceiveAckPerSec, 2),
      p50ForwardMs: round(percentileOf(sorted, 50), 1),
      p99ForwardMs: round(percentileOf(sorted, 99), 1),
      tasks: 1,
      cpuMicrosPerMessage: { bare: perMessage(bareBefore, bareAfter), bridge: perMessage(bridge) },
    };
  } finally {
    await sink.stop();
    await cluster.stop();
  }
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
async function forwardAll(config: BridgeConfig, sink: SqsSink, logger: Logger, timed: TimedSource) {
  const bridge = new Bridge(config, { sqs: sink.client, logger, sourceFor: () => timed });
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
      `RocketMQ ${f.source} → bridge (${f.batchesInFlight} batches in flight) → SQS ${f.sqs} (+${f.latencyMs} ms per call), ${f.messages} messages, ${f.tasks} task`,
      `  bare receive+ack   ${f.bareReceiveAckPerSec} msg/s (drains before and after the bridge's: ${f.bareDrainsPerSec.join(', ')})`,
      `  forwarded          ${f.forwardedPerSec} msg/s   ratio ${f.ratio}`,
      `  forward latency    p50 ${f.p50ForwardMs} ms   p99 ${f.p99ForwardMs} ms`,
      ...(['bare', 'bridge'] as const).map((side) => {
        const { consumer, broker } = f.cpuMicrosPerMessage[side];
        return `  CPU per message    ${side.padEnd(6)} ${consumer} µs in the consumer + ${broker} µs in the broker`;
      }),
    ].join('\n'),
  );
}

/** Nearest-rank percentile of ascending values. */
function percentileOf(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

function positiveInt(value: string | undefined, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${value}`);
  return n;
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T {
  if (!allowed.includes(value as T)) throw new Error(`--${name} must be one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

await main();
// The RocketMQ 4 client keeps a process-wide producer (for sending messages back) with its timers running after every
// consumer closed.
process.exit(0);
