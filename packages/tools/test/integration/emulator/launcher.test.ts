import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, EmulatorUnavailableError, startEmulator } from '../../../src/emulator/emulator.ts';

type Item = Record<string, AttributeValue>;

let launcher: Emulator;
let stock: Emulator;
let ddbLauncher: DynamoDBClient;
let ddbStock: DynamoDBClient;

function client(endpoint: string) {
  // One attempt: a retry must never hide an error from the comparison.
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

beforeAll(async () => {
  [launcher, stock] = await Promise.all([startEmulator(), startEmulator({ stockMoto: true })]);
  ddbLauncher = client(launcher.endpoint);
  ddbStock = client(stock.endpoint);
});

afterAll(async () => {
  ddbLauncher?.destroy();
  ddbStock?.destroy();
  await Promise.all([launcher?.stop(), stock?.stop()]);
});

const run = `${Date.now().toString(36)}`;

function simpleTable(name: string): CreateTableCommandInput {
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'status', AttributeType: 'S' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: 'byStatus',
        KeySchema: [
          { AttributeName: 'status', KeyType: 'HASH' },
          { AttributeName: 'pk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
  };
}

function compositeTable(name: string): CreateTableCommandInput {
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'N' },
      { AttributeName: 'lsiKey', AttributeType: 'S' },
    ],
    LocalSecondaryIndexes: [
      {
        IndexName: 'byLsiKey',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'lsiKey', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
  };
}

async function scanAll(ddb: DynamoDBClient, TableName: string, IndexName?: string): Promise<Item[]> {
  const items: Item[] = [];
  let ExclusiveStartKey: Item | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName, IndexName, ExclusiveStartKey }));
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  // Order-independent comparison.
  return items
    .map((i) => JSON.stringify(sortKeys(i)))
    .sort()
    .map((s) => JSON.parse(s) as Item);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}

/** What a client can observe of one TransactWriteItems call. */
async function transact(ddb: DynamoDBClient, TransactItems: TransactWriteItem[]) {
  try {
    await ddb.send(new TransactWriteItemsCommand({ TransactItems }));
    return { ok: true };
  } catch (err) {
    const e = err as {
      name: string;
      message: string;
      CancellationReasons?: unknown;
      $metadata?: { httpStatusCode?: number };
    };
    return { name: e.name, message: e.message, status: e.$metadata?.httpStatusCode, reasons: e.CancellationReasons };
  }
}

/** Deterministic PRNG (mulberry32) so a failure is reproducible. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('differential: launcher (item-level rollback + lock) vs stock moto', () => {
  it('gives identical outcomes, cancellation reasons and table contents', async () => {
    const S = `diff-simple-${run}`;
    const C = `diff-composite-${run}`;
    for (const ddb of [ddbLauncher, ddbStock]) {
      await ddb.send(new CreateTableCommand(simpleTable(S)));
      await ddb.send(new CreateTableCommand(compositeTable(C)));
      for (let i = 0; i < 6; i++) {
        await ddb.send(
          new PutItemCommand({
            TableName: S,
            Item: { pk: { S: `p${i}` }, v: { N: String(i) }, status: { S: i % 2 ? 'open' : 'done' } },
          }),
        );
        await ddb.send(
          new PutItemCommand({
            TableName: C,
            Item: { pk: { S: `p${i % 3}` }, sk: { N: String(i) }, v: { N: String(i) }, lsiKey: { S: `l${i}` } },
          }),
        );
      }
    }

    const sKey = (i: number) => ({ pk: { S: `p${i}` } });
    const cKey = (i: number) => ({ pk: { S: `p${i % 3}` }, sk: { N: String(i) } });
    const mustExist = { ConditionExpression: 'attribute_exists(pk)' };
    const mustNotExist = { ConditionExpression: 'attribute_not_exists(pk)' };

    const handWritten: TransactWriteItem[][] = [
      // Committed: put, update, delete, condition check across both tables.
      [
        { Put: { TableName: S, Item: { pk: { S: 'new1' }, v: { N: '1' }, status: { S: 'open' } }, ...mustNotExist } },
        {
          Update: {
            TableName: C,
            Key: cKey(1),
            UpdateExpression: 'SET v = v + :one, lsiKey = :l',
            ExpressionAttributeValues: { ':one': { N: '1' }, ':l': { S: 'moved' } },
          },
        },
        { Delete: { TableName: S, Key: sKey(5) } },
        { ConditionCheck: { TableName: C, Key: cKey(2), ...mustExist } },
      ],
      // Cancelled on the first action (ALL_OLD on an existing item -> Item in the reason).
      [
        {
          Put: {
            TableName: S,
            Item: { pk: { S: 'p0' }, v: { N: '99' }, status: { S: 'open' } },
            ...mustNotExist,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        { Delete: { TableName: S, Key: sKey(1) } },
        {
          Update: {
            TableName: C,
            Key: cKey(3),
            UpdateExpression: 'SET status = :s',
            ExpressionAttributeValues: { ':s': { S: 'x' } },
          },
        },
      ],
      // Cancelled on the last action, after the others were applied (they must be undone).
      [
        { Put: { TableName: S, Item: { pk: { S: 'new2' }, v: { N: '2' }, status: { S: 'open' } } } },
        {
          Update: {
            TableName: S,
            Key: sKey(2),
            UpdateExpression: 'SET status = :s REMOVE v',
            ExpressionAttributeValues: { ':s': { S: 'open' } },
          },
        },
        { Delete: { TableName: C, Key: cKey(4) } },
        {
          Update: {
            TableName: C,
            Key: { pk: { S: 'fresh' }, sk: { N: '1' } },
            UpdateExpression: 'SET v = :v',
            ExpressionAttributeValues: { ':v': { N: '7' } },
          },
        },
        {
          ConditionCheck: {
            TableName: S,
            Key: sKey(3),
            ConditionExpression: 'v > :big',
            ExpressionAttributeValues: { ':big': { N: '100' } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ],
      // Cancelled in the middle, two failing conditions, ALL_OLD on an absent item (no Item).
      [
        {
          Update: {
            TableName: S,
            Key: sKey(4),
            UpdateExpression: 'SET v = :v',
            ExpressionAttributeValues: { ':v': { N: '40' } },
          },
        },
        {
          Delete: {
            TableName: S,
            Key: { pk: { S: 'absent' } },
            ...mustExist,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        { Put: { TableName: C, Item: { pk: { S: 'p1' }, sk: { N: '1' }, v: { N: '0' } } } },
        {
          Delete: {
            TableName: C,
            Key: cKey(0),
            ConditionExpression: 'v = :nine',
            ExpressionAttributeValues: { ':nine': { N: '9' } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ],
      // Update expression that fails while executing (ADD to a string), after moto created the item.
      [
        { Put: { TableName: S, Item: { pk: { S: 'new3' }, v: { N: '3' } } } },
        {
          Update: {
            TableName: C,
            Key: { pk: { S: 'ghost' }, sk: { N: '9' } },
            UpdateExpression: 'SET lsiKey = :l',
            ExpressionAttributeValues: { ':l': { S: 'g' } },
          },
        },
        {
          Update: {
            TableName: S,
            Key: sKey(0),
            UpdateExpression: 'ADD status :one',
            ExpressionAttributeValues: { ':one': { N: '1' } },
          },
        },
      ],
      // Missing table in the middle: a cancellation reason (Delete/ConditionCheck) ...
      [
        { Put: { TableName: S, Item: { pk: { S: 'new4' }, v: { N: '4' } } } },
        { Delete: { TableName: `no-such-table-${run}`, Key: sKey(0) } },
      ],
      // ... or a request error before anything runs (Put).
      [
        { Put: { TableName: S, Item: { pk: { S: 'new5' }, v: { N: '5' } } } },
        { Put: { TableName: `no-such-table-${run}`, Item: sKey(0) } },
      ],
      // Two actions on one item: ValidationException after the first action was applied.
      [
        { Put: { TableName: S, Item: { pk: { S: 'new6' }, v: { N: '6' } } } },
        {
          Update: {
            TableName: S,
            Key: sKey(1),
            UpdateExpression: 'SET v = :v',
            ExpressionAttributeValues: { ':v': { N: '11' } },
          },
        },
        { ConditionCheck: { TableName: S, Key: sKey(1), ...mustExist } },
      ],
      // Missing range key in a Delete key: validation error mid-transaction.
      [
        { Put: { TableName: C, Item: { pk: { S: 'p2' }, sk: { N: '77' }, v: { N: '7' } } } },
        { Delete: { TableName: C, Key: { pk: { S: 'p2' } } } },
      ],
      // More than 100 actions.
      Array.from({ length: 101 }, (_, i) => ({ Put: { TableName: S, Item: { pk: { S: `bulk${i}` } } } })),
      // Committed again, so later cancellations roll back to a changed state.
      [
        { Put: { TableName: S, Item: { pk: { S: 'p1' }, v: { N: '100' }, status: { S: 'done' } } } },
        { Delete: { TableName: C, Key: cKey(5), ...mustExist } },
      ],
    ];

    // Seeded random transactions on a small key space, so actions collide with each other.
    const rnd = prng(20240601);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const randomTx = (): TransactWriteItem[] => {
      const n = 1 + Math.floor(rnd() * 5);
      const used = new Set<string>();
      const actions: TransactWriteItem[] = [];
      for (let a = 0; a < n; a++) {
        const onSimple = rnd() < 0.5;
        const i = Math.floor(rnd() * 8);
        const Key: Item = onSimple ? sKey(i) : cKey(i);
        const id = `${onSimple}:${i}`;
        if (used.has(id) && rnd() < 0.8) continue; // keep some duplicate-item cases
        used.add(id);
        const TableName = onSimple ? S : C;
        const cond: { ConditionExpression?: string; ExpressionAttributeValues?: Item } = pick([
          {},
          {},
          mustExist,
          mustNotExist,
          {
            ConditionExpression: 'v < :lim',
            ExpressionAttributeValues: { ':lim': { N: String(Math.floor(rnd() * 6)) } },
          },
        ]);
        const rv = rnd() < 0.5 ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {};
        const status = { S: pick(['open', 'done']) };
        switch (pick(['Put', 'Update', 'Delete', 'ConditionCheck'])) {
          case 'Put':
            actions.push({
              Put: {
                TableName,
                Item: {
                  ...Key,
                  v: { N: String(Math.floor(rnd() * 6)) },
                  ...(onSimple ? { status } : { lsiKey: { S: `l${i}` } }),
                },
                ...cond,
                ...rv,
              },
            });
            break;
          case 'Update':
            actions.push({
              Update: {
                TableName,
                Key,
                ...cond,
                ...rv,
                UpdateExpression: onSimple
                  ? 'SET v = if_not_exists(v, :one) + :one, status = :s'
                  : 'SET v = if_not_exists(v, :one) + :one',
                ExpressionAttributeValues: {
                  ...cond.ExpressionAttributeValues,
                  ':one': { N: '1' },
                  ...(onSimple ? { ':s': status } : {}),
                },
              },
            });
            break;
          case 'Delete':
            actions.push({ Delete: { TableName, Key, ...cond, ...rv } });
            break;
          default:
            actions.push({
              ConditionCheck: {
                TableName,
                Key,
                ...rv,
                ...cond,
                ConditionExpression: cond.ConditionExpression ?? mustExist.ConditionExpression,
              },
            });
        }
      }
      return actions.length ? actions : [{ ConditionCheck: { TableName: S, Key: sKey(0), ...mustExist } }];
    };
    const sequence = [...handWritten, ...Array.from({ length: 70 }, randomTx)];

    const snapshot = async (ddb: DynamoDBClient) => {
      const [simple, simpleGsi, composite, compositeLsi] = await Promise.all([
        scanAll(ddb, S),
        ddb.send(
          new QueryCommand({
            TableName: S,
            IndexName: 'byStatus',
            KeyConditionExpression: '#s = :o',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':o': { S: 'open' } },
          }),
        ),
        scanAll(ddb, C),
        ddb.send(
          new QueryCommand({
            TableName: C,
            IndexName: 'byLsiKey',
            KeyConditionExpression: 'pk = :p',
            ExpressionAttributeValues: { ':p': { S: 'p1' } },
          }),
        ),
      ]);
      // Index reads keep moto's order (GSI/LSI key order), so they are compared as returned.
      return { simple, simpleGsi: simpleGsi.Items, composite, compositeLsi: compositeLsi.Items };
    };

    const tally = { ok: 0, cancelled: 0, otherErrors: 0, reasonsWithItem: 0 };
    for (const [n, tx] of sequence.entries()) {
      // The two servers are independent, so each step runs on both at once.
      const [a, b] = await Promise.all([transact(ddbLauncher, tx), transact(ddbStock, tx)]);
      expect(a, `transaction #${n}: ${JSON.stringify(tx)}`).toEqual(b);
      const [sa, sb] = await Promise.all([snapshot(ddbLauncher), snapshot(ddbStock)]);
      expect(sa, `state after transaction #${n}`).toEqual(sb);
      if ('ok' in a) tally.ok++;
      else if (a.name === 'TransactionCanceledException') {
        tally.cancelled++;
        tally.reasonsWithItem += (a.reasons as { Item?: unknown }[]).filter((r) => r.Item).length;
      } else tally.otherErrors++;
    }
    console.log(`[differential] ${sequence.length} transactions identical on both: ${JSON.stringify(tally)}`);
    // The sequence really exercises what it claims to.
    expect(tally.ok).toBeGreaterThan(10);
    expect(tally.cancelled).toBeGreaterThan(30);
    expect(tally.reasonsWithItem).toBeGreaterThan(5);
    expect(tally.otherErrors).toBeGreaterThanOrEqual(4);
  });

  it('rolls back a table addressed by ARN (stock moto keeps the partial writes)', async () => {
    const T = `diff-arn-${run}`;
    await ddbLauncher.send(new CreateTableCommand(simpleTable(T)));
    const arn = (await ddbLauncher.send(new DescribeTableCommand({ TableName: T }))).Table!.TableArn!;
    const result = await transact(ddbLauncher, [
      { Put: { TableName: arn, Item: { pk: { S: 'written-then-undone' } } } },
      { ConditionCheck: { TableName: arn, Key: { pk: { S: 'absent' } }, ConditionExpression: 'attribute_exists(pk)' } },
    ]);
    expect(result).toMatchObject({ name: 'TransactionCanceledException' });
    expect(await scanAll(ddbLauncher, T)).toEqual([]);
  });
});

describe('differential: UpdateItem on the launcher (memoised parse, pickled working copy, attribute values written as they come) vs stock moto', () => {
  it('answers every update expression, each sent twice, as stock moto does, and leaves the same items', async () => {
    const T = `diff-update-${run}`;
    const updates: Omit<UpdateItemCommandInput, 'TableName'>[] = [
      {
        Key: { pk: { S: 'a' } },
        // Every attribute type, binary ones too (the launcher writes the others as they come and leaves binary to
        // moto's serializer).
        UpdateExpression:
          'SET v = :one, tags = :tags, doc = :doc, flags = :flags, payload = :blob, payloads = :blobs, nums = :nums, gone = :null',
        ExpressionAttributeValues: {
          ':one': { N: '1' },
          ':tags': { L: [{ S: 'x' }, { N: '2' }, { M: { deep: { BOOL: false } } }] },
          ':doc': { M: { inner: { M: { n: { N: '1' }, b: { B: new Uint8Array([1, 2]) } } } } },
          ':flags': { SS: ['a', 'b'] },
          ':blob': { B: new Uint8Array([0, 255, 7]) },
          ':blobs': { BS: [new Uint8Array([1]), new Uint8Array([2])] },
          ':nums': { NS: ['1', '2.5'] },
          ':null': { NULL: true },
        },
        ReturnValues: 'ALL_NEW',
      },
      {
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET v = v + :one, #s = if_not_exists(#s, :open)',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':one': { N: '1' }, ':open': { S: 'open' } },
        ReturnValues: 'UPDATED_OLD',
      },
      {
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET tags = list_append(tags, :more), doc.#in.n = doc.#in.n - :one',
        ExpressionAttributeNames: { '#in': 'inner' },
        ExpressionAttributeValues: { ':more': { L: [{ S: 'y' }] }, ':one': { N: '1' } },
        ReturnValues: 'ALL_NEW',
      },
      {
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'ADD failures :one, colours :red SET lastDelivery = :d REMOVE tags[0]',
        ExpressionAttributeValues: { ':one': { N: '1' }, ':red': { SS: ['red'] }, ':d': { S: 'd1' } },
        ReturnValues: 'ALL_NEW',
      },
      {
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'DELETE colours :red',
        ExpressionAttributeValues: { ':red': { SS: ['red'] }, ':d': { S: 'd1' } },
        ConditionExpression: 'lastDelivery <> :d',
      },
      {
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'SET #status = :to, statusMsgId = :m',
        ConditionExpression: 'attribute_not_exists(pk) OR #status = :from',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':to': { S: 'PAID' }, ':m': { S: 'm1' }, ':from': { S: 'WAIT_PAY' } },
        ReturnValues: 'ALL_NEW',
      },
      // Errors: arithmetic on a string, an undefined placeholder, overlapping paths, the key itself.
      {
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'SET statusMsgId = statusMsgId + :one',
        ExpressionAttributeValues: { ':one': { N: '1' } },
      },
      { Key: { pk: { S: 'b' } }, UpdateExpression: 'SET v = :missing' },
      {
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET doc.#in = :m, doc.#in.n = :one',
        ExpressionAttributeNames: { '#in': 'inner' },
        ExpressionAttributeValues: { ':m': { M: {} }, ':one': { N: '1' } },
      },
      { Key: { pk: { S: 'a' } }, UpdateExpression: 'SET pk = :k', ExpressionAttributeValues: { ':k': { S: 'z' } } },
      {
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'REMOVE doc.#in, colours SET v = :zero',
        ExpressionAttributeNames: { '#in': 'inner' },
        ExpressionAttributeValues: { ':zero': { N: '0' } },
        ReturnValues: 'ALL_OLD',
      },
    ];
    const outcomes: Record<'launcher' | 'stock', unknown[]> = { launcher: [], stock: [] };
    for (const [name, ddb] of [
      ['launcher', ddbLauncher],
      ['stock', ddbStock],
    ] as const) {
      await ddb.send(new CreateTableCommand(simpleTable(T)));
      // Twice: the second round takes the launcher's memoised parse and its pickled copy.
      for (const round of [1, 2]) {
        for (const update of updates) {
          const outcome = await ddb.send(new UpdateItemCommand({ TableName: T, ...update })).then(
            (r) => ({ round, attributes: r.Attributes }),
            (e: Error) => ({ round, error: e.name, message: e.message }),
          );
          outcomes[name].push(outcome);
        }
      }
      outcomes[name].push(
        (await ddb.send(new ScanCommand({ TableName: T }))).Items?.sort((x, y) => x.pk!.S!.localeCompare(y.pk!.S!)),
      );
    }
    expect(outcomes.launcher).toEqual(outcomes.stock);
    // The run exercised successes and each kind of refusal, not only one path.
    expect(outcomes.stock.filter((o) => (o as { error?: string }).error).length).toBeGreaterThanOrEqual(8);
    expect(outcomes.stock.filter((o) => (o as { attributes?: unknown }).attributes).length).toBeGreaterThanOrEqual(8);
  });
});

describe('keep-alive on the launcher', () => {
  it('answers an error moto does not handle with a 500 that closes its connection, so the next call on the client succeeds', async () => {
    const ddb = client(launcher.endpoint);
    const T = `crash-${run}`;
    await ddb.send(new CreateTableCommand(simpleTable(T)));
    // moto raises a KeyError on a placeholder the request does not define.
    const crash = await ddb
      .send(
        new UpdateItemCommand({
          TableName: T,
          Key: { pk: { S: 'a' } },
          UpdateExpression: 'SET v = :one',
          ConditionExpression: 'v <> :undefined',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        }),
      )
      .catch((e: Error & { $metadata?: { httpStatusCode?: number } }) => e);
    expect(crash).toMatchObject({ name: 'InternalServerError', $metadata: { httpStatusCode: 500 } });
    // One attempt: without the Connection: close this call reused the dropped connection and failed.
    await expect(ddb.send(new PutItemCommand({ TableName: T, Item: { pk: { S: 'b' } } }))).resolves.toBeDefined();
  });
});

describe('concurrency on the launcher', () => {
  /** Writers whose puts are acknowledged, racing transactions that write the same keys and get cancelled. */
  async function race(ddb: DynamoDBClient, TableName: string, writers: number, perWriter: number) {
    const acknowledged = new Map<string, string>();
    let cancelled = 0;
    let failed = 0;
    const key = (w: number, j: number) => `w${w}-${j}`;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let j = 0; j < perWriter; j++) {
          const value = `put-${w}-${j}`;
          const put = ddb
            .send(new PutItemCommand({ TableName, Item: { pk: { S: key(w, j) }, value: { S: value } } }))
            .then(
              (r) => {
                if (r.$metadata.httpStatusCode === 200) acknowledged.set(key(w, j), value);
              },
              () => {
                failed++;
              },
            );
          // Touches this writer's latest key and a neighbour's, then fails on a missing item.
          const tx = ddb
            .send(
              new TransactWriteItemsCommand({
                TransactItems: [
                  { Put: { TableName, Item: { pk: { S: key(w, j) }, value: { S: 'from-cancelled-tx' } } } },
                  {
                    Update: {
                      TableName,
                      Key: { pk: { S: key((w + 1) % writers, j) } },
                      UpdateExpression: 'SET #v = :x',
                      ExpressionAttributeNames: { '#v': 'value' },
                      ExpressionAttributeValues: { ':x': { S: 'from-cancelled-tx' } },
                    },
                  },
                  {
                    ConditionCheck: {
                      TableName,
                      Key: { pk: { S: `missing-${w}-${j}` } },
                      ConditionExpression: 'attribute_exists(pk)',
                    },
                  },
                ],
              }),
            )
            .then(
              () => {
                throw new Error('transaction unexpectedly committed');
              },
              (e: Error) => {
                if (e.name === 'TransactionCanceledException') cancelled++;
                else failed++;
              },
            );
          await Promise.all([put, tx]);
        }
      }),
    );
    const stored = new Map((await scanAll(ddb, TableName)).map((i) => [i.pk!.S!, i.value!.S!]));
    const lost = [...acknowledged].filter(([k, v]) => stored.get(k) !== v).map(([k]) => k);
    return { acknowledged: acknowledged.size, cancelled, failed, lost, stored };
  }

  it('never loses an acknowledged write while cancelled transactions roll back', async () => {
    const T = `conc-${run}`;
    await ddbLauncher.send(new CreateTableCommand(simpleTable(T)));
    const writers = 16;
    const perWriter = 15;
    const r = await race(ddbLauncher, T, writers, perWriter);
    console.log(
      `[concurrency] launcher: ${r.acknowledged} acknowledged puts, ${r.cancelled} cancelled transactions, ${r.failed} other failures, ${r.lost.length} lost`,
    );
    expect(r.failed).toBe(0);
    expect(r.cancelled).toBe(writers * perWriter);
    expect(r.acknowledged).toBe(writers * perWriter);
    expect(r.lost).toEqual([]);
    // Nothing from a cancelled transaction is visible, and nothing else exists.
    expect([...r.stored.values()].filter((v) => v === 'from-cancelled-tx')).toEqual([]);
    expect(r.stored.size).toBe(writers * perWriter);
  });
});

describe('SQS under concurrent requests on the launcher', () => {
  const sqsOf = (endpoint: string) =>
    new SQSClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });

  /**
   * Senders, receivers that delete what they get, and attribute readers, all at once, as the local run's pollers and
   * bridge are.
   */
  async function drainConcurrently(sqs: SQSClient, name: string) {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '60' } })))
      .QueueUrl!;
    const received = new Map<string, number>();
    const failedDeletes: string[] = [];
    let sending = true;
    const senders = Array.from({ length: 4 }, async (_, s) => {
      for (let b = 0; b < 100; b++) {
        await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: url,
            Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `s${s}-${b}-${i}` })),
          }),
        );
      }
    });
    // Bounded: a message the emulator lost would otherwise keep the receivers polling until the test times out.
    const until = Date.now() + 60_000;
    const busy = async (work: () => Promise<void>) => {
      while ((sending || received.size < 4000) && Date.now() < until) await work();
    };
    const receivers = Array.from({ length: 6 }, () =>
      busy(async () => {
        const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
        for (const m of Messages) received.set(m.Body!, (received.get(m.Body!) ?? 0) + 1);
        if (Messages.length === 0) return;
        const { Failed = [] } = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: url,
            Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
          }),
        );
        failedDeletes.push(...Failed.map((f) => f.Code ?? 'failed'));
      }),
    );
    const readers = Array.from({ length: 2 }, () =>
      busy(async () => {
        await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
      }),
    );
    await Promise.all(senders);
    sending = false;
    await Promise.all([...receivers, ...readers]);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return { received, failedDeletes, left: Attributes };
  }

  it('loses no send and no delete, and hands every message out once (unserialised moto lost 50 deletes, or a message, per run)', {
    timeout: 120_000,
  }, async () => {
    const r = await drainConcurrently(sqsOf(launcher.endpoint), `sqs-conc-${run}`);
    expect(r.received.size).toBe(4000);
    expect([...r.received.values()].filter((n) => n > 1)).toEqual([]);
    expect(r.failedDeletes).toEqual([]);
    // Stock moto leaves deleted messages in flight here: two deletes rebuild the message list from the same old copy.
    expect(r.left).toEqual({ ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' });
  });

  it('a long poll waits without holding up the sends it waits for', async () => {
    const sqs = sqsOf(launcher.endpoint);
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: `sqs-poll-${run}` }))).QueueUrl!;
    const started = Date.now();
    const poll = sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 5 }));
    await new Promise((r) => setTimeout(r, 300));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'wake' }));
    const sentAfter = Date.now() - started;
    const { Messages = [] } = await poll;
    expect(Messages.map((m) => m.Body)).toEqual(['wake']);
    expect(sentAfter).toBeLessThan(2_000);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});

describe('SQS FIFO deduplication on the launcher', () => {
  const sqsOf = (endpoint: string) =>
    new SQSClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });

  /** Sends a, b, consumes both, re-sends a (same deduplication id) and c; returns what arrives after. */
  async function resendAfterDelete(sqs: SQSClient, name: string, attributes: Record<string, string> = {}) {
    const url = (
      await sqs.send(
        new CreateQueueCommand({ QueueName: `${name}.fifo`, Attributes: { FifoQueue: 'true', ...attributes } }),
      )
    ).QueueUrl!;
    const send = (body: string, group = 'order-1') =>
      sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: `id-${body}`,
        }),
      );
    const takeAll = async () => {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
      if (Messages.length > 0)
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: url,
            Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
          }),
        );
      return Messages.map((m) => m.Body);
    };
    await send('a');
    await send('b');
    const first = await takeAll();
    await send('a');
    await send('c');
    return { first, after: await takeAll(), send, takeAll };
  }

  it('drops a re-send within five minutes although the first copy was consumed and deleted (stock moto delivers it again)', async () => {
    const launched = await resendAfterDelete(sqsOf(launcher.endpoint), `fifo-dedup-${run}`);
    expect(launched.first).toEqual(['a', 'b']);
    expect(launched.after).toEqual(['c']);
    const plain = await resendAfterDelete(sqsOf(stock.endpoint), `fifo-dedup-${run}`);
    expect(plain.after).toEqual(['a', 'c']);
  });

  it('keeps ids per message group under the messageGroup deduplication scope', async () => {
    const scoped = await resendAfterDelete(sqsOf(launcher.endpoint), `fifo-scope-${run}`, {
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    });
    expect(scoped.after).toEqual(['c']);
    // The same id in another group is another message.
    await scoped.send('a', 'order-2');
    expect(await scoped.takeAll()).toEqual(['a']);
  });
});

// How much faster the launcher is is a benchmark figure: `npm run bench -- rollback`.
describe('TransactWriteItems on a 2,000-item table', () => {
  it('commits and cancels exactly as stock moto does, leaving the same table', async () => {
    // Prepare: the same 2,000 items on both
    const T = `large-${run}`;
    const ITEMS = 2000;
    const seed = async (ddb: DynamoDBClient) => {
      await ddb.send(new CreateTableCommand(simpleTable(T)));
      const batches = Array.from({ length: ITEMS / 25 }, (_, b) =>
        Array.from({ length: 25 }, (_, i) => ({
          PutRequest: {
            Item: {
              pk: { S: `seed-${b * 25 + i}` },
              v: { N: String(i) },
              status: { S: 'open' },
              pad: { S: 'x'.repeat(100) },
            },
          },
        })),
      );
      for (const batch of batches) await ddb.send(new BatchWriteItemCommand({ RequestItems: { [T]: batch } }));
    };
    await Promise.all([seed(ddbLauncher), seed(ddbStock)]);
    const committed = (i: number): TransactWriteItem[] => [
      {
        Put: {
          TableName: T,
          Item: { pk: { S: `t-${i}` }, v: { N: '1' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Update: {
          TableName: T,
          Key: { pk: { S: `seed-${i}` } },
          UpdateExpression: 'SET v = v + :one',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        },
      },
      {
        ConditionCheck: {
          TableName: T,
          Key: { pk: { S: `seed-${i + 1}` } },
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ];
    const cancelled = (i: number): TransactWriteItem[] => [
      { Put: { TableName: T, Item: { pk: { S: `c-${i}` }, v: { N: '1' } } } },
      {
        Update: {
          TableName: T,
          Key: { pk: { S: `seed-${i + 100}` } },
          UpdateExpression: 'SET v = v + :one',
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
    ];
    // Act: five of each on both
    const outcomes = { launcher: [] as unknown[], stock: [] as unknown[] };
    for (let i = 0; i < 5; i++) {
      for (const tx of [committed(i), cancelled(i)]) {
        const [a, b] = await Promise.all([transact(ddbLauncher, tx), transact(ddbStock, tx)]);
        outcomes.launcher.push(a);
        outcomes.stock.push(b);
      }
    }
    // Assess: the committed ones committed, the cancelled ones were cancelled on their check, on both
    expect(outcomes.launcher).toEqual(outcomes.stock);
    expect(outcomes.launcher.filter((o) => (o as { ok?: boolean }).ok)).toHaveLength(5);
    expect(
      outcomes.launcher.filter((o) => (o as { name?: string }).name === 'TransactionCanceledException'),
    ).toHaveLength(5);
    const [afterLauncher, afterStock] = await Promise.all([scanAll(ddbLauncher, T), scanAll(ddbStock, T)]);
    expect(afterLauncher).toEqual(afterStock);
    expect(afterLauncher).toHaveLength(ITEMS + 5);
    expect(afterLauncher.filter((i) => i.pk!.S!.startsWith('c-'))).toEqual([]);
  });
});

describe('startup failures and process hygiene', () => {
  let dir: string;
  let noMotoPython: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'emulator-test-'));
    noMotoPython = join(dir, 'python-without-moto');
    // -I: ignore PYTHON* env and user site; -S: no site-packages, so neither werkzeug nor moto import.
    await writeFile(noMotoPython, '#!/bin/sh\nexec python3 -I -S "$@"\n');
    await chmod(noMotoPython, 0o755);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reports missing emulator packages as EmulatorUnavailableError, naming the module, with the install command', async () => {
    const err = await startEmulator({ python: noMotoPython }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmulatorUnavailableError);
    expect((err as Error).message).toMatch(
      /the emulator's Python packages \(moto, cheroot\) are not installed for .*No module named 'cheroot'/,
    );
    expect((err as Error).message).toContain(
      `${noMotoPython} -m pip install -r packages/tools/src/emulator/requirements.txt`,
    );
    expect((err as Error).message.split('\n')).toHaveLength(1);
  });

  it('honours EMULATOR_PYTHON', async () => {
    const saved = process.env.EMULATOR_PYTHON;
    process.env.EMULATOR_PYTHON = noMotoPython;
    try {
      await expect(startEmulator()).rejects.toThrow(
        `${noMotoPython} -m pip install -r packages/tools/src/emulator/requirements.txt`,
      );
    } finally {
      if (saved === undefined) delete process.env.EMULATOR_PYTHON;
      else process.env.EMULATOR_PYTHON = saved;
    }
  });

  it('reports a missing Python interpreter with what to use instead', async () => {
    const err = await startEmulator({ python: join(dir, 'no-such-python') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmulatorUnavailableError);
    expect((err as Error).message).toContain('packages/tools/src/emulator/requirements.txt installed');
  });

  const reachable = (endpoint: string) =>
    fetch(`${endpoint}/moto-api/data.json`, { signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    );
  const waitUntilGone = async (endpoint: string, ms: number) => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (!(await reachable(endpoint))) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };

  it('with separateDynamoDb, serves DynamoDB from a second process; reset and stop reach both', async () => {
    const emu = await startEmulator({ separateDynamoDb: true });
    try {
      expect(emu.dynamoDbEndpoint).not.toBe(emu.endpoint);
      const aws = emulatorConfig(emu.endpoint, emu.dynamoDbEndpoint);
      const table = {
        TableName: 'split',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' as const }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' as const }],
        BillingMode: 'PAY_PER_REQUEST' as const,
      };
      await createDynamoDb(aws).send(new CreateTableCommand(table));
      await createSqs(aws).send(new CreateQueueCommand({ QueueName: 'split' }));
      // The table lives in the DynamoDB process only; the other process has none.
      await expect(
        client(emu.dynamoDbEndpoint).send(new DescribeTableCommand({ TableName: 'split' })),
      ).resolves.toBeDefined();
      await expect(client(emu.endpoint).send(new DescribeTableCommand({ TableName: 'split' }))).rejects.toThrow(
        /not found|ResourceNotFound/i,
      );
      await emu.reset();
      await expect(client(emu.dynamoDbEndpoint).send(new DescribeTableCommand({ TableName: 'split' }))).rejects.toThrow(
        /not found|ResourceNotFound/i,
      );
    } finally {
      await emu.stop();
    }
    expect(await waitUntilGone(emu.endpoint, 3000)).toBe(true);
    expect(await waitUntilGone(emu.dynamoDbEndpoint, 3000)).toBe(true);
  });

  it('stop() ends the server (SIGTERM)', async () => {
    const emu = await startEmulator();
    expect(await reachable(emu.endpoint)).toBe(true);
    await emu.stop();
    expect(await waitUntilGone(emu.endpoint, 3000)).toBe(true);
  });

  it('the server exits when the process that started it is SIGKILLed', async () => {
    const module = fileURLToPath(new URL('../../../src/emulator/emulator.ts', import.meta.url));
    const script = `const { startEmulator } = await import(${JSON.stringify(module)});
      const e = await startEmulator(); console.log(e.endpoint); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const endpoint = await new Promise<string>((resolve, reject) => {
      parent.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
      parent.once('exit', (code) => reject(new Error(`parent exited early (${code})`)));
    });
    expect(await reachable(endpoint)).toBe(true);
    parent.kill('SIGKILL');
    expect(await waitUntilGone(endpoint, 5000)).toBe(true);
  });
});
