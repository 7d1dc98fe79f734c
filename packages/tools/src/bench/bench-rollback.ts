/**
 * Measures the two moto gaps the launcher closes, stock moto vs launcher:
 *   1. TransactWriteItems latency vs table size (whole-table deepcopy vs item-level undo log);
 *   2. acknowledged puts lost when cancelled transactions run concurrently.
 *
 *   npm run bench -- rollback [--sizes 0,2000,10000] [--rounds 300]
 *
 * Prints one JSON line per measurement, then the launcher's speed-up over stock moto per
 * table size; docs/emulator.md quotes the figures.
 */
import { parseArgs } from 'node:util';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { type Emulator, startEmulator } from '../emulator/emulator.ts';

function client(endpoint: string) {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'b', secretAccessKey: 'b' },
    maxAttempts: 1,
  });
}

async function createTable(ddb: DynamoDBClient, TableName: string) {
  await ddb.send(
    new CreateTableCommand({
      TableName,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
}

async function fill(ddb: DynamoDBClient, TableName: string, n: number) {
  for (let b = 0; b < n; b += 25) {
    const batch = Array.from({ length: Math.min(25, n - b) }, (_, i) => ({
      PutRequest: { Item: { pk: { S: `seed-${b + i}` }, v: { N: '0' }, pad: { S: 'x'.repeat(100) } } },
    }));
    await ddb.send(new BatchWriteItemCommand({ RequestItems: { [TableName]: batch } }));
  }
}

async function timeTx(ddb: DynamoDBClient, items: TransactWriteItem[]) {
  const t0 = performance.now();
  await ddb.send(new TransactWriteItemsCommand({ TransactItems: items })).catch(() => {});
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function latency(name: string, ddb: DynamoDBClient, size: number) {
  const T = `bench-${name}-${size}-${Date.now()}`;
  await createTable(ddb, T);
  await fill(ddb, T, size);
  const committed: number[] = [];
  const cancelled: number[] = [];
  const reps = size >= 10_000 ? 5 : 9;
  for (let i = 0; i < reps; i++) {
    committed.push(
      await timeTx(ddb, [
        { Put: { TableName: T, Item: { pk: { S: `t-${i}` } } } },
        {
          Update: {
            TableName: T,
            Key: { pk: { S: `u-${i}` } },
            UpdateExpression: 'SET v = :one',
            ExpressionAttributeValues: { ':one': { N: '1' } },
          },
        },
        {
          ConditionCheck: {
            TableName: T,
            Key: { pk: { S: `t-${i}-x` } },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ]),
    );
    cancelled.push(
      await timeTx(ddb, [
        { Put: { TableName: T, Item: { pk: { S: `c-${i}` } } } },
        {
          Update: {
            TableName: T,
            Key: { pk: { S: `cu-${i}` } },
            UpdateExpression: 'SET v = :one',
            ExpressionAttributeValues: { ':one': { N: '1' } },
          },
        },
        {
          ConditionCheck: {
            TableName: T,
            Key: { pk: { S: `absent-${i}` } },
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      ]),
    );
  }
  return { committedMs: +median(committed).toFixed(1), cancelledMs: +median(cancelled).toFixed(1) };
}

/** `rounds` rounds: an acknowledged PutItem races a TransactWriteItems that gets cancelled. */
async function lostWrites(name: string, ddb: DynamoDBClient, rounds: number) {
  const T = `race-${name}-${Date.now()}`;
  await createTable(ddb, T);
  await fill(ddb, T, 200); // a non-trivial deepcopy widens stock's window, as in real test runs
  const acknowledged: string[] = [];
  let errors = 0;
  for (let r = 0; r < rounds; r++) {
    await Promise.all([
      ddb
        .send(
          new TransactWriteItemsCommand({
            TransactItems: [
              { Put: { TableName: T, Item: { pk: { S: `tx-${r}` } } } },
              {
                ConditionCheck: {
                  TableName: T,
                  Key: { pk: { S: `absent-${r}` } },
                  ConditionExpression: 'attribute_exists(pk)',
                },
              },
            ],
          }),
        )
        .catch((e: Error) => {
          if (e.name !== 'TransactionCanceledException') errors++;
        }),
      ...[0, 1].map((k) =>
        ddb.send(new PutItemCommand({ TableName: T, Item: { pk: { S: `put-${r}-${k}` } } })).then(
          () => {
            acknowledged.push(`put-${r}-${k}`);
          },
          () => {
            errors++;
          },
        ),
      ),
    ]);
  }
  const stored = new Set<string>();
  let ExclusiveStartKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: T, ExclusiveStartKey }));
    for (const i of page.Items ?? []) stored.add(i.pk!.S!);
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  const lostRounds = new Set(acknowledged.filter((k) => !stored.has(k)).map((k) => k.split('-')[1])).size;
  return { rounds, acknowledgedPuts: acknowledged.length, roundsWithLostPut: lostRounds, otherErrors: errors };
}

export async function rollbackBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: { sizes: { type: 'string', default: '0,2000,10000' }, rounds: { type: 'string', default: '300' } },
  });
  const sizes = values.sizes.split(',').map(Number);
  const rounds = Number(values.rounds);
  const emulators: Record<string, Emulator> = {
    stock: await startEmulator({ stockMoto: true }),
    launcher: await startEmulator(),
  };
  const medians: Record<string, Map<number, { committedMs: number; cancelledMs: number }>> = {};
  try {
    for (const [name, emu] of Object.entries(emulators)) {
      const ddb = client(emu.endpoint);
      medians[name] = new Map();
      for (const size of sizes) {
        const figures = await latency(name, ddb, size);
        medians[name].set(size, figures);
        console.log(
          JSON.stringify({
            emulator: name,
            measure: '3-action TransactWriteItems median',
            tableItems: size,
            ...figures,
          }),
        );
      }
      if (rounds > 0)
        console.log(
          JSON.stringify({
            emulator: name,
            measure: 'concurrent put vs cancelled transaction',
            ...(await lostWrites(name, ddb, rounds)),
          }),
        );
      ddb.destroy();
    }
    // The launcher's claim: how many times faster than stock moto (docs/emulator.md quotes it).
    const speedUp = (stockMs: number, launcherMs: number) => +(stockMs / Math.max(launcherMs, 0.1)).toFixed(1);
    for (const size of sizes) {
      const stock = medians.stock!.get(size)!;
      const launcher = medians.launcher!.get(size)!;
      console.log(
        JSON.stringify({
          measure: 'launcher speed-up over stock moto (median ratio)',
          tableItems: size,
          committed: speedUp(stock.committedMs, launcher.committedMs),
          cancelled: speedUp(stock.cancelledMs, launcher.cancelledMs),
        }),
      );
    }
  } finally {
    await Promise.all(Object.values(emulators).map((e) => e.stop()));
  }
}
