/**
 * The benchmark: one award workload through three consumers on the same emulator, with
 * the same latency added to every DynamoDB call at the SDK client.
 *
 *   npm run bench -- [award] [--messages 2000] [--users 200] [--latency-ms 5] [--batch-size 10] [--json]
 *
 * Variants: `transactional` (this project, one transaction per record), `packed` (batch
 * packing), `powertools` (Powertools idempotency around a handler that writes the ledger
 * and the balance in its own transaction, checking the bridge's signatures first as every
 * consumer here does), `powertools-unsigned` (the same without the check: the control before
 * consumers verified signatures), `traced` (transactional with tracing on: a span per
 * record and its children, through the SDK's batch processor into memory; every envelope of every
 * variant carries a producer's `traceparent`, so `transactional` is tracing off on the same input).
 * Each gets fresh tables. Each variant's handler
 * is invoked directly with SQS events built from envelopes, one batch after another (one
 * warm Lambda instance), so the figures measure the DynamoDB path and not SQS. Then the
 * same messages are delivered again (the duplicate pass). Round trips are counted by a
 * middleware on the SDK client; write units come from DynamoDB's documented rules.
 *
 * Publishing: this project's points consumer announces each award (POINTS_AWARDED) by an outbox
 * item in the award's own transaction, so its figures are "with publishing"; the units spent on
 * the outbox table are counted apart, and "without publishing" is the same run less those (the
 * round trips are the same: the item rides in the transaction the award sends anyway). The
 * Powertools control does not publish.
 *
 * Critical path: the longest chain of calls in one batch where each starts only after the
 * previous one answered. Records of a batch are settled in parallel, so this, not the round
 * trips per message, is what a batch waits for: the figure that decides throughput once
 * DynamoDB's latency, not the emulator, dominates. It is measured from each call's start and
 * end times, not derived from the code.
 *
 * With --json the last line of standard output is the machine-readable result.
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient, GetItemCommand, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import {
  POINTS_GROUP,
  consumer as pointsConsumer,
} from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { emulatorConfig, scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import { MsgIdGenerator, RetrySchedule } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createPowertoolsPointsConsumer } from '../comparison/powertools-points-consumer.ts';
import { type Emulator, startEmulator } from '../emulator/emulator.ts';
import { interceptCommands } from '../instrumentation/command-interceptor.ts';
import { injectLatency } from '../instrumentation/latency-injection.ts';
import { type RoundTrip, RoundTripCounter } from '../instrumentation/round-trip-counter.ts';
import { writeUnitsOf, writeUnitsOn, writtenTables } from '../instrumentation/write-units.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '../local/local-signing-key.ts';
import { type LocalResources, provisionLocal } from '../local/provision.ts';
import { seededRandom } from '../local/seeded-random.ts';
import { sqsRecord } from '../local/sqs-record.ts';
import { positiveInt } from './bench-support.ts';

// The consumers log one line per record and flush EMF metrics: not part of what is measured.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.AWS_REGION ??= 'us-east-1';

const VARIANTS = ['transactional', 'packed', 'powertools', 'powertools-unsigned', 'traced'] as const;
type Variant = (typeof VARIANTS)[number];

export interface VariantFigures {
  roundTripsPerMessage: number;
  writeUnitsPerMessage: number;
  /**
   * Of those, the units of the outbox items (the points consumer publishes one POINTS_AWARDED per
   * award, in the same transaction): without publishing the figure is `writeUnitsPerMessage` minus this.
   */
  publishingWriteUnitsPerMessage: number;
  msgsPerSec: number;
  p50BatchMs: number;
  p99BatchMs: number;
  duplicateRoundTripsPerMessage: number;
  /** Median over the first pass's batches of the longest chain of sequential calls in a batch. */
  criticalPathRoundTripsPerBatch: number;
  /** CPU time of the consumer's own process per message, first pass (the emulator runs in another process). */
  cpuUsPerMessage: number;
  /** Spans exported per message, first pass (`traced` only; 0 elsewhere). */
  spansPerMessage: number;
}

interface VariantDetail extends VariantFigures {
  duplicateWriteUnitsPerMessage: number;
  duplicateMsgsPerSec: number;
  /** Successful writes to the ledger or accounts tables during the duplicate pass (must be 0). */
  duplicateBusinessWrites: number;
  cancelledTransactions: number;
  failedRecords: number;
  ledgerEntries: number;
  balanceTotal: number;
  expectedBalanceTotal: number;
  byCommand: Record<string, number>;
  /** Longest critical path of any batch in the first pass (retries lengthen it). */
  maxCriticalPathRoundTrips: number;
}

type Handler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export async function awardBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: 'string', default: '2000' },
      users: { type: 'string', default: '200' },
      'latency-ms': { type: 'string', default: '5' },
      'batch-size': { type: 'string', default: '10' },
      json: { type: 'boolean', default: false },
    },
  });
  const messages = positiveInt(values.messages, 'messages');
  const users = positiveInt(values.users, 'users');
  const latencyMs = Number(values['latency-ms']);
  const batchSize = positiveInt(values['batch-size'], 'batch-size');

  const emulator = await startEmulator();
  try {
    const workload = awardWorkload(messages, users);
    const calibration = await calibrateEmulator(emulator);
    const details = await runVariants(emulator, workload, { latencyMs, batchSize });
    printReport({ messages, users, latencyMs, batchSize, calibration, details });
    if (values.json) {
      const variants = Object.fromEntries(VARIANTS.map((v) => [v, pick(details[v])]));
      console.log(JSON.stringify({ messages, latencyMs, batchSize, variants }));
    }
  } finally {
    await emulator.stop();
  }
}

/**
 * `messages` awards over `users` accounts; the user of each order is drawn from a seeded generator, so every run is the
 * same.
 */
function awardWorkload(messages: number, users: number) {
  const random = seededRandom(20200705);
  const ids = new MsgIdGenerator();
  return Array.from({ length: messages }, (_, i) => {
    const order = {
      orderNo: `SO-BENCH-${String(i).padStart(6, '0')}`,
      userId: `u${Math.floor(random() * users)}`,
      points: 1 + Math.floor(random() * 500),
    };
    const traceId = (i + 1).toString(16).padStart(32, 'a');
    const body = PROCESS_SIGNING_KEY.envelope({
      topic: 'ORDER_TOPIC',
      msgId: ids.next(),
      tags: 'PAID',
      keys: [order.orderNo],
      body: JSON.stringify(order),
      // A RocketMQ 4.x producer's context, as OpenTelemetry's instrumentation sets it.
      userProperties: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    return { order, body };
  });
}

/** One consumer under test: its own tables, its own instrumented client, its own counters. */
interface Rig {
  variant: Variant;
  handler: Handler;
  resources: LocalResources;
  client: DynamoDBClient;
  counter: RoundTripCounter;
  trips: RoundTrip[];
  /** Start and end of every call (each SDK attempt) during the batch being delivered. */
  calls: CallSpan[];
  batches: SQSEvent[];
  /** `traced`: the spans its tracer exported (empty for the other variants). */
  spans: InMemorySpanExporter;
  provider: BasicTracerProvider | undefined;
}

interface CallSpan {
  start: number;
  end: number;
}

/** Times every attempt the client sends, injected latency included (outermost of the per-attempt middleware). */
function recordCallSpans(client: DynamoDBClient, calls: CallSpan[]) {
  interceptCommands(client, 'callSpans', async (_command, send) => {
    const span = { start: performance.now(), end: Number.POSITIVE_INFINITY };
    calls.push(span);
    try {
      return await send();
    } finally {
      span.end = performance.now();
    }
  });
}

/** Write units a trip spent on the rig's outbox items (none for a consumer without an outbox table). */
function outboxUnits(rig: Rig, trip: RoundTrip): number {
  const table = rig.resources.outboxTables[POINTS_GROUP];
  return table ? writeUnitsOn(trip, table) : 0;
}

/** Length of the longest chain of calls each starting after the previous one ended. */
function criticalPath(calls: readonly CallSpan[]): number {
  const byStart = [...calls].sort((a, b) => a.start - b.start);
  const chain: number[] = [];
  for (let i = 0; i < byStart.length; i++) {
    let longest = 0;
    for (let j = 0; j < i; j++) if (byStart[j]!.end <= byStart[i]!.start) longest = Math.max(longest, chain[j]!);
    chain.push(longest + 1);
  }
  return Math.max(0, ...chain);
}

async function rigFor(
  variant: Variant,
  emulator: Emulator,
  workload: ReturnType<typeof awardWorkload>,
  options: { latencyMs: number; batchSize: number },
): Promise<Rig> {
  const resources = await provisionLocal(emulator.endpoint, `bench-${variant}-${Date.now().toString(36)}`, {
    groups: [POINTS_GROUP],
  });
  const queue = resources.queues[POINTS_GROUP]!;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: emulator.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 3,
  });
  const trips: RoundTrip[] = [];
  const counter = new RoundTripCounter().attach(client).onRoundTrip((t) => trips.push(t));
  injectLatency(client, options.latencyMs);
  const calls: CallSpan[] = [];
  recordCallSpans(client, calls);
  const spans = new InMemorySpanExporter();
  const provider =
    variant === 'traced' ? new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(spans)] }) : undefined;
  const handler: Handler = variant.startsWith('powertools')
    ? createPowertoolsPointsConsumer({
        dynamoDb: client,
        tables: resources.tables,
        ...(variant === 'powertools' ? { envelopeKeys: PROCESS_SIGNING_KEY.ring } : {}),
      })
    : pointsConsumer.create({
        aws: emulatorConfig(emulator.endpoint),
        tables: resources.tables,
        outboxTable: resources.outboxTables[POINTS_GROUP],
        deadLetterQueueUrl: queue.deadLetter.url,
        schedule: new RetrySchedule(Array.from({ length: 16 }, () => 0)),
        dynamoDb: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
        packing: variant === 'packed',
        envelopeKeys: PROCESS_SIGNING_KEY.ring,
        ...(provider ? { tracer: provider.getTracer('bench') } : {}),
      });
  const batches: SQSEvent[] = [];
  for (let i = 0; i < workload.length; i += options.batchSize) {
    batches.push({
      Records: workload
        .slice(i, i + options.batchSize)
        .map((w, j) => sqsRecord(w.body, queue.source.arn, { messageId: `bench-${i + j}` })),
    });
  }
  return { variant, handler, resources, client, counter, trips, calls, batches, spans, provider };
}

interface PassResult {
  batchMs: number[];
  failedRecords: number;
  roundTrips: number;
  writeUnits: number;
  /** Write units on the rig's outbox table (0 for a consumer that does not publish). */
  publishingWriteUnits: number;
  cancelledTransactions: number;
  byCommand: Record<string, number>;
  trips: RoundTrip[];
  /** Critical path of each batch, in round trips. */
  criticalPaths: number[];
  /** The consumer process's CPU time over the pass, in microseconds. */
  cpuUs: number;
  spans: number;
}

/** The spans a rig's tracer exported over a pass (its batch processor flushed first). */
async function exportedSpans(rig: Rig): Promise<number> {
  await rig.provider?.forceFlush();
  return rig.spans.getFinishedSpans().length;
}

/**
 * Delivers every batch to every variant, interleaved batch by batch (variant order
 * rotating), so a burst of load on a shared machine falls on all variants alike. Each
 * variant's handler sees its batches one after another, as one warm Lambda instance would.
 */
async function pass(rigs: Rig[]): Promise<Map<Variant, PassResult>> {
  const batchMs = new Map<Variant, number[]>(rigs.map((r) => [r.variant, []]));
  const failed = new Map<Variant, number>(rigs.map((r) => [r.variant, 0]));
  const paths = new Map<Variant, number[]>(rigs.map((r) => [r.variant, []]));
  const cpuUs = new Map<Variant, number>(rigs.map((r) => [r.variant, 0]));
  for (const rig of rigs) {
    rig.spans.reset();
    rig.counter.reset();
    rig.trips.length = 0;
  }
  const batches = rigs[0]!.batches.length;
  for (let b = 0; b < batches; b++) {
    for (let k = 0; k < rigs.length; k++) {
      const rig = rigs[(b + k) % rigs.length]!;
      rig.calls.length = 0;
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const response = await rig.handler(rig.batches[b]!, lambdaContext('points-consumer', 30_000));
      const cpu = process.cpuUsage(cpu0);
      cpuUs.set(rig.variant, cpuUs.get(rig.variant)! + cpu.user + cpu.system);
      batchMs.get(rig.variant)!.push(performance.now() - t0);
      paths.get(rig.variant)!.push(criticalPath(rig.calls));
      failed.set(rig.variant, failed.get(rig.variant)! + response.batchItemFailures.length);
    }
  }
  const exported = new Map<Variant, number>();
  for (const rig of rigs) exported.set(rig.variant, await exportedSpans(rig));
  return new Map(
    rigs.map((rig) => [
      rig.variant,
      {
        batchMs: batchMs.get(rig.variant)!,
        failedRecords: failed.get(rig.variant)!,
        roundTrips: rig.counter.total,
        writeUnits: rig.trips.reduce((s, t) => s + writeUnitsOf(t), 0),
        publishingWriteUnits: rig.trips.reduce((s, t) => s + outboxUnits(rig, t), 0),
        cancelledTransactions: rig.trips.filter((t) => t.command === 'TransactWriteItemsCommand' && t.error).length,
        byCommand: rig.counter.byCommand(),
        trips: [...rig.trips],
        criticalPaths: paths.get(rig.variant)!,
        cpuUs: cpuUs.get(rig.variant)!,
        spans: exported.get(rig.variant)!,
      },
    ]),
  );
}

async function runVariants(
  emulator: Emulator,
  workload: ReturnType<typeof awardWorkload>,
  options: { latencyMs: number; batchSize: number },
): Promise<Record<Variant, VariantDetail>> {
  const rigs: Rig[] = [];
  for (const variant of VARIANTS) rigs.push(await rigFor(variant, emulator, workload, options));
  const first = await pass(rigs);
  const duplicate = await pass(rigs);
  const n = workload.length;
  const out = {} as Record<Variant, VariantDetail>;
  for (const rig of rigs) {
    const f = first.get(rig.variant)!;
    const d = duplicate.get(rig.variant)!;
    const businessTables = new Set([rig.resources.tables.ledger, rig.resources.tables.accounts]);
    const state = await businessState(rig.client, rig.resources);
    const seconds = (ms: number[]) => ms.reduce((a, b) => a + b, 0) / 1000;
    out[rig.variant] = {
      roundTripsPerMessage: round(f.roundTrips / n, 3),
      writeUnitsPerMessage: round(f.writeUnits / n, 3),
      publishingWriteUnitsPerMessage: round(f.publishingWriteUnits / n, 3),
      msgsPerSec: round(n / seconds(f.batchMs), 1),
      p50BatchMs: round(percentile(f.batchMs, 50), 1),
      p99BatchMs: round(percentile(f.batchMs, 99), 1),
      duplicateRoundTripsPerMessage: round(d.roundTrips / n, 3),
      criticalPathRoundTripsPerBatch: percentile(f.criticalPaths, 50),
      cpuUsPerMessage: round(f.cpuUs / n, 0),
      spansPerMessage: round(f.spans / n, 2),
      maxCriticalPathRoundTrips: Math.max(0, ...f.criticalPaths),
      duplicateWriteUnitsPerMessage: round(d.writeUnits / n, 3),
      duplicateMsgsPerSec: round(n / seconds(d.batchMs), 1),
      duplicateBusinessWrites: d.trips.flatMap(writtenTables).filter((t) => businessTables.has(t)).length,
      cancelledTransactions: f.cancelledTransactions,
      failedRecords: f.failedRecords + d.failedRecords,
      ledgerEntries: state.ledgerEntries,
      balanceTotal: state.balanceTotal,
      expectedBalanceTotal: workload.reduce((s, w) => s + w.order.points, 0),
      byCommand: f.byCommand,
    };
  }
  return out;
}

/** What the emulator itself costs per call, with no latency injected: the floor under every figure. */
async function calibrateEmulator(emulator: Emulator) {
  const resources = await provisionLocal(emulator.endpoint, `bench-calibration-${Date.now().toString(36)}`, {
    groups: [],
  });
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: emulator.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const table = resources.tables.accounts;
  const time = async (rounds: number, call: (i: number) => Promise<unknown>) => {
    await call(-1);
    const t0 = performance.now();
    for (let i = 0; i < rounds; i++) await call(i);
    return (performance.now() - t0) / rounds;
  };
  const getMs = await time(100, () =>
    client.send(new GetItemCommand({ TableName: table, Key: { userId: { S: 'u0' } } })),
  );
  const putMs = await time(100, (i) =>
    client.send(new PutItemCommand({ TableName: table, Item: { userId: { S: `c${i}` }, balance: { N: '1' } } })),
  );
  // Shaped like an award: conditional puts and an `ADD … SET …` update (moto parses and validates every expression).
  const transactionMs = (actions: number) =>
    time(20, (i) =>
      client.send(
        new TransactWriteItemsCommand({
          TransactItems: Array.from({ length: actions }, (_, a) =>
            a % 3 === 2
              ? {
                  Update: {
                    TableName: table,
                    Key: { userId: { S: `t${actions}-${i}-${a}` } },
                    UpdateExpression: 'ADD balance :p SET updatedAt = :n',
                    ExpressionAttributeValues: { ':p': { N: '5' }, ':n': { S: '2020-07-05T14:22:31Z' } },
                  },
                }
              : {
                  Put: {
                    TableName: table,
                    Item: { userId: { S: `t${actions}-${i}-${a}` }, balance: { N: '1' } },
                    ConditionExpression: 'attribute_not_exists(userId)',
                  },
                },
          ),
        }),
      ),
    );
  return {
    getMs: round(getMs, 2),
    putMs: round(putMs, 2),
    transaction3Ms: round(await transactionMs(3), 2),
    transaction30Ms: round(await transactionMs(30), 2),
  };
}

async function businessState(client: DynamoDBClient, resources: LocalResources) {
  const documents = DynamoDBDocumentClient.from(client);
  const scanAll = (table: string) => scanTable<Record<string, unknown>>(documents, table);
  const ledger = await scanAll(resources.tables.ledger);
  const accounts = await scanAll(resources.tables.accounts);
  return { ledgerEntries: ledger.length, balanceTotal: accounts.reduce((s, a) => s + Number(a.balance ?? 0), 0) };
}

function printReport(r: {
  messages: number;
  users: number;
  latencyMs: number;
  batchSize: number;
  calibration: Record<string, number>;
  details: Record<Variant, VariantDetail>;
}) {
  const c = r.calibration;
  console.log(
    `workload: ${r.messages} award messages over ${r.users} users, batch size ${r.batchSize}, +${r.latencyMs} ms per DynamoDB call (SDK middleware)`,
  );
  console.log(
    `emulator's own cost per call (no added latency): GetItem ${c.getMs} ms, PutItem ${c.putMs} ms, TransactWriteItems ×3 ${c.transaction3Ms} ms, ×30 ${c.transaction30Ms} ms`,
  );
  const rows: Array<[string, (d: VariantDetail) => string | number]> = [
    ['round trips / msg', (d) => d.roundTripsPerMessage],
    ['critical path / batch', (d) => `${d.criticalPathRoundTripsPerBatch} (max ${d.maxCriticalPathRoundTrips})`],
    ['write units / msg', (d) => d.writeUnitsPerMessage],
    ['  of which publishing', (d) => d.publishingWriteUnitsPerMessage],
    ['  without publishing', (d) => round(d.writeUnitsPerMessage - d.publishingWriteUnitsPerMessage, 3)],
    ['msgs / s', (d) => d.msgsPerSec],
    ['p50 batch ms', (d) => d.p50BatchMs],
    ['p99 batch ms', (d) => d.p99BatchMs],
    ['cpu µs / msg', (d) => d.cpuUsPerMessage],
    ['spans / msg', (d) => d.spansPerMessage],
    ['dup: round trips / msg', (d) => d.duplicateRoundTripsPerMessage],
    ['dup: write units / msg', (d) => d.duplicateWriteUnitsPerMessage],
    ['dup: msgs / s', (d) => d.duplicateMsgsPerSec],
    ['dup: business writes', (d) => d.duplicateBusinessWrites],
    ['cancelled transactions', (d) => d.cancelledTransactions],
    ['failed records', (d) => d.failedRecords],
    ['ledger entries', (d) => d.ledgerEntries],
    ['balance total (expected)', (d) => `${d.balanceTotal} (${d.expectedBalanceTotal})`],
  ];
  const width = 26;
  console.log(['', ...VARIANTS].map((v, i) => (i === 0 ? v.padEnd(width) : v.padStart(20))).join(''));
  for (const [label, value] of rows) {
    console.log(label.padEnd(width) + VARIANTS.map((v) => String(value(r.details[v])).padStart(20)).join(''));
  }
  for (const v of VARIANTS) {
    console.log(
      `calls, first pass, ${v}: ${Object.entries(r.details[v].byCommand)
        .map(([k, n]) => `${k.replace('Command', '')} ${n}`)
        .join(', ')}`,
    );
  }
  const publishing = (v: Variant) => r.details[v].publishingWriteUnitsPerMessage;
  console.log(
    `publishing (one POINTS_AWARDED outbox item per award, in its transaction): +${publishing('transactional')} write units / msg transactional, +${publishing('packed')} packed; round trips unchanged`,
  );
  const on = r.details.traced;
  const off = r.details.transactional;
  console.log(
    `tracing on (traced) vs off (transactional): ${on.cpuUsPerMessage - off.cpuUsPerMessage} µs CPU / msg, ${on.spansPerMessage} spans / msg, p50 batch ${on.p50BatchMs} vs ${off.p50BatchMs} ms`,
  );
  for (const control of ['powertools', 'powertools-unsigned'] as const) {
    const pt = r.details[control];
    console.log(
      `speed-up over ${control}: transactional ${round(r.details.transactional.msgsPerSec / pt.msgsPerSec, 2)}×, packed ${round(r.details.packed.msgsPerSec / pt.msgsPerSec, 2)}×`,
    );
  }
  const verified = r.details.powertools;
  const unsigned = r.details['powertools-unsigned'];
  console.log(
    `signature check in the control: ${verified.cpuUsPerMessage - unsigned.cpuUsPerMessage} µs CPU / msg, p50 batch ${verified.p50BatchMs} vs ${unsigned.p50BatchMs} ms`,
  );
}

const pick = (d: VariantDetail): VariantFigures => ({
  roundTripsPerMessage: d.roundTripsPerMessage,
  writeUnitsPerMessage: d.writeUnitsPerMessage,
  publishingWriteUnitsPerMessage: d.publishingWriteUnitsPerMessage,
  msgsPerSec: d.msgsPerSec,
  p50BatchMs: d.p50BatchMs,
  p99BatchMs: d.p99BatchMs,
  duplicateRoundTripsPerMessage: d.duplicateRoundTripsPerMessage,
  criticalPathRoundTripsPerBatch: d.criticalPathRoundTripsPerBatch,
  cpuUsPerMessage: d.cpuUsPerMessage,
  spansPerMessage: d.spansPerMessage,
});

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
