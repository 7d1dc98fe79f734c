import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { awardThroughConsumer, importLegacyAward, ops } from '../operations/operations-fixture.ts';
import { insertLegacyAwards, mariaDbForFile } from './migration-fixture.ts';

/**
 * `ops compare` on a shadow stage: the points consumer here awarded a copy of the live traffic the
 * legacy consumer (a real MariaDB with the article's table) awarded too, with disagreements planted
 * on both sides; the comparison must find each one, and only those.
 */
const mariaDb = mariaDbForFile();

describe('ops compare --legacy-source: a shadow stage against the legacy consumer, per order', () => {
  it('finds every planted disagreement, judges only orders inside the window, and agrees on the rest', async () => {
    // Prepare: the shadow started a minute ago; the legacy consumer awarded before and since
    const f = await pointsFixture();
    const since = new Date(Date.now() - 60_000).toISOString();
    await mariaDb.db.query(
      "INSERT INTO t_point_record (order_no, user_id, point, create_time) VALUES ('SO-BEFORE', 9, 90, NOW() - INTERVAL 1 HOUR)",
    );
    await insertLegacyAwards(mariaDb.db, [
      { orderNo: 'SO-SAME-1', userId: 1, points: 10 },
      { orderNo: 'SO-SAME-2', userId: 2, points: 20 },
      { orderNo: 'SO-POINTS', userId: 3, points: 30 },
      { orderNo: 'SO-USER', userId: 4, points: 40 },
      { orderNo: 'SO-MISSING', userId: 5, points: 50 },
      { orderNo: 'SO-TWICE', userId: 6, points: 60 },
    ]);
    // The shadow's consumer, on its own copy of the traffic: other points for one order, another user for
    // another, one order not (yet) consumed, one the legacy consumer never awarded
    await awardThroughConsumer(f, [
      { orderNo: 'SO-SAME-1', userId: '1', points: 10 },
      { orderNo: 'SO-SAME-2', userId: '2', points: 20 },
      { orderNo: 'SO-POINTS', userId: '3', points: 35 },
      { orderNo: 'SO-USER', userId: '44', points: 40 },
      { orderNo: 'SO-TWICE', userId: '6', points: 60 },
      { orderNo: 'SO-EXTRA', userId: '7', points: 70 },
    ]);
    // …and the incident's double award, planted in the shadow's ledger
    await importLegacyAward(f, {
      userId: '6',
      orderNo: 'SO-TWICE',
      points: 60,
      entryId: 'AWARD#SO-TWICE#again',
      createdAt: new Date().toISOString(),
    });
    const compare = ['compare', '--legacy-source', mariaDb.url, '--since', since];

    // Act
    const judged = await ops(f, [...compare, '--settle', '0s', '--json']);
    const table = await ops(f, [...compare, '--settle', '0s']);
    const settling = await ops(f, [...compare, '--json']);

    // Assess: each planted disagreement, by kind; the agreeing orders counted, the order before the window left out
    expect(judged.code).toBe(1);
    const report = judged.json();
    expect(
      report.disagreements.map((d: { orderNo: string; kind: string; here: { userId: string; points: number }[] }) => [
        d.orderNo,
        d.kind,
        d.here.map((h) => `${h.userId}:${h.points}`).join(' '),
      ]),
    ).toEqual([
      ['SO-EXTRA', 'not-awarded-by-legacy', '7:70'],
      ['SO-MISSING', 'not-awarded-here', ''],
      ['SO-POINTS', 'other-points', '3:35'],
      ['SO-TWICE', 'awarded-twice-here', '6:60 6:60'],
      ['SO-USER', 'other-user', '44:40'],
    ]);
    expect(report).toMatchObject({ legacyAwards: 6, legacyInvalid: 0, ordersHere: 6, agreeing: 2 });
    expect(report.disagreements.find((d: { orderNo: string }) => d.orderNo === 'SO-POINTS').legacy).toMatchObject({
      userId: '3',
      points: 30,
    });
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/6 by the legacy consumer \(0 invalid rows\), 6 here; 2 agree\./);
    expect(table.stdout).toMatch(/Disagreements \(5\):/);
    expect(table.stdout).toMatch(/SO-USER\s+other-user\s+t_point_record#\d+ 4:40/);
    // Assess: with the default settling time every order is too young to judge yet
    expect(settling.code).toBe(0);
    expect(settling.json()).toMatchObject({ legacyAwards: 0, ordersHere: 0, disagreements: [] });
  }, 120_000);

  it('does not judge an order the legacy consumer awarded just before the shadow started, whose copy the shadow awarded just after', async () => {
    // Prepare: the shadow started a minute ago; SO-EDGE was awarded by the legacy consumer a second
    // before, and its copy reached the shadow after its start; SO-IN was awarded inside the window on both sides
    const f = await pointsFixture();
    await mariaDb.db.query('TRUNCATE t_point_record');
    const since = new Date(Date.now() - 60_000).toISOString();
    await mariaDb.db.query(
      "INSERT INTO t_point_record (order_no, user_id, point, create_time) VALUES ('SO-EDGE', 1, 10, NOW() - INTERVAL 61 SECOND)",
    );
    await insertLegacyAwards(mariaDb.db, [{ orderNo: 'SO-IN', userId: 2, points: 20 }]);
    await awardThroughConsumer(f, [
      { orderNo: 'SO-EDGE', userId: '1', points: 10 },
      { orderNo: 'SO-IN', userId: '2', points: 20 },
    ]);

    // Act
    const judged = await ops(f, [
      'compare',
      '--legacy-source',
      mariaDb.url,
      '--since',
      since,
      '--settle',
      '0s',
      '--json',
    ]);

    // Assess: SO-EDGE was first awarded before the window: not judged, on either side
    expect(judged.code).toBe(0);
    expect(judged.json()).toMatchObject({ legacyAwards: 1, ordersHere: 1, agreeing: 1, disagreements: [] });
  }, 60_000);

  it('refuses a store of keys only, and a comparison without the shadow’s start', async () => {
    // Prepare
    const f = await pointsFixture();

    // Act
    const keysOnly = await ops(f, [
      'compare',
      '--legacy-source',
      'redis://127.0.0.1:1/0',
      '--since',
      '2026-12-01T00:00:00Z',
    ]);
    const noStart = await ops(f, ['compare', '--legacy-source', mariaDb.url]);

    // Assess
    expect(keysOnly.code).toBe(2);
    expect(keysOnly.stderr).toContain('compare: a Redis key carries no user, points or time');
    expect(noStart.code).toBe(2);
    expect(noStart.stderr).toContain('compare: --since <time> the shadow stage started consuming');
  }, 60_000);
});
