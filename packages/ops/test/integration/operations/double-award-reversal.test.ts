import { readFile, writeFile } from 'node:fs/promises';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { reverseDoubleAwards, runLedgerAudit } from '../../../src/operations/index.ts';
import {
  awardThroughConsumer,
  failNthTransaction,
  importLegacyAward,
  loseNthTransactionAnswer,
  ops,
  type PointsFixture,
  reverseByHand,
  reviewedPlan,
  terminalAnswering,
} from './operations-fixture.ts';

/** Three excess awards: u-1's SO-1001 imported twice more, u-2's SO-2001 once more. */
async function incidentLedger() {
  const f = await pointsFixture();
  await awardThroughConsumer(f, [
    { orderNo: 'SO-1001', userId: 'u-1', points: 300 },
    { orderNo: 'SO-1002', userId: 'u-1', points: 120 },
    { orderNo: 'SO-2001', userId: 'u-2', points: 50 },
  ]);
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
  await importLegacyAward(f, {
    userId: 'u-2',
    orderNo: 'SO-2001',
    points: 50,
    entryId: 'IMPORT#0003',
    createdAt: '2099-01-01T00:00:00.000Z',
  });
  return f;
}

async function snapshot(f: PointsFixture) {
  return {
    u1: await f.ledger('u-1'),
    u2: await f.ledger('u-2'),
    b1: await f.balance('u-1'),
    b2: await f.balance('u-2'),
  };
}

const reversalsOf = <E extends { kind: string }>(entries: E[]) => entries.filter((e) => e.kind === 'REVERSAL');
/** Applies a reviewed plan, confirmed in advance as a script would. */
const applyPlan = (plan: string) => ['reverse', '--apply', '--plan', plan, '--yes'];

describe('ops reverse (emulator)', () => {
  it('dry run by default: reports what would be reversed, writes nothing, exits 1', async () => {
    // Prepare
    const f = await incidentLedger();
    const before = await snapshot(f);
    // Act
    const run = await ops(f, ['reverse', '--json']);
    // Assess
    expect(run.code).toBe(1);
    const report = run.json();
    expect(report.applied).toBe(false);
    expect(
      report.outcomes.map((o: { reversedEntryId: string; status: string }) => [o.reversedEntryId, o.status]),
    ).toEqual([
      ['IMPORT#0001', 'planned'],
      ['IMPORT#0002', 'planned'],
      ['IMPORT#0003', 'planned'],
    ]);
    expect(report.perUser).toEqual([
      { userId: 'u-1', reversals: 2, points: 600 },
      { userId: 'u-2', reversals: 1, points: 50 },
    ]);
    expect(await snapshot(f)).toEqual(before);
  });

  it('--apply writes one reversal per excess award, fixes the balances, and the audit is clean afterwards', async () => {
    const f = await incidentLedger();
    const run = await ops(f, applyPlan(await reviewedPlan(f)));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('3 award(s) reversed: 650 points across 2 user(s).');
    expect(await f.balance('u-1')).toBe(420); // 300 + 120, as if awarded once
    expect(await f.balance('u-2')).toBe(50);
    expect(reversalsOf(await f.ledger('u-1'))).toEqual([
      expect.objectContaining({
        entryId: 'REVERSAL#IMPORT#0001',
        kind: 'REVERSAL',
        points: -300,
        reverses: 'IMPORT#0001',
        orderNo: 'SO-1001',
        keptEntryId: 'AWARD#SO-1001',
      }),
      expect.objectContaining({
        entryId: 'REVERSAL#IMPORT#0002',
        kind: 'REVERSAL',
        points: -300,
        reverses: 'IMPORT#0002',
      }),
    ]);
    const audit = await ops(f, ['audit', '--json']);
    expect(audit.code).toBe(0);
    expect(audit.json().clean).toBe(true);
  });

  it('a re-run after apply writes nothing more', async () => {
    const f = await incidentLedger();
    const plan = await reviewedPlan(f);
    await ops(f, applyPlan(plan));
    const after = await snapshot(f);
    const rerun = await ops(f, [...applyPlan(plan), '--json']);
    expect(rerun.code).toBe(0);
    expect(rerun.json().outcomes).toEqual([]);
    expect(await snapshot(f)).toEqual(after);
  });

  it('a crash on the 2nd transaction stops the run (exit 2); the re-run finishes it and nothing is reversed twice', async () => {
    // Prepare: the SDK client fails the 2nd TransactWriteItems before it reaches DynamoDB
    const f = await incidentLedger();
    const crashing = createDynamoDb({ ...emulatorConfig(f.resources.endpoint), maxAttempts: 1 });
    failNthTransaction(crashing, 2);
    const plan = await reviewedPlan(f);
    // Act
    const crashed = await ops(f, [...applyPlan(plan), '--json'], { dynamoDb: crashing });
    const midway = await snapshot(f);
    const rerun = await ops(f, [...applyPlan(plan), '--json']);
    // Assess
    expect(crashed.code).toBe(2);
    expect(crashed.stderr).toMatch(/interrupted after 1 written reversal\(s\), 2 not done: NetworkingError/);
    expect(crashed.json().outcomes.map((o: { status: string }) => o.status)).toEqual(['written']);
    expect(reversalsOf([...midway.u1, ...midway.u2])).toHaveLength(1);
    expect(midway.b1).toBe(420 + 300);
    expect(rerun.code).toBe(0);
    expect(
      rerun.json().outcomes.map((o: { reversedEntryId: string; status: string }) => [o.reversedEntryId, o.status]),
    ).toEqual([
      ['IMPORT#0002', 'written'],
      ['IMPORT#0003', 'written'],
    ]);
    const end = await snapshot(f);
    expect(
      reversalsOf([...end.u1, ...end.u2])
        .map((e) => e.entryId)
        .sort(),
    ).toEqual(['REVERSAL#IMPORT#0001', 'REVERSAL#IMPORT#0002', 'REVERSAL#IMPORT#0003']);
    expect([end.b1, end.b2]).toEqual([420, 50]);
    expect((await ops(f, ['audit'])).code).toBe(0);
  });

  it('a reversal whose answer was lost after commit is not written again by the re-run', async () => {
    const f = await incidentLedger();
    const flaky = createDynamoDb({ ...emulatorConfig(f.resources.endpoint), maxAttempts: 1 });
    loseNthTransactionAnswer(flaky, 1);
    const plan = await reviewedPlan(f);
    const lost = await ops(f, [...applyPlan(plan), '--json'], { dynamoDb: flaky });
    const rerun = await ops(f, [...applyPlan(plan), '--json']);
    expect(lost.code).toBe(2);
    expect(rerun.code).toBe(0);
    expect(rerun.json().outcomes.map((o: { reversedEntryId: string }) => o.reversedEntryId)).toEqual([
      'IMPORT#0002',
      'IMPORT#0003',
    ]);
    expect([await f.balance('u-1'), await f.balance('u-2')]).toEqual([420, 50]);
    expect(reversalsOf(await f.ledger('u-1'))).toHaveLength(2);
  });

  it('two runs working from the same audit (a concurrent run) cannot reverse an award twice', async () => {
    const f = await incidentLedger();
    const tables = { ledger: f.resources.tables.ledger, accounts: f.resources.tables.accounts };
    const audit = await runLedgerAudit({ dynamoDb: f.dynamoDb, tables });
    const first = await reverseDoubleAwards({
      dynamoDb: f.dynamoDb,
      tables,
      doubleAwards: audit.doubleAwards,
      apply: true,
    });
    const second = await reverseDoubleAwards({
      dynamoDb: f.dynamoDb,
      tables,
      doubleAwards: audit.doubleAwards,
      apply: true,
    });
    expect(first.outcomes.map((o) => o.status)).toEqual(['written', 'written', 'written']);
    expect(second.outcomes.map((o) => o.status)).toEqual(['already-reversed', 'already-reversed', 'already-reversed']);
    expect(second.perUser).toEqual([]);
    expect([await f.balance('u-1'), await f.balance('u-2')]).toEqual([420, 50]);
  });

  it('a group already partly reversed is reversed only for what remains, never below one award', async () => {
    const f = await incidentLedger();
    // Prepare: someone already reversed IMPORT#0001 by hand (with the balance)
    await reverseByHand(f, { userId: 'u-1', orderNo: 'SO-1001', reverses: 'IMPORT#0001', points: 300 });
    const run = await ops(f, [...applyPlan(await reviewedPlan(f)), '--json']);
    expect(run.code).toBe(0);
    expect(
      run
        .json()
        .outcomes.filter((o: { userId: string }) => o.userId === 'u-1')
        .map((o: { reversedEntryId: string }) => o.reversedEntryId),
    ).toEqual(['IMPORT#0002']);
    expect(await f.balance('u-1')).toBe(420);
    expect((await ops(f, ['audit'])).code).toBe(0);
  });

  it('leaves an award changed since the audit alone and says so (exit 1)', async () => {
    const f = await incidentLedger();
    const tables = { ledger: f.resources.tables.ledger, accounts: f.resources.tables.accounts };
    const audit = await runLedgerAudit({ dynamoDb: f.dynamoDb, tables });
    await f.dynamoDb.send(
      new PutCommand({
        TableName: tables.ledger,
        Item: { userId: 'u-2', entryId: 'IMPORT#0003', kind: 'AWARD', orderNo: 'SO-2001', points: 500 },
      }),
    );
    const report = await reverseDoubleAwards({
      dynamoDb: f.dynamoDb,
      tables,
      doubleAwards: audit.doubleAwards,
      apply: true,
    });
    expect(report.outcomes.map((o) => [o.reversedEntryId, o.status])).toEqual([
      ['IMPORT#0001', 'written'],
      ['IMPORT#0002', 'written'],
      ['IMPORT#0003', 'award-changed'],
    ]);
    expect(await f.balance('u-2')).toBe(100); // untouched by the run
  });
});

describe('ops reverse --apply writes only what was reviewed and confirmed (emulator)', () => {
  it('refuses --apply without a plan, and --rightful next to one', async () => {
    // Prepare
    const f = await incidentLedger();
    const before = await snapshot(f);
    // Act
    const bare = await ops(f, ['reverse', '--apply', '--yes']);
    const rightful = await ops(f, [...applyPlan(await reviewedPlan(f)), '--rightful', 'SO-1001=u-1']);
    // Assess
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('reverse --apply writes only a reviewed plan: run reverse --plan <file>');
    expect(rightful.code).toBe(2);
    expect(rightful.stderr).toContain('the --rightful choices come from the plan');
    expect(await snapshot(f)).toEqual(before);
  });

  it('the dry run saves the plan with its digest; the apply run shows the same digest', async () => {
    const f = await incidentLedger();
    const plan = await reviewedPlan(f);
    const saved = JSON.parse(await readFile(plan, 'utf8'));
    const dryRun = await ops(f, ['reverse', '--plan', plan]);
    const run = await ops(f, applyPlan(plan));
    expect(saved.reversals.map((r: { reversedEntryId: string }) => r.reversedEntryId)).toEqual([
      'IMPORT#0001',
      'IMPORT#0002',
      'IMPORT#0003',
    ]);
    expect(saved.ledgerTableArn).toBe(`arn:aws:dynamodb:us-east-1:123456789012:table/${f.resources.tables.ledger}`);
    expect(dryRun.stdout).toContain(`Plan ${saved.digest} saved to ${plan}.`);
    expect(run.stderr).toContain(
      `3 reversal(s) of the reviewed plan ${saved.digest}: 650 points taken back from 2 user(s)`,
    );
  });

  it('refuses, writing nothing, when the ledger calls for a reversal the plan does not hold', async () => {
    // Prepare: reviewed, then one more legacy duplicate arrives
    const f = await incidentLedger();
    const plan = await reviewedPlan(f);
    await importLegacyAward(f, {
      userId: 'u-1',
      orderNo: 'SO-1002',
      points: 120,
      entryId: 'IMPORT#0004',
      createdAt: '2099-01-03T00:00:00.000Z',
    });
    const before = await snapshot(f);
    // Act
    const run = await ops(f, applyPlan(plan));
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'the ledger changed since the plan was reviewed: 1 reversal(s) not in it, e.g. u-1/IMPORT#0004 (120 points, DOUBLE_AWARD)',
    );
    expect(await snapshot(f)).toEqual(before);
  });

  it('refuses a plan made for another deployment, and a plan edited after the dry run', async () => {
    // Prepare
    const f = await incidentLedger();
    const other = await incidentLedger();
    const plan = await reviewedPlan(other);
    const edited = await reviewedPlan(f);
    const content = JSON.parse(await readFile(edited, 'utf8'));
    content.reversals[0].points = 1;
    await writeFile(edited, JSON.stringify(content));
    const before = await snapshot(f);
    // Act
    const elsewhere = await ops(f, applyPlan(plan));
    const tampered = await ops(f, applyPlan(edited));
    // Assess
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(
      `the plan was made for arn:aws:dynamodb:us-east-1:123456789012:table/${other.resources.tables.ledger}`,
    );
    expect(tampered.code).toBe(2);
    expect(tampered.stderr).toContain('was edited after the dry run wrote it');
    expect(await snapshot(f)).toEqual(before);
  });

  it('shows account, region and tables first, and without a terminal writes nothing unless --yes', async () => {
    // Prepare
    const f = await incidentLedger();
    const plan = await reviewedPlan(f);
    const before = await snapshot(f);
    // Act
    const run = await ops(f, ['reverse', '--apply', '--plan', plan]);
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('About to write in AWS account 123456789012, region us-east-1:');
    expect(run.stderr).toMatch(new RegExp(`ledger table: +${f.resources.tables.ledger}\n`));
    expect(run.stderr).toMatch(new RegExp(`accounts table: +${f.resources.tables.accounts}\n`));
    expect(run.stderr).toContain('standard input is not a terminal; add --yes to confirm in a script');
    expect(await snapshot(f)).toEqual(before);
  });

  it('asks on a terminal: anything but y writes nothing, y writes', async () => {
    // Prepare
    const f = await incidentLedger();
    const plan = await reviewedPlan(f);
    const before = await snapshot(f);
    // Act
    const declined = await ops(f, ['reverse', '--apply', '--plan', plan], { stdin: terminalAnswering('') });
    const afterDecline = await snapshot(f);
    const accepted = await ops(f, ['reverse', '--apply', '--plan', plan], { stdin: terminalAnswering('y') });
    // Assess
    expect(declined.code).toBe(2);
    expect(declined.stderr).toContain('Proceed? [y/N] ');
    expect(declined.stderr).toContain('not confirmed, nothing written');
    expect(afterDecline).toEqual(before);
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain('3 award(s) reversed: 650 points across 2 user(s).');
    expect([await f.balance('u-1'), await f.balance('u-2')]).toEqual([420, 50]);
  });
});
