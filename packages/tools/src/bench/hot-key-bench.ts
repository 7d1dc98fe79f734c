/**
 * Hot keys: many concurrent awards to ONE account, per-record vs packed.
 *
 *   npm run bench -- hot-key [--messages 400] [--invocations 10] [--batch-size 10]
 * [--accounts 1] [--spread-by award|batch] [--latency-ms 5] [--transaction-ms 10] [--json]
 *
 * `--accounts N` spreads the awards over N balance items: the write path of a balance
 * sharded into N counters (each award adds to one shard; the balance is their sum on read).
 * `--spread-by batch` sends a whole batch to one item: a packed batch then merges into one
 * shard, which is how a sharded counter should pick its shard under packing.
 *
 * `--invocations` Lambda instances run at once, each taking the next batch from a shared
 * backlog; records a batch reports as failed go back to the backlog (a redelivery; the
 * RocketMQ delay before it is left out so the run stays short). The emulator serialises
 * DynamoDB and never raises `TransactionConflict` or per-item throttling, so every client
 * goes through one `ItemContentionModel` (packages/tools/src/instrumentation/item-contention-model.ts): conflicts and
 * throttles here are MODELLED from the documented behaviour, the rest (what the consumer
 * does about them, outcomes, balances) is measured.
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  POINTS_GROUP,
  consumer as pointsConsumer,
} from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { MsgIdGenerator, RetrySchedule } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { SQSRecord } from 'aws-lambda';
import { type Emulator, startEmulator } from '../emulator/emulator.ts';
import { ItemContentionModel } from '../instrumentation/item-contention-model.ts';
import { injectLatency } from '../instrumentation/latency-injection.ts';
import { RoundTripCounter } from '../instrumentation/round-trip-counter.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '../local/local-signing-key.ts';
import { type LocalResources, provisionLocal } from '../local/provision.ts';
import { sqsRecord } from '../local/sqs-record.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.AWS_REGION ??= 'us-east-1';

const MAX_DELIVERIES = 17;

interface Scenario {
  messages: number;
  invocations: number;
  batchSize: number;
  accounts: number;
  /** How awards map to the `accounts` items: per award (round robin) or per batch (a whole batch to one item). */
  spreadBy: 'award' | 'batch';
  latencyMs: number;
  transactionMs: number;
}

export async function hotKeyBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      messages: { type: 'string', default: '400' },
      invocations: { type: 'string', default: '10' },
      'batch-size': { type: 'string', default: '10' },
      accounts: { type: 'string', default: '1' },
      'spread-by': { type: 'string', default: 'award' },
      'latency-ms': { type: 'string', default: '5' },
      'transaction-ms': { type: 'string', default: '10' },
      json: { type: 'boolean', default: false },
    },
  });
  const scenario: Scenario = {
    messages: Number(values.messages),
    invocations: Number(values.invocations),
    batchSize: Number(values['batch-size']),
    accounts: Number(values.accounts),
    spreadBy: values['spread-by'] === 'batch' ? 'batch' : 'award',
    latencyMs: Number(values['latency-ms']),
    transactionMs: Number(values['transaction-ms']),
  };
  const emulator = await startEmulator();
  try {
    const results = [];
    for (const packing of [false, true]) results.push(await run(emulator, scenario, packing));
    console.log(
      `${scenario.messages} awards to ${scenario.accounts} item(s) (spread by ${scenario.spreadBy}), ${scenario.invocations} concurrent invocations, batch ${scenario.batchSize}, ` +
        `+${scenario.latencyMs} ms per call; MODELLED: transactions hold items ${scenario.transactionMs} ms, 1,000 WU/s per item`,
    );
    const keys = Object.keys(results[0]!).filter((k) => k !== 'mode') as Array<keyof (typeof results)[number]>;
    console.log(''.padEnd(34) + results.map((r) => String(r.mode).padStart(14)).join(''));
    for (const k of keys) console.log(String(k).padEnd(34) + results.map((r) => String(r[k]).padStart(14)).join(''));
    for (const r of results) {
      const perAward = r.mode === 'packed' ? 2 / scenario.batchSize : 2;
      console.log(
        `modelled ceiling for one account, ${r.mode}: ${Math.round(1000 / perAward)} awards/s (1,000 WU/s ÷ ${perAward} WU per award on the balance item)`,
      );
    }
    if (values.json) console.log(JSON.stringify({ scenario, results }));
  } finally {
    await emulator.stop();
  }
}

async function run(emulator: Emulator, s: Scenario, packing: boolean) {
  const resources = await provisionLocal(emulator.endpoint, `hot-${packing ? 'p' : 'r'}-${Date.now().toString(36)}`, {
    groups: [POINTS_GROUP],
  });
  const model = new ItemContentionModel({ transactionMs: s.transactionMs });
  const counter = new RoundTripCounter();
  const reports: RecordReport[] = [];
  const handlers = Array.from({ length: s.invocations }, () =>
    contendedConsumer(emulator, resources, { s, packing, model, counter, reports }),
  );
  const { backlog, expected } = hotBacklog(s, resources.queues[POINTS_GROUP]!.source.arn);
  const started = performance.now();
  const { redeliveries, gaveUp } = await drainBacklog(handlers, backlog, s.batchSize);
  const seconds = (performance.now() - started) / 1000;
  const balance = await balanceTotal(emulator, resources.tables.accounts);
  const failedAttempts = reports.filter((r) => r.settlement.outcome === 'failed');
  return {
    mode: packing ? 'packed' : 'per-record',
    awardsPerSec: Math.round((s.messages / seconds) * 10) / 10,
    seconds: Math.round(seconds * 100) / 100,
    roundTrips: counter.total,
    transactionsSent: model.counts.transactions,
    conflictsModelled: model.counts.conflicts,
    throttlesModelled: model.counts.throttles,
    conflictsPerAward: Math.round((model.counts.conflicts / s.messages) * 100) / 100,
    recordAttemptsFailed: failedAttempts.length,
    redeliveries,
    gaveUp,
    processed: reports.filter((r) => r.settlement.outcome === 'processed').length,
    balanceOk: balance === expected,
  };
}

type PointsHandler = ReturnType<typeof pointsConsumer.create>;

/** One Lambda instance: the points consumer on a client of its own that goes through the shared contention model. */
function contendedConsumer(
  emulator: Emulator,
  resources: LocalResources,
  shared: {
    s: Scenario;
    packing: boolean;
    model: ItemContentionModel;
    counter: RoundTripCounter;
    reports: RecordReport[];
  },
): PointsHandler {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: emulator.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 3,
  });
  // Each middleware added after `retryMiddleware` runs before the ones added earlier:
  // counter → network latency → the modelled service side → the emulator.
  shared.model.attach(client);
  injectLatency(client, shared.s.latencyMs);
  shared.counter.attach(client);
  return pointsConsumer.create({
    aws: emulatorConfig(emulator.endpoint),
    tables: resources.tables,
    outboxTable: resources.outboxTables[POINTS_GROUP],
    deadLetterQueueUrl: resources.queues[POINTS_GROUP]!.deadLetter.url,
    schedule: new RetrySchedule(Array.from({ length: 16 }, () => 0)),
    dynamoDb: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
    onReport: (r) => shared.reports.push(r),
    packing: shared.packing,
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
  });
}

/** The awards as SQS records, each to its item of `accounts` (per award or per batch), and the balance they add up to. */
function hotBacklog(s: Scenario, queueArn: string): { backlog: SQSRecord[]; expected: number } {
  const ids = new MsgIdGenerator();
  let expected = 0;
  const backlog: SQSRecord[] = Array.from({ length: s.messages }, (_, i) => {
    const order = {
      orderNo: `SO-HOT-${i}`,
      userId: `hot-${(s.spreadBy === 'batch' ? Math.floor(i / s.batchSize) : i) % s.accounts}`,
      points: 1 + (i % 7),
    };
    expected += order.points;
    return sqsRecord(
      PROCESS_SIGNING_KEY.envelope({
        topic: 'ORDER_TOPIC',
        msgId: ids.next(),
        tags: 'PAID',
        body: JSON.stringify(order),
      }),
      queueArn,
      { messageId: `hot-${i}` },
    );
  });
  return { backlog, expected };
}

/**
 * Every instance takes the next batch from the shared backlog until it is empty; a record a batch reports as failed goes
 * back to it with its receive count up, until its 17th delivery.
 */
async function drainBacklog(
  handlers: readonly PointsHandler[],
  backlog: SQSRecord[],
  batchSize: number,
): Promise<{ redeliveries: number; gaveUp: number }> {
  let redeliveries = 0;
  let gaveUp = 0;
  await Promise.all(
    handlers.map(async (handler) => {
      while (backlog.length > 0) {
        const batch = backlog.splice(0, batchSize);
        const response = await handler({ Records: batch }, lambdaContext('points-consumer', 30_000));
        for (const failure of response.batchItemFailures) {
          const rec = batch.find((r) => r.messageId === failure.itemIdentifier)!;
          const receiveCount = Number(rec.attributes.ApproximateReceiveCount) + 1;
          if (receiveCount > MAX_DELIVERIES) {
            gaveUp++;
            continue;
          }
          redeliveries++;
          backlog.push({ ...rec, attributes: { ...rec.attributes, ApproximateReceiveCount: String(receiveCount) } });
        }
      }
    }),
  );
  return { redeliveries, gaveUp };
}

async function balanceTotal(emulator: Emulator, accountsTable: string): Promise<number> {
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: 'us-east-1',
      endpoint: emulator.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
  const accounts = (await documents.send(new ScanCommand({ TableName: accountsTable }))).Items ?? [];
  return accounts.reduce((sum, a) => sum + Number(a.balance), 0);
}
