import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { awardThroughConsumer, importLegacyAward, ops, reviewedPlan } from '../operations/operations-fixture.ts';
import { insertLegacyAwards, mariaDbForFile, migrateImportArgs, reviewedImport } from './migration-fixture.ts';

/**
 * `ops audit --legacy-source` and `ops reverse --legacy-source` against a real MariaDB: orders the
 * legacy consumer awarded and the consumer here awarded again (no import before the cutover),
 * found per order and compensated in this project's ledger; the legacy store is only read.
 */
const mariaDb = mariaDbForFile();

const legacyState = async () =>
  (await mariaDb.db.query<RowDataPacket[]>('SELECT order_no, user_id, point FROM t_point_record ORDER BY id'))[0];

describe('ops audit / reverse --legacy-source: orders awarded in both systems', () => {
  it('lists every order awarded in both, reverses the awards here (the legacy award stays), and is clean after', async () => {
    // Prepare: the legacy consumer awarded five orders; two moved here by the import; the consumer
    // here awarded three again after the cutover, one of them to another user.
    const f = await pointsFixture();
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-M1', userId: 1, points: 10 },
      { orderNo: 'SO-M2', userId: 2, points: 20 },
      { orderNo: 'SO-D1', userId: 3, points: 30 },
      { orderNo: 'SO-D2', userId: 4, points: 40 },
      { orderNo: 'SO-X1', userId: 5, points: 50 },
    ]);
    await mariaDb.db.query("DELETE FROM t_point_record WHERE order_no NOT IN ('SO-M1', 'SO-M2')");
    expect((await ops(f, await reviewedImport(f, migrateImportArgs(mariaDb.url, 'moved')))).code).toBe(0);
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-D1', userId: 3, points: 30 },
      { orderNo: 'SO-D2', userId: 4, points: 40 },
      { orderNo: 'SO-X1', userId: 5, points: 50 },
    ]);
    await awardThroughConsumer(f, [
      { orderNo: 'SO-D1', userId: '3', points: 30 },
      { orderNo: 'SO-D2', userId: '4', points: 40 },
      { orderNo: 'SO-X1', userId: '6', points: 50 },
      { orderNo: 'SO-NEW', userId: '7', points: 70 },
    ]);
    const legacyBefore = await legacyState();
    const legacy = ['--legacy-source', mariaDb.url];

    // Act
    const audit = await ops(f, ['audit', ...legacy, '--json']);
    const auditTable = await ops(f, ['audit', ...legacy]);
    const plan = await reviewedPlan(f, [...legacy, '--rightful', 'SO-X1=5']);
    const withoutLegacy = await ops(f, ['reverse', '--apply', '--plan', plan, '--yes']);
    const applied = await ops(f, ['reverse', ...legacy, '--apply', '--plan', plan, '--yes', '--json']);
    const after = await ops(f, ['audit', ...legacy, '--json']);

    // Assess: found, with the moved awards counted once
    expect(audit.code).toBe(1);
    const cross = audit.json().crossSystem;
    expect(cross).toMatchObject({ legacyRows: 5, moved: 2, compensated: 0 });
    expect(cross.inBothSystems.map((c: { orderNo: string; sameUser: boolean }) => [c.orderNo, c.sameUser])).toEqual([
      ['SO-D1', true],
      ['SO-D2', true],
      ['SO-X1', false],
    ]);
    expect(auditTable.stdout).toMatch(
      /Orders awarded in both systems \(3: 2 to the same user, 1 to another user here\)/,
    );
    // Assess: the plan is tied to the legacy store it was made against
    expect(withoutLegacy.code).toBe(2);
    expect(withoutLegacy.stderr).toMatch(/the plan was made against the legacy store MySQL table t_point_record/);
    // Assess: the awards here were reversed in this ledger, the legacy awards kept
    expect(applied.code).toBe(0);
    expect(
      applied
        .json()
        .outcomes.map((o: { userId: string; reversedEntryId: string; keptEntryId: string; status: string }) => [
          o.userId,
          o.reversedEntryId,
          o.keptEntryId.replace(/#\d+$/, '#n'),
          o.status,
        ]),
    ).toEqual([
      ['3', 'AWARD#SO-D1', 'LEGACY#t_point_record#n', 'written'],
      ['4', 'AWARD#SO-D2', 'LEGACY#t_point_record#n', 'written'],
      ['6', 'AWARD#SO-X1', 'LEGACY#t_point_record#n', 'written'],
    ]);
    expect(await f.balance('3')).toBe(0);
    expect(await f.balance('6')).toBe(0);
    expect(await f.balance('1')).toBe(10);
    expect(await f.balance('7')).toBe(70);
    expect(after.code).toBe(0);
    expect(after.json().crossSystem.inBothSystems).toEqual([]);
    // Assess: the legacy store was only read
    expect(await legacyState()).toEqual(legacyBefore);
  }, 120_000);

  it('compensates the legacy award in this ledger when the rightful user is the one here', async () => {
    // Prepare
    const f = await pointsFixture();
    await mariaDb.db.query('TRUNCATE t_point_record');
    await insertLegacyAwards(mariaDb.db, [{ orderNo: 'SO-Y1', userId: 8, points: 80 }]);
    await awardThroughConsumer(f, [{ orderNo: 'SO-Y1', userId: '9', points: 80 }]);
    const legacy = ['--legacy-source', mariaDb.url];

    // Act
    const undecided = await ops(f, ['reverse', ...legacy]);
    const plan = await reviewedPlan(f, [...legacy, '--rightful', 'SO-Y1=9']);
    const applied = await ops(f, ['reverse', ...legacy, '--apply', '--plan', plan, '--yes', '--json']);
    const after = await ops(f, ['audit', ...legacy, '--json']);

    // Assess
    expect(undecided.code).toBe(1);
    expect(undecided.stdout).toMatch(/Not reversed, awarded to 8, 9: SO-Y1/);
    expect(applied.json().outcomes).toEqual([
      expect.objectContaining({ userId: '8', reversedEntryId: expect.stringMatching(/^LEGACY#/), status: 'written' }),
    ]);
    expect(await f.balance('8')).toBe(-80);
    expect(await f.balance('9')).toBe(80);
    expect(after.json()).toMatchObject({ clean: true, crossSystem: { compensated: 1, inBothSystems: [] } });
  }, 60_000);

  it('reversing a moved legacy award for another user reverses its entry here: both audits clean, a second reverse finds nothing', async () => {
    // Prepare: the import moved SO-Z (user 1) into this ledger; the order was awarded here to user 2 as well
    const f = await pointsFixture();
    await mariaDb.db.query('TRUNCATE t_point_record');
    await insertLegacyAwards(mariaDb.db, [{ orderNo: 'SO-Z', userId: 1, points: 10 }]);
    expect((await ops(f, await reviewedImport(f, migrateImportArgs(mariaDb.url, 'moved')))).code).toBe(0);
    await importLegacyAward(f, {
      userId: '2',
      orderNo: 'SO-Z',
      points: 10,
      entryId: 'AWARD#SO-Z',
      createdAt: new Date().toISOString(),
    });
    const legacy = ['--legacy-source', mariaDb.url];

    // Act: the rightful user is the one here
    const plan = await reviewedPlan(f, [...legacy, '--rightful', 'SO-Z=2']);
    const applied = await ops(f, ['reverse', ...legacy, '--apply', '--plan', plan, '--yes', '--json']);
    const ledgerAudit = await ops(f, ['audit', '--json']);
    const crossAudit = await ops(f, ['audit', ...legacy, '--json']);
    const again = await ops(f, ['reverse', '--rightful', 'SO-Z=2', '--json']);

    // Assess: the moved entry itself was reversed; user 1 debited once
    expect(applied.code).toBe(0);
    expect(applied.json().outcomes).toEqual([
      expect.objectContaining({ userId: '1', reversedEntryId: 'AWARD#SO-Z', status: 'written' }),
    ]);
    expect(await f.balance('1')).toBe(0);
    expect(await f.balance('2')).toBe(10);
    expect(ledgerAudit.code).toBe(0);
    expect(crossAudit.json()).toMatchObject({ clean: true, crossSystem: { compensated: 1, inBothSystems: [] } });
    expect(again.code).toBe(0);
    expect(again.json().outcomes).toEqual([]);
    expect(await f.balance('1')).toBe(0);
  }, 60_000);
});
