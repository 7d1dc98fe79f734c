/**
 * What a FIFO route's forward step costs: one `RouteForwarder.forwardBatch` after another, each a
 * receive of `batch` messages spread over `groups` message groups, into an SQS FIFO route through
 * the production `SqsTarget`, against the benchmark's SQS stand-in with `latency-ms` added to every
 * call. No broker: this isolates how a receive is cut into `SendMessageBatch` calls (a FIFO route
 * keeps one batch in flight, so its throughput is batch size over the forward's wall time).
 *
 *   npm run bench -- fifo [--messages 4000] [--batch 20] [--groups 1,2,5,20,1000] [--latency-ms 5] [--json]
 *
 * Prints, per group count: messages/s, calls per receive, and wall time per receive (p50). With
 * --json, one line per group count.
 */
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { SQSClient } from '@aws-sdk/client-sqs';
import { parseBridgeConfig, type ReceivedMessage } from '@rocketmq-lambda/bridge/index.ts';
import { DeadLetterQueue, RouteForwarder, RouteMetrics, SqsTarget } from '@rocketmq-lambda/bridge/internal.ts';
import { startSqsStandIn } from '../bridge-bench/sqs-stand-in.ts';
import { injectLatency } from '../instrumentation/latency-injection.ts';

process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const MAX_BYTES = 262_144;

interface FifoFigures {
  groups: number;
  batch: number;
  messages: number;
  latencyMs: number;
  forwardedPerSec: number;
  callsPerReceive: number;
  p50ReceiveMs: number;
}

export async function fifoBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: 'string', default: '4000' },
      batch: { type: 'string', default: '20' },
      groups: { type: 'string', default: '1,2,5,20,1000' },
      'latency-ms': { type: 'string', default: '5' },
      json: { type: 'boolean', default: false },
    },
  });
  const messages = Number(values.messages);
  const batch = Number(values.batch);
  const latencyMs = Number(values['latency-ms']);
  const standIn = await startSqsStandIn();
  try {
    for (const groups of values.groups.split(',').map(Number)) {
      const figures = await benchGroups(standIn.endpoint, { messages, batch, groups, latencyMs });
      console.error(
        `${String(groups).padStart(5)} group(s): ${figures.forwardedPerSec} msg/s, ${figures.callsPerReceive} calls per receive of ${batch}, p50 ${figures.p50ReceiveMs} ms per receive`,
      );
      if (values.json) console.log(JSON.stringify(figures));
    }
  } finally {
    await standIn.stop();
  }
}

async function benchGroups(
  endpoint: string,
  options: { messages: number; batch: number; groups: number; latencyMs: number },
): Promise<FifoFigures> {
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  injectLatency(sqs, options.latencyMs);
  let calls = 0;
  sqs.middlewareStack.add(
    (next) => async (args) => {
      calls++;
      return next(args);
    },
    { step: 'initialize' },
  );
  const queueUrl = `${endpoint}/000000000000/bench.fifo`;
  const route = parseBridgeConfig({
    proxyEndpoint: '127.0.0.1:8081',
    routes: [{ group: 'G', topic: 'T', fifo: true, target: { kind: 'sqs', queueUrl }, dlqUrl: `${queueUrl}-dlq.fifo` }],
  }).routes[0]!;
  const forwarder = new RouteForwarder({
    route,
    clusterName: 'bench',
    target: new SqsTarget(sqs, queueUrl, MAX_BYTES, true),
    deadLetters: new DeadLetterQueue(sqs, `${queueUrl}-dlq.fifo`),
    maxMessageBytes: MAX_BYTES,
    metrics: new RouteMetrics('G', 'T'),
    logger: new Logger({ serviceName: 'bench-fifo', logLevel: 'SILENT' }),
    ack: async (acked) => acked.map(() => ({ ok: true as const })),
  });
  const receives = Math.ceil(options.messages / options.batch);
  const wall: number[] = [];
  let sequence = 0;
  const started = performance.now();
  for (let r = 0; r < receives; r++) {
    const receive = Array.from({ length: options.batch }, () => message(sequence++, options.groups));
    const t0 = performance.now();
    const outcome = await forwarder.forwardBatch(receive);
    wall.push(performance.now() - t0);
    if (outcome.notAcked.length > 0)
      throw new Error(`${outcome.notAcked.length} not acked: ${outcome.notAcked[0]!.reason}`);
  }
  const seconds = (performance.now() - started) / 1000;
  sqs.destroy();
  return {
    groups: options.groups,
    batch: options.batch,
    messages: receives * options.batch,
    latencyMs: options.latencyMs,
    forwardedPerSec: Math.round((receives * options.batch) / seconds),
    callsPerReceive: Math.round((calls / receives) * 10) / 10,
    p50ReceiveMs: Math.round(wall.toSorted((a, b) => a - b)[Math.floor(wall.length / 2)]! * 10) / 10,
  };
}

/** The i-th message of the run, in group i mod `groups`: consecutive messages of one group are the group's order. */
function message(i: number, groups: number): ReceivedMessage {
  const orderNo = `SO-${String(i % groups).padStart(6, '0')}`;
  return {
    handle: undefined,
    msgId: `0A1B2C3D2A9F18B4AAC2${i.toString(16).toUpperCase().padStart(12, '0')}`,
    topic: 'T',
    tag: 'STATUS',
    keys: [orderNo],
    messageGroup: orderNo,
    body: Buffer.from(JSON.stringify({ orderNo, seq: i, paidAt: new Date(1_764_000_000_000 + i).toISOString() })),
    userProperties: {},
    bornHost: '10.0.0.1:51000',
    bornTimestamp: 1_764_000_000_000 + i,
    storeHost: '10.0.0.2:10911',
    storeTimestamp: 1_764_000_000_001 + i,
    queueId: i % 8,
    queueOffset: i,
    brokerName: 'broker-a',
    reconsumeTimes: 0,
  };
}
