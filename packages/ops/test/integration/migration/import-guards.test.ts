import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { interceptCommands } from '@rocketmq-lambda/tools/instrumentation/command-interceptor.ts';
import { injectFaults } from '@rocketmq-lambda/tools/instrumentation/fault-injection.ts';
import { startLocalMariaDb } from '@rocketmq-lambda/tools/legacy/local-mariadb.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { beforeEach, describe, expect, it } from 'vitest';
import { awardThroughConsumer, ops, type PointsFixture } from '../operations/operations-fixture.ts';
import {
  insertLegacyAwards,
  mariaDbForFile,
  migrateImportArgs,
  recordsOf,
  reviewedImport,
} from './migration-fixture.ts';

/**
 * What an import must never do, each against a real MariaDB (the article's table) and the
 * emulator: overwrite a record the consumer wrote, write a row past its horizon, stop a whole run
 * on one contended transaction, settle two rows of one order by chance, read a DATETIME with the
 * wrong offset, or lose the digits of a BIGINT order number.
 */
const mariaDb = mariaDbForFile();

beforeEach(async () => {
  await mariaDb.db.query('TRUNCATE t_point_record');
});

const importArgs = (ledger: 'moved' | 'kept', ...more: string[]) => migrateImportArgs(mariaDb.url, ledger, ...more);
const scratch = async (name: string) => join(await mkdtemp(join(tmpdir(), 'import-guards-')), name);

/** The consumer's record for the order, as TTL would leave it: expired a minute ago, still in the table. */
async function expireRecord(f: PointsFixture, orderNo: string) {
  const record = (await recordsOf(f)).find((r) => r.key === orderNo)!;
  await f.dynamoDb.send(
    new UpdateCommand({
      TableName: f.resources.tables.idempotency,
      Key: { id: record.id },
      UpdateExpression: 'SET expiresAt = :past',
      ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 60 },
    }),
  );
}

/** A client whose transactions for `orderNo` are cancelled with TransactionConflict the first `times` times. */
function conflicting(
  f: PointsFixture,
  plan: Record<string, number>,
): { client: DynamoDBDocumentClient; seen: Record<string, number> } {
  const client = createDynamoDb(emulatorConfig(f.resources.endpoint));
  const seen: Record<string, number> = {};
  injectFaults(client, (command, input) => {
    if (command !== 'TransactWriteItemsCommand') return undefined;
    const orderNo = Object.keys(plan).find((o) => JSON.stringify(input).includes(`"AWARD#${o}"`));
    if (orderNo === undefined) return undefined;
    seen[orderNo] = (seen[orderNo] ?? 0) + 1;
    return seen[orderNo] <= plan[orderNo]! ? 'transactionConflict' : undefined;
  });
  return { client, seen };
}

describe('ops migrate import: records the consumer wrote are never overwritten', () => {
  it('a row inside its horizon meets a consumer record that expired but is still in the table: conflicting or awarded natively, exit 1', async () => {
    // Prepare: the consumer awarded SO-EXP-C to user 2 and SO-EXP-N to user 3; TTL has not deleted the expired records yet
    const f = await pointsFixture();
    await awardThroughConsumer(f, [
      { orderNo: 'SO-EXP-C', userId: '2', points: 40 },
      { orderNo: 'SO-EXP-N', userId: '3', points: 30 },
    ]);
    await expireRecord(f, 'SO-EXP-C');
    await expireRecord(f, 'SO-EXP-N');
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-EXP-C', userId: 1, points: 40 },
      { orderNo: 'SO-EXP-N', userId: 3, points: 30 },
      { orderNo: 'SO-EXP-FREE', userId: 4, points: 4 },
    ]);

    // Act
    const result = await ops(f, await reviewedImport(f, importArgs('moved', '--json')));

    // Assess: nothing of the two orders moved; the consumer's records are still its own
    expect(result.code).toBe(1);
    expect(result.json().counts).toMatchObject({ read: 3, imported: 1, conflicting: 1, awardedNatively: 1 });
    expect(await f.ledger('1')).toEqual([]);
    expect(await f.balance('1')).toBe(0);
    expect(await f.balance('3')).toBe(30);
    const records = await recordsOf(f);
    expect(
      records.filter((r) => r.key.startsWith('SO-EXP-') && r.key !== 'SO-EXP-FREE').map((r) => r.origin),
    ).not.toContain('legacy-import');
    expect(await f.ledgerMismatches()).toEqual([]);
  }, 60_000);

  it('--ledger kept: a row past its horizon writes nothing and is counted past the horizon', async () => {
    // Prepare: a legacy award from 2020, long past any copy
    const f = await pointsFixture();
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-2020', userId: 1, points: 10, createTime: '2020-07-05 14:22:31' },
      { orderNo: 'SO-NOW', userId: 1, points: 10 },
    ]);

    // Act
    const result = await ops(f, [...importArgs('kept', '--json')]);

    // Assess
    expect(result.code).toBe(0);
    expect(result.json().counts).toMatchObject({ read: 2, imported: 1, pastHorizon: 1 });
    expect((await recordsOf(f)).map((r) => r.key)).toEqual(['SO-NOW']);
  }, 60_000);
});

describe('ops migrate import --ledger moved under contention (TransactionConflict, injected at the SDK client)', () => {
  it('retries a contended row with backoff, reports one that stays contended, and finishes the run', async () => {
    // Prepare: SO-TC1 meets two conflicts, SO-TC2 a conflict on every commit
    const f = await pointsFixture();
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-TC0', userId: 5, points: 1 },
      { orderNo: 'SO-TC1', userId: 6, points: 2 },
      { orderNo: 'SO-TC2', userId: 7, points: 3 },
      { orderNo: 'SO-TC3', userId: 8, points: 4 },
    ]);
    const { client, seen } = conflicting(f, { 'SO-TC1': 2, 'SO-TC2': Number.POSITIVE_INFINITY });

    // Act
    const args = await reviewedImport(f, importArgs('moved'));
    const result = await ops(f, [...args, '--json'], { dynamoDb: client });
    const table = await ops(f, args, {
      dynamoDb: conflicting(f, { 'SO-TC2': Number.POSITIVE_INFINITY }).client,
    });

    // Assess: not interrupted; SO-TC1 imported on its third commit, SO-TC2 reported per row
    expect(result.code).toBe(1);
    const report = result.json();
    expect(report.counts).toMatchObject({ read: 4, imported: 3, contended: 1, conflicting: 0 });
    expect(report.rejected).toEqual([
      expect.objectContaining({ kind: 'contended', orderNo: 'SO-TC2', userId: '7', points: 3 }),
    ]);
    expect(seen['SO-TC1']).toBe(3);
    expect(seen['SO-TC2']).toBe(7);
    expect(await f.balance('6')).toBe(2);
    expect(await f.balance('7')).toBe(0);
    expect(await f.ledgerMismatches()).toEqual([]);
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/contended\s+1\s+TransactionConflict after every retry/);
  }, 60_000);
});

describe('ops migrate import: rows of one order in one page', () => {
  it('settles them by the source order, whatever the timing: the first row is imported, the next one meets it', async () => {
    // Prepare: an export holding SO-DUP twice (user 1 first, then user 2); user 1's write is slowed down
    const f = await pointsFixture();
    const jsonl = await scratch('awards.jsonl');
    await writeFile(
      jsonl,
      [
        { id: 1, order_no: 'SO-DUP', user_id: 1, point: 5, create_time: new Date().toISOString() },
        { id: 2, order_no: 'SO-DUP', user_id: 2, point: 5, create_time: new Date().toISOString() },
        { id: 3, order_no: 'SO-OTHER', user_id: 3, point: 5, create_time: new Date().toISOString() },
      ]
        .map((o) => JSON.stringify(o))
        .join('\n'),
    );
    const client = createDynamoDb(emulatorConfig(f.resources.endpoint));
    interceptCommands(client, 'slowFirstRow', async ({ input }, send) => {
      if (JSON.stringify(input).includes('legacy:line 1 (id 1)')) await sleep(500);
      return send();
    });

    // Act
    const result = await ops(
      f,
      await reviewedImport(f, migrateImportArgs(jsonl, 'moved', '--concurrency', '4', '--json')),
      {
        dynamoDb: client,
      },
    );

    // Assess
    expect(result.code).toBe(1);
    expect(result.json().counts).toMatchObject({ read: 3, imported: 2, conflicting: 1 });
    expect(result.json().rejected).toEqual([expect.objectContaining({ kind: 'conflicting', ref: 'line 2 (id 2)' })]);
    expect(await f.balance('1')).toBe(5);
    expect(await f.balance('2')).toBe(0);
  }, 60_000);
});

describe('ops migrate import: order numbers and times as the legacy store holds them', () => {
  it('keeps every digit of a BIGINT order number read through the MySQL driver', async () => {
    // Prepare: a table keyed by a BIGINT order number past 2^53
    const f = await pointsFixture();
    await mariaDb.db.query(
      `CREATE TABLE IF NOT EXISTS t_bigint_award (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, order_no BIGINT NOT NULL UNIQUE,
       user_id BIGINT NOT NULL, point INT NOT NULL, create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
    );
    await mariaDb.db.query('TRUNCATE t_bigint_award');
    await mariaDb.db.query(
      'INSERT INTO t_bigint_award (order_no, user_id, point) VALUES (202007051422310088, 9007199254740993, 300), (202007051422310089, 1, 1)',
    );

    // Act
    const result = await ops(f, await reviewedImport(f, importArgs('moved', '--table', 't_bigint_award', '--json')));

    // Assess
    expect(result.code).toBe(0);
    expect((await recordsOf(f)).map((r) => r.key).sort()).toEqual(['202007051422310088', '202007051422310089']);
    expect((await f.ledger('9007199254740993')).map((e) => e.entryId)).toEqual(['AWARD#202007051422310088']);
  }, 60_000);

  it('--time-zone Europe/Berlin: a delta import across the spring change reads each DATETIME with its own offset; one fixed offset drops rows', async () => {
    // Prepare: Berlin wall-clock rows around 2027-03-28 02:00 CET → 03:00 CEST; the backfill started at 00:15Z (01:15 CET)
    const f = await pointsFixture();
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-DST-0', userId: 1, points: 1, createTime: '2027-03-28 01:00:00' },
      { orderNo: 'SO-DST-1', userId: 1, points: 1, createTime: '2027-03-28 01:30:00' },
      { orderNo: 'SO-DST-2', userId: 1, points: 1, createTime: '2027-03-28 01:59:00' },
      { orderNo: 'SO-DST-3', userId: 1, points: 1, createTime: '2027-03-28 03:10:00' },
    ]);
    const since = ['--since', '2027-03-28T00:15:00Z'];

    // Act: first as the offset in force after the change, then by the zone's name
    const fixed = await ops(f, [...importArgs('kept', ...since, '--time-zone', '+02:00', '--dry-run', '--json')]);
    const zoned = await ops(f, [...importArgs('kept', ...since, '--time-zone', 'Europe/Berlin', '--json')]);

    // Assess: +02:00 misses the two rows written in CET after the backfill started; the zone reads all three
    expect(fixed.json().wouldWrite).toBe(1);
    expect(zoned.code).toBe(0);
    expect(zoned.json().counts).toMatchObject({ read: 3, imported: 3 });
    const created = Object.fromEntries((await recordsOf(f)).map((r) => [r.key, r.createdAt]));
    expect(created).toEqual({
      'SO-DST-1': '2027-03-28T00:30:00.000Z',
      'SO-DST-2': '2027-03-28T00:59:00.000Z',
      'SO-DST-3': '2027-03-28T01:10:00.000Z',
    });
  }, 60_000);

  it('refuses to read DATETIMEs with one offset when the server’s own zone changes its offset during the year', async () => {
    // Prepare: a server whose zone is SYSTEM, the system's being Europe/Berlin
    const f = await pointsFixture();
    const zoneBefore = process.env.TZ;
    process.env.TZ = 'Europe/Berlin';
    const server = await startLocalMariaDb({ timeZone: 'SYSTEM' }).finally(() => {
      if (zoneBefore === undefined) delete process.env.TZ;
      else process.env.TZ = zoneBefore;
    });
    try {
      await insertLegacyAwards(await server.connect(), [
        { orderNo: 'SO-W', userId: 1, points: 1, createTime: '2026-01-15 12:00:00' },
        { orderNo: 'SO-S', userId: 1, points: 1, createTime: '2026-07-15 12:00:00' },
      ]);

      // Act
      const refused = await ops(f, migrateImportArgs(server.url, 'kept'));
      const named = await ops(f, [
        ...migrateImportArgs(server.url, 'kept', '--time-zone', 'Europe/Berlin', '--dry-run', '--json'),
      ]);

      // Assess
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /the server's time zone \(SYSTEM, CES?T\) changes its offset during the year \(\+01:00 in January, \+02:00 in July\): give its IANA name with --time-zone/,
      );
      expect(await recordsOf(f)).toEqual([]);
      expect(named.json().counts).toMatchObject({ read: 2, invalid: 0 });
    } finally {
      await server.stop();
    }
  }, 120_000);
});
