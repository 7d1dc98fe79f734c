import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { auditLedger } from '../../../src/operations/index.ts';
import { awardThroughConsumer, importLegacyAward, ops, setBalance } from './operations-fixture.ts';

const ORDERS = [
  { orderNo: 'SO-1001', userId: 'u-1', points: 300 },
  { orderNo: 'SO-1002', userId: 'u-1', points: 120 },
  { orderNo: 'SO-2001', userId: 'u-2', points: 50 },
];

describe('ops audit (emulator)', () => {
  it('reports a ledger written by the consumer as clean and exits 0', async () => {
    // Prepare
    const f = await pointsFixture();
    await awardThroughConsumer(f, ORDERS);
    // Act
    const run = await ops(f, ['audit', '--json']);
    // Assess
    expect(run.code).toBe(0);
    expect(run.json()).toMatchObject({
      clean: true,
      ledgerEntries: 3,
      accounts: 2,
      users: 2,
      balanceMismatches: [],
      doubleAwards: [],
    });
    expect(run.stderr).toBe(''); // not a terminal: no progress bar
  });

  it('finds legacy duplicates written without the unique key, keeps the earliest, exits 1', async () => {
    const f = await pointsFixture();
    await awardThroughConsumer(f, ORDERS);
    const consumerRow = (await f.ledger('u-1')).find((e) => e.orderNo === 'SO-1001')!;
    await importLegacyAward(f, {
      userId: 'u-1',
      orderNo: 'SO-1001',
      points: 300,
      entryId: 'IMPORT#0001',
      createdAt: '2099-01-01T00:00:00.000Z',
    });
    await importLegacyAward(f, {
      userId: 'u-1',
      orderNo: 'SO-1001',
      points: 300,
      entryId: 'IMPORT#0002',
      createdAt: '2099-01-02T00:00:00.000Z',
    });
    const run = await ops(f, ['audit', '--json']);
    expect(run.code).toBe(1);
    const report = run.json();
    expect(report.balanceMismatches).toEqual([]); // the importer raised the balance with each row
    expect(report.doubleAwards).toHaveLength(1);
    expect(report.doubleAwards[0]).toMatchObject({
      userId: 'u-1',
      orderNo: 'SO-1001',
      kept: { entryId: consumerRow.entryId },
      excess: [{ entryId: 'IMPORT#0001' }, { entryId: 'IMPORT#0002' }],
      excessPoints: 600,
      pointsDiffer: false,
    });
  });

  it('finds a tampered balance, in the table and CSV formats too', async () => {
    const f = await pointsFixture();
    await awardThroughConsumer(f, ORDERS);
    await setBalance(f, 'u-2', 5050);
    const json = await ops(f, ['audit', '--json']);
    const table = await ops(f, ['audit']);
    const csv = await ops(f, ['audit', '--csv']);
    expect(json.code).toBe(1);
    expect(json.json().balanceMismatches).toEqual([
      { userId: 'u-2', balance: 5050, ledgerSum: 50, difference: 5000, ledgerEntries: 1 },
    ]);
    expect(json.json().doubleAwards).toEqual([]);
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/u-2\s+5050\s+50\s+\+5000\s+1/);
    expect(csv.stdout.trimEnd().split('\n')).toEqual([
      'finding,userId,orderNo,balance,ledgerSum,difference,entries,awardsInForce,keptEntryId,excessEntryIds,excessPoints,note',
      'balance-mismatch,u-2,,5050,50,5000,1,,,,,',
    ]);
  });

  it('counts reversals: two awards and one reversal of an order is clean', async () => {
    const f = await pointsFixture();
    await awardThroughConsumer(f, ORDERS);
    await importLegacyAward(f, {
      userId: 'u-2',
      orderNo: 'SO-2001',
      points: 50,
      entryId: 'IMPORT#0009',
      createdAt: '2099-01-01T00:00:00.000Z',
    });
    await f.dynamoDb.send(
      new PutCommand({
        TableName: f.resources.tables.ledger,
        Item: {
          userId: 'u-2',
          entryId: 'REVERSAL#IMPORT#0009',
          kind: 'REVERSAL',
          orderNo: 'SO-2001',
          points: -50,
          reverses: 'IMPORT#0009',
          createdAt: '2099-01-03T00:00:00.000Z',
        },
      }),
    );
    await setBalance(f, 'u-2', 50);
    const run = await ops(f, ['audit', '--json']);
    expect(run.code).toBe(0);
    expect(run.json()).toMatchObject({ clean: true, ledgerEntries: 5 });
  });

  it('exits 2 with a message when the tables do not exist', async () => {
    const f = await pointsFixture();
    const run = await ops(f, ['audit', '--ledger-table', 'no-such-ledger', '--accounts-table', 'no-such-accounts']);
    expect(run.code).toBe(2);
    // Names the tables it looked for, not the SDK's exception (issue 35: a wrong prefix says what was missing).
    expect(run.stderr).toMatch(/tables no-such-ledger, no-such-accounts not found/);
  });
});

describe('auditLedger rules', () => {
  it('flags a user with ledger entries but no account, and an account with no ledger', () => {
    const report = auditLedger(
      [{ userId: 'a', entryId: 'AWARD#1', kind: 'AWARD', orderNo: '1', points: 10 }],
      [{ userId: 'b', balance: 7 }],
    );
    expect(report.balanceMismatches).toEqual([
      { userId: 'a', balance: null, ledgerSum: 10, difference: -10, ledgerEntries: 1 },
      { userId: 'b', balance: 7, ledgerSum: 0, difference: 7, ledgerEntries: 0 },
    ]);
  });

  it('keeps the earliest award still in force when the earliest was reversed by hand', () => {
    const report = auditLedger(
      [
        { userId: 'a', entryId: 'AWARD#1', kind: 'AWARD', orderNo: '1', points: 10, createdAt: '2020-01-01T00:00:00Z' },
        { userId: 'a', entryId: 'IMP#1', kind: 'AWARD', orderNo: '1', points: 10, createdAt: '2020-01-02T00:00:00Z' },
        { userId: 'a', entryId: 'IMP#2', kind: 'AWARD', orderNo: '1', points: 10, createdAt: '2020-01-03T00:00:00Z' },
        { userId: 'a', entryId: 'REVERSAL#AWARD#1', kind: 'REVERSAL', orderNo: '1', points: -10, reverses: 'AWARD#1' },
      ],
      [{ userId: 'a', balance: 20 }],
    );
    expect(report.balanceMismatches).toEqual([]);
    expect(report.doubleAwards).toHaveLength(1);
    expect(report.doubleAwards[0]!.kept.entryId).toBe('IMP#1');
    expect(report.doubleAwards[0]!.excess.map((a) => a.entryId)).toEqual(['IMP#2']);
  });

  it('orders by entry id when createdAt ties, and puts rows without createdAt last', () => {
    const report = auditLedger(
      [
        { userId: 'a', entryId: 'B', kind: 'AWARD', orderNo: '1', points: 5 },
        { userId: 'a', entryId: 'Z', kind: 'AWARD', orderNo: '1', points: 5, createdAt: '2020-01-01T00:00:00Z' },
        { userId: 'a', entryId: 'Y', kind: 'AWARD', orderNo: '1', points: 5, createdAt: '2020-01-01T00:00:00Z' },
      ],
      [{ userId: 'a', balance: 15 }],
    );
    expect(report.doubleAwards[0]!.kept.entryId).toBe('Y');
    expect(report.doubleAwards[0]!.excess.map((a) => a.entryId)).toEqual(['Z', 'B']);
  });
});
