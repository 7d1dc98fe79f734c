import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { beforeEach, describe, expect, it } from 'vitest';
import { awardThroughConsumer, ops } from '../operations/operations-fixture.ts';
import {
  insertLegacyAwards,
  mariaDbForFile,
  migrateImportArgs,
  OpsProcess,
  recordsOf,
  reviewedImport,
} from './migration-fixture.ts';

/**
 * `ops migrate import` against a real MariaDB holding the article's table, written as the legacy
 * consumer writes it (create_time in the server's +08:00), into emulator DynamoDB; then the real
 * points consumer meets copies of the imported orders.
 */
const mariaDb = mariaDbForFile();

beforeEach(async () => {
  await mariaDb.db.query('TRUNCATE t_point_record');
});

const importArgs = (ledger: 'moved' | 'kept', ...more: string[]) => migrateImportArgs(mariaDb.url, ledger, ...more);

async function checkpointPath(): Promise<string> {
  return join(await mkdtemp(join(tmpdir(), 'import-checkpoint-')), 'checkpoint.json');
}

describe('ops migrate import from MariaDB (the article’s t_point_record)', () => {
  it('writes records the points consumer honours: a copy is a legacy duplicate, other content a PAYLOAD_CONFLICT', async () => {
    // Prepare
    const f = await pointsFixture();
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO202007051422310088', userId: 88372, points: 300 },
      { orderNo: 'SO-2', userId: '9007199254740993', points: 5 },
    ]);

    // Act
    const imported = await ops(f, [...importArgs('kept'), '--json']);
    await f.invoke([
      orderEnvelope({ orderNo: 'SO202007051422310088', userId: 88372, points: 300 }),
      orderEnvelope({ orderNo: 'SO-2', userId: '9007199254740993', points: 7 }),
      orderEnvelope({ orderNo: 'SO-NEW', userId: 1, points: 1 }),
    ]);

    // Assess: both imported with the consumer's fingerprint (the BIGINT id kept every digit)
    expect(imported.code).toBe(0);
    expect(imported.json().counts).toMatchObject({ read: 2, imported: 2, conflicting: 0, invalid: 0 });
    const settled = Object.fromEntries(f.reports.map((r) => [r.key, r.settlement]));
    expect(settled.SO202007051422310088).toMatchObject({ outcome: 'duplicate', reason: 'legacy-record-exists' });
    expect(settled['SO-2']).toMatchObject({ outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } });
    expect(settled['SO-NEW']).toEqual({ outcome: 'processed' });
    expect(await f.ledger('88372')).toEqual([]);
  }, 60_000);

  it('resumes after a kill in the middle: every row written once (balances equal the legacy sums), none missed; a re-run writes nothing', async () => {
    // Prepare: 600 awards over 40 users
    const f = await pointsFixture();
    const rows = Array.from({ length: 600 }, (_, i) => ({
      orderNo: `SO-K${String(i).padStart(5, '0')}`,
      userId: 1000 + (i % 40),
      points: 1 + (i % 7),
    }));
    await insertLegacyAwards(mariaDb.db, rows);
    const checkpoint = await checkpointPath();
    const args = await reviewedImport(
      f,
      importArgs('moved', '--checkpoint', checkpoint, '--page-size', '100', '--concurrency', '4', '--json'),
    );

    // Act: kill the import (SIGKILL) while it writes its third page, then run the same command again
    const killed = new OpsProcess(f, args);
    const readWhenKilled = await killed.killAfterPages(checkpoint, 100, 2);
    const resumed = await ops(f, args);
    const rerun = await ops(f, await reviewedImport(f, importArgs('moved', '--json')));

    // Assess: the kill came mid-run, the second run resumed it and completed it
    expect(killed.child.signalCode).toBe('SIGKILL');
    expect(readWhenKilled).toBeLessThan(rows.length);
    expect(resumed.code).toBe(0);
    const report = resumed.json();
    expect(report.resumedFrom).toBeDefined();
    expect(report.counts).toMatchObject({ read: 600, imported: 600, alreadyPresent: 0, conflicting: 0 });
    // Assess: one record and one ledger entry per order, all of one run; every balance is its legacy sum
    const records = await recordsOf(f);
    expect(records).toHaveLength(600);
    expect(new Set(records.map((r) => r.importRun))).toEqual(new Set([report.runId]));
    for (const userId of [1000, 1017, 1039]) {
      const legacy = rows.filter((r) => r.userId === userId).reduce((n, r) => n + r.points, 0);
      expect(await f.balance(String(userId))).toBe(legacy);
      expect((await f.ledger(String(userId))).length).toBe(rows.filter((r) => r.userId === userId).length);
    }
    expect(await f.ledgerMismatches()).toEqual([]);
    // Assess: the re-run found everything there and wrote nothing
    expect(rerun.code).toBe(0);
    expect(rerun.json().counts).toMatchObject({ read: 600, imported: 0, alreadyPresent: 600 });
    expect(await f.ledgerMismatches()).toEqual([]);
  }, 180_000);

  it('--ledger moved writes only a reviewed plan: refused without one, and when the source no longer holds what was reviewed', async () => {
    // Prepare: three awards to two users
    const f = await pointsFixture();
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-P1', userId: 11, points: 100 },
      { orderNo: 'SO-P2', userId: 11, points: 50 },
      { orderNo: 'SO-P3', userId: 12, points: 7 },
    ]);
    const plan = join(await mkdtemp(join(tmpdir(), 'import-plan-')), 'plan.json');
    const apply = [...importArgs('moved'), '--plan', plan];

    // Act: without a plan; a dry run that saves one; a row changed after the review
    const unplanned = await ops(f, importArgs('moved'));
    const dryRun = await ops(f, [...importArgs('moved'), '--dry-run', '--plan', plan]);
    const reviewed = JSON.parse(await readFile(plan, 'utf8'));
    await mariaDb.db.query("UPDATE t_point_record SET point = 500 WHERE order_no = 'SO-P2'");
    const changed = await ops(f, apply);
    await mariaDb.db.query("UPDATE t_point_record SET point = 50 WHERE order_no = 'SO-P2'");
    await writeFile(plan, JSON.stringify({ ...reviewed, users: [{ userId: '11', awards: 2, points: 157 }] }));
    const edited = await ops(f, apply);
    await writeFile(plan, JSON.stringify(reviewed));
    const otherImport = await ops(f, [...apply, '--since', '2026-01-01T00:00:00Z']);
    // …a row the legacy consumer adds after the review is not in the plan, nor read by its apply run
    await insertLegacyAwards(mariaDb.db, [{ orderNo: 'SO-P4', userId: 13, points: 9 }]);
    const applied = await ops(f, [...apply, '--json']);

    // Assess: nothing written until the reviewed plan was applied, and then exactly it
    expect(unplanned.code).toBe(2);
    expect(unplanned.stderr).toMatch(/--ledger moved raises balances: review a plan first\. .*--dry-run --plan <file>/);
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toMatch(/Plan [0-9a-f]{16} saved to .*plan\.json: 3 awards, 157 points to 2 user\(s\)\./);
    expect(reviewed).toMatchObject({
      awards: 3,
      points: 157,
      users: [
        { userId: '11', awards: 2, points: 150 },
        { userId: '12', awards: 1, points: 7 },
      ],
    });
    expect((await stat(plan)).mode & 0o777).toBe(0o600);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(
      /the source no longer holds the reviewed awards \(plan [0-9a-f]{16}, now [0-9a-f]{16}; .*user 11: 150 points in 2 awards in the plan, 600 points in 2 awards now\): nothing was written/,
    );
    expect(edited.code).toBe(2);
    expect(edited.stderr).toMatch(/was edited after the dry run wrote it/);
    expect(otherImport.code).toBe(2);
    expect(otherImport.stderr).toMatch(/is the plan of another import/);
    expect(applied.code).toBe(0);
    expect(applied.json().counts).toMatchObject({ read: 3, imported: 3 });
    expect(await f.balance('11')).toBe(150);
    expect(await f.balance('13')).toBe(0);
    expect((await recordsOf(f)).map((r) => r.key).sort()).toEqual(['SO-P1', 'SO-P2', 'SO-P3']);
  }, 60_000);

  it('lists conflicting rows, rows the consumer awarded first and invalid rows with reasons, and exits 1', async () => {
    // Prepare: the consumer here already awarded SO-C (to another user) and SO-N (the same award)
    const f = await pointsFixture();
    await awardThroughConsumer(f, [
      { orderNo: 'SO-C', userId: '2', points: 300 },
      { orderNo: 'SO-N', userId: '3', points: 30 },
    ]);
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-C', userId: 1, points: 300 },
      { orderNo: 'SO-N', userId: 3, points: 30 },
      { orderNo: 'SO 1', userId: 4, points: 1 },
      { orderNo: 'SO-NEG', userId: 5, points: -5 },
      { orderNo: 'SO-BIG', userId: 6, points: 2_000_000 },
      { orderNo: 'SO-USER', userId: -7, points: 1 },
      { orderNo: 'SO-OK', userId: 8, points: 8 },
    ]);

    // Act
    const args = await reviewedImport(f, importArgs('moved'));
    const result = await ops(f, [...args, '--json']);
    const table = await ops(f, args);

    // Assess
    expect(result.code).toBe(1);
    const report = result.json();
    expect(report.counts).toMatchObject({ read: 7, imported: 1, conflicting: 1, awardedNatively: 1, invalid: 4 });
    expect(report.invalidReasons).toEqual({
      'orderNo must be printable ASCII without spaces': 1,
      'points must not be negative': 1,
      'points above 1000000': 1,
      'userId must not be negative': 1,
    });
    expect(report.rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'conflicting', orderNo: 'SO-C', userId: '1', points: 300 }),
        expect.objectContaining({ kind: 'awarded-natively', orderNo: 'SO-N' }),
        expect.objectContaining({
          kind: 'invalid',
          orderNo: 'SO 1',
          ref: expect.stringMatching(/^t_point_record#\d+$/),
        }),
      ]),
    );
    // Nothing was written for them: user 1 holds nothing, user 3 holds the one native award
    expect(await f.balance('1')).toBe(0);
    expect((await f.ledger('3')).map((e) => e.msgId)).not.toContainEqual(expect.stringMatching(/^legacy:/));
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/conflicting\s+1\s+another user or other points/);
    expect(table.stdout).toMatch(/invalid\s+t_point_record#\d+\s+SO 1\s+4\s+1\s+orderNo must be printable ASCII/);
  }, 60_000);

  it('--ledger moved: a row past its horizon does not move its award over the record the consumer here wrote for the order', async () => {
    // Prepare: the consumer here awarded SO-OLD-C to user 2 and SO-OLD-N to user 3; the legacy rows are from 2020
    const f = await pointsFixture();
    await awardThroughConsumer(f, [
      { orderNo: 'SO-OLD-C', userId: '2', points: 40 },
      { orderNo: 'SO-OLD-N', userId: '3', points: 30 },
    ]);
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-OLD-C', userId: 1, points: 40, createTime: '2020-07-05 14:22:31' },
      { orderNo: 'SO-OLD-N', userId: 3, points: 30, createTime: '2020-07-05 14:22:32' },
      { orderNo: 'SO-OLD-FREE', userId: 4, points: 4, createTime: '2020-07-05 14:22:33' },
    ]);

    // Act
    const result = await ops(f, await reviewedImport(f, importArgs('moved', '--json')));

    // Assess: the order the consumer gave another user is conflicting, and nothing of it moved
    expect(result.code).toBe(1);
    const report = result.json();
    expect(report.counts).toMatchObject({ read: 3, imported: 1, conflicting: 1, awardedNatively: 1, pastHorizon: 0 });
    expect(report.rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'conflicting',
          orderNo: 'SO-OLD-C',
          userId: '1',
          reason: expect.stringMatching(/other content was written for SO-OLD-C by the consumer \(msgId (?!unknown)/),
        }),
        expect.objectContaining({ kind: 'awarded-natively', orderNo: 'SO-OLD-N' }),
      ]),
    );
    expect(await f.ledger('1')).toEqual([]);
    expect(await f.balance('1')).toBe(0);
    expect(await f.balance('3')).toBe(30);
    expect((await f.ledger('4')).map((e) => e.msgId)).toEqual([expect.stringMatching(/^legacy:t_point_record#\d+$/)]);
    expect(await f.balance('4')).toBe(4);
    // No record for the rows past the horizon: only the consumer's own two
    expect((await recordsOf(f)).map((r) => r.key).sort()).toEqual(['SO-OLD-C', 'SO-OLD-N']);
    expect(await f.ledgerMismatches()).toEqual([]);
  }, 60_000);

  it('--since imports only the rows processed since, reading DATETIMEs in the server’s zone (+08:00)', async () => {
    // Prepare: two rows an hour before the backfill, two a minute after, in Beijing wall-clock time
    const f = await pointsFixture();
    const backfillStart = new Date('2026-11-30T02:00:00Z'); // 10:00 in Beijing
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-OLD1', userId: 1, points: 1, createTime: '2026-11-30 09:00:00' },
      { orderNo: 'SO-OLD2', userId: 1, points: 1, createTime: '2026-11-30 09:59:59' },
      { orderNo: 'SO-NEW1', userId: 1, points: 1, createTime: '2026-11-30 10:00:00' },
      { orderNo: 'SO-NEW2', userId: 1, points: 1, createTime: '2026-11-30 10:01:00' },
    ]);

    // Act
    const delta = await ops(f, [...importArgs('kept', '--since', backfillStart.toISOString(), '--json')]);

    // Assess
    expect(delta.code).toBe(0);
    expect(delta.json().counts).toMatchObject({ read: 2, imported: 2 });
    const records = await recordsOf(f);
    expect(records.map((r) => r.key).sort()).toEqual(['SO-NEW1', 'SO-NEW2']);
    expect(records.find((r) => r.key === 'SO-NEW1')!.createdAt).toBe('2026-11-30T02:00:00.000Z');
  }, 60_000);
});
