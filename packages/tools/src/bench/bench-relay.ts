/**
 * The outbox relay's commit-to-relay latency on the emulator: `items` outbox items committed at
 * `rate` per second over `groups` message groups (one PutItem each, as a consumer's transaction adds
 * one), read from the table's stream by the local stream poller (one poll of every shard each
 * `poll-ms` while idle: Lambda polls a shard about four times a second) and relayed by the production
 * relay handler to an SQS queue (or an EventBridge bus, or the bridge's outbound queue).
 *
 *   npm run bench -- relay [--items 1000] [--rate 200] [--groups 50] [--batch-size 100] [--poll-ms 250]
 *                          [--target sqs|eventbridge|rocketmq] [--json]
 *
 * Prints the latency from each item's commit (`committedAt`, taken just before its PutItem) to its
 * mark (`relayedAt`), p50 / p99 / max, and the relay function's round trips per relayed message (its
 * sends and marks, counted on its clients: the stream reads are the event source's, not the function's,
 * and are printed apart). With --json, the figures as one JSON line.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { CreateEventBusCommand } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, createEventBridge, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { consumerGroup, type OutboxItem, type RelayTargets } from '@rocketmq-lambda/runtime/config/index.ts';
import type { RelayReport } from '@rocketmq-lambda/runtime/outbox/index.ts';
import { startEmulator } from '../emulator/emulator.ts';
import { RoundTripCounter } from '../instrumentation/round-trip-counter.ts';
import { LocalSigningKey } from '../local/local-signing-key.ts';
import { createOutboxTable, localRelay, pendingOutboxItem } from '../testing/outbox-stream.ts';
import { percentile, positiveInt } from './bench-support.ts';

process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'CRITICAL';

const GROUP = consumerGroup('point-consumer-group');
const TOPIC = 'POINTS_TOPIC';
type TargetKind = RelayTargets[string]['kind'];

interface RelayFigures {
  items: number;
  ratePerSec: number;
  groups: number;
  batchSize: number;
  pollMs: number;
  target: TargetKind;
  relayed: number;
  p50CommitToRelayMs: number;
  p99CommitToRelayMs: number;
  maxCommitToRelayMs: number;
  relayRoundTripsPerMessage: number;
  relayRoundTrips: Record<string, number>;
  streamReadsPerMessage: number;
  invocations: number;
}

export async function relayBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      items: { type: 'string', default: '1000' },
      rate: { type: 'string', default: '200' },
      groups: { type: 'string', default: '50' },
      'batch-size': { type: 'string', default: '100' },
      'poll-ms': { type: 'string', default: '250' },
      target: { type: 'string', default: 'sqs' },
      json: { type: 'boolean', default: false },
    },
  });
  const target = values.target as TargetKind;
  if (!['sqs', 'eventbridge', 'rocketmq'].includes(target))
    throw new Error(`--target must be sqs, eventbridge or rocketmq, got ${target}`);
  const settings = {
    items: positiveInt(values.items, 'items'),
    ratePerSec: positiveInt(values.rate, 'rate'),
    groups: positiveInt(values.groups, 'groups'),
    batchSize: positiveInt(values['batch-size'], 'batch-size'),
    pollMs: positiveInt(values['poll-ms'], 'poll-ms'),
    target,
  };
  const emulator = await startEmulator();
  try {
    const figures = await benchRelay(emulator.endpoint, settings);
    console.error(
      `${figures.relayed}/${figures.items} relayed to ${target} (${settings.ratePerSec}/s committed, poll ${settings.pollMs} ms, batch ≤ ${settings.batchSize}): ` +
        `commit→relay p50 ${figures.p50CommitToRelayMs} ms, p99 ${figures.p99CommitToRelayMs} ms, max ${figures.maxCommitToRelayMs} ms; ` +
        `${figures.relayRoundTripsPerMessage} relay round trips per message ${JSON.stringify(figures.relayRoundTrips)}, ` +
        `${figures.streamReadsPerMessage} stream reads per message over ${figures.invocations} invocations`,
    );
    if (values.json) console.log(JSON.stringify(figures));
  } finally {
    await emulator.stop();
  }
}

type Settings = Pick<RelayFigures, 'items' | 'ratePerSec' | 'groups' | 'batchSize' | 'pollMs' | 'target'>;

async function benchRelay(endpoint: string, settings: Settings): Promise<RelayFigures> {
  const stage = await relayStage(endpoint, settings);
  const stop = new AbortController();
  const running = stage.poller.run(stop.signal, settings.pollMs);
  await commitAtRate(stage.commit, settings);
  const deadline = Date.now() + 60_000 + settings.items * 10;
  while (stage.relayed().length < settings.items && Date.now() < deadline) await sleep(20);
  stop.abort();
  await running;
  const latencies = stage.relayed().map((r) => r.relayedAt - r.committedAt!);
  const relayed = latencies.length;
  const perMessage = (n: number) => Math.round((n / Math.max(1, relayed)) * 100) / 100;
  return {
    ...settings,
    relayed,
    p50CommitToRelayMs: percentile(latencies, 50),
    p99CommitToRelayMs: percentile(latencies, 99),
    maxCommitToRelayMs: Math.max(0, ...latencies),
    relayRoundTripsPerMessage: perMessage(stage.relayTrips.total),
    relayRoundTrips: stage.relayTrips.byCommand(),
    streamReadsPerMessage: perMessage(stage.streamTrips.total),
    invocations: stage.invocations(),
  };
}

/** The bench's own stage: the outbox table and its stream, the target, the relay's DLQ, the relay handler and poller. */
async function relayStage(endpoint: string, settings: Settings) {
  const aws = emulatorConfig(endpoint);
  const id = `relay-bench-${randomUUID().slice(0, 8)}`;
  const [dynamoDb, sqs, eventBridge] = [createDynamoDb(aws), createSqs(aws), createEventBridge(aws)];
  const relayTrips = new RoundTripCounter().attach(dynamoDb).attach(sqs).attach(eventBridge);
  const tableName = `${id}-outbox`;
  const setup = await createOutboxTable(endpoint, tableName);
  const streamTrips = new RoundTripCounter().attach(setup.streams);
  const queue = async (name: string) =>
    (await sqs.send(new CreateQueueCommand({ QueueName: `${id}-${name}` }))).QueueUrl!;
  const targets = await targetsOf(settings.target, id, queue, eventBridge);
  const reports: RelayReport[] = [];
  let invocations = 0;
  const poller = await localRelay(setup, {
    definition: GROUP,
    aws,
    tableName,
    targets,
    deadLetterQueueUrl: await queue('outbox-dlq'),
    signingKeys: new LocalSigningKey().ring,
    clients: { dynamoDb, sqs, eventBridge },
    onReport: (report) => reports.push(report),
    batchSize: settings.batchSize,
    onInvoke: () => invocations++,
  });
  relayTrips.reset();
  streamTrips.reset();
  const writer = createDynamoDb(aws);
  return {
    poller,
    relayTrips,
    streamTrips,
    invocations: () => invocations,
    relayed: () => reports.filter((r): r is RelayReport & { outcome: 'relayed' } => r.outcome === 'relayed'),
    commit: (item: OutboxItem) =>
      writer.send(new PutCommand({ TableName: tableName, Item: item })).then(() => undefined),
  };
}

async function targetsOf(
  kind: TargetKind,
  id: string,
  queue: (name: string) => Promise<string>,
  eventBridge: ReturnType<typeof createEventBridge>,
): Promise<RelayTargets> {
  switch (kind) {
    case 'sqs':
      return {
        [TOPIC]: { kind, queues: [{ group: 'subscriber', url: await queue('subscriber'), tagExpression: '*' }] },
      };
    case 'eventbridge':
      await eventBridge.send(new CreateEventBusCommand({ Name: id }));
      return { [TOPIC]: { kind, eventBusName: id } };
    case 'rocketmq':
      return { [TOPIC]: { kind, queueUrl: await queue('outbound') } };
  }
}

/** Commits the items at the rate, one PutItem each, in flight side by side as many consumers' commits are. */
async function commitAtRate(commit: (item: OutboxItem) => Promise<void>, settings: Settings): Promise<void> {
  const started = Date.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < settings.items; i++) {
    const due = started + (i * 1000) / settings.ratePerSec;
    if (due > Date.now()) await sleep(due - Date.now());
    inFlight.push(commit(benchItem(i, settings)));
  }
  await Promise.all(inFlight);
}

function benchItem(i: number, settings: Settings): OutboxItem {
  const messageGroup = `U-${i % settings.groups}`;
  return pendingOutboxItem(GROUP.group, `SO-${i}`, {
    topic: TOPIC,
    body: JSON.stringify({ orderNo: `SO-${i}`, userId: messageGroup, points: 10 }),
    messageGroup,
    target: settings.target,
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
