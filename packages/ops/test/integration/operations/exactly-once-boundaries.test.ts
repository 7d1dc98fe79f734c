import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { reverseDoubleAwards, runLedgerAudit } from '../../../src/operations/index.ts';
import { awardThroughConsumer, importLegacyAward, ops, reviewedPlan } from './operations-fixture.ts';

const GROUP = ['--group', 'point-consumer-group'];
const DAY_MS = 86_400_000;

/**
 * The incident's failure class, recreated by our own tooling: SO-X is awarded to user A, the
 * same order for user B is dead-lettered as a conflict, and on day 8 (past the old 7-day
 * record TTL, inside the 14-day DLQ retention) an operator redrives the DLQ.
 */
describe('an order is never awarded twice, to anyone, for as long as a copy can exist', () => {
  it('conflict → DLQ → clock past the old TTL → ops dlq redrive → no second award', async () => {
    // Prepare: the consumer and the command share one clock
    let clock = Date.now();
    const now = () => clock;
    const f = await pointsFixture({ now });
    const opsAt = (argv: string[]) => ops(f, argv, { now: () => new Date(clock) } as never);
    await f.invoke([orderEnvelope({ orderNo: 'SO-X', userId: 'A', points: 300 })]);
    await f.invoke([orderEnvelope({ orderNo: 'SO-X', userId: 'B', points: 300 })]);
    expect(f.reports[1]!.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    clock += 8 * DAY_MS;

    // Act 1: the runbook's old advice, move everything back
    const everything = await opsAt(['dlq', 'redrive', ...GROUP, '--all', '--yes']);
    // Assess 1: the conflict is held back with its reason and stays in the DLQ
    expect(everything.code).toBe(1);
    expect(everything.stdout).toContain('1 matched the filter: 0 to send back, 1 held back.');
    expect(everything.stdout).toContain('Held back 1 of them; they stay in the DLQ:');
    expect(everything.stdout).toContain('PAYLOAD_CONFLICT: this order was already consumed with other content');
    expect(everything.stdout).toContain('Moved 0 message(s) back to the source queue.');

    // Act 2: the conflict named explicitly is redriven; the consumer judges it on day 8
    const named = await opsAt(['dlq', 'redrive', ...GROUP, '--reason', 'PAYLOAD_CONFLICT', '--yes']);
    await f.drain();
    // Assess 2: the 30-day record is still there: a conflict again, B gets nothing
    expect(named.code).toBe(0);
    expect(named.stdout).toContain('Moved 1 message(s) back to the source queue.');
    expect(f.reports[2]).toMatchObject({
      attempt: 1,
      settlement: { outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } },
    });
    expect(await f.balance('A')).toBe(300);
    expect(await f.balance('B')).toBe(0);
    expect((await opsAt(['audit'])).code).toBe(0);

    // Act 3: day 31, past the record TTL: even named, the letter is past the redrive horizon
    clock += 23 * DAY_MS;
    const late = await opsAt(['dlq', 'redrive', ...GROUP, '--reason', 'PAYLOAD_CONFLICT', '--json', '--yes']);
    // Assess 3
    expect(late.code).toBe(1);
    expect(late.json().moved).toBe(0);
    expect(late.json().heldBack[0].why).toMatch(
      /^first delivered 74[34]h ago, past the redrive horizon of 614h \(record TTL minus a retry window and the source queue's retention\)/,
    );
    const forced = await opsAt([
      'dlq',
      'redrive',
      ...GROUP,
      '--reason',
      'PAYLOAD_CONFLICT',
      '--force',
      '--dry-run',
      '--json',
    ]);
    expect(forced.json().selected).toHaveLength(1);
    expect(await f.balance('B')).toBe(0);
  });

  it('ops audit reports an order awarded to two users; ops reverse compensates it only with an explicit rightful user', async () => {
    // Prepare: A was awarded SO-Y by the consumer; an old path awarded B the same order
    const f = await pointsFixture();
    await awardThroughConsumer(f, [{ orderNo: 'SO-Y', userId: 'A', points: 300 }]);
    await importLegacyAward(f, {
      userId: 'B',
      orderNo: 'SO-Y',
      points: 300,
      entryId: 'AWARD#SO-Y',
      createdAt: '2026-11-30T09:00:00.000Z',
    });

    // Act + Assess: the audit sees it (it used to group by user and order only)
    const audit = await ops(f, ['audit', '--json']);
    expect(audit.code).toBe(1);
    expect(audit.json().crossUserAwards).toEqual([
      expect.objectContaining({ orderNo: 'SO-Y', users: ['A', 'B'], points: 600 }),
    ]);
    expect((await ops(f, ['audit'])).stdout).toContain('Orders awarded to more than one user (1)');

    // Without a choice nothing is planned, so nothing is reversed
    const undecided = await ops(f, ['reverse']);
    expect(undecided.code).toBe(1);
    expect(undecided.stdout).toContain(
      'Not reversed, awarded to A, B: SO-Y. Name the rightful user: --rightful SO-Y=<user>.',
    );
    expect((await ops(f, ['reverse', '--apply', '--plan', await reviewedPlan(f), '--yes'])).code).toBe(1);
    expect(await f.balance('B')).toBe(300);

    // A user who holds no award of the order is refused
    const wrong = await ops(f, ['reverse', '--rightful', 'SO-Y=C']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--rightful SO-Y=C: C holds no award of SO-Y in force (awarded to A, B)');

    // Dry run, then apply: B's award is reversed, A's stays
    const dry = await ops(f, ['reverse', '--rightful', 'SO-Y=A', '--json']);
    expect(dry.json().outcomes).toEqual([
      expect.objectContaining({ userId: 'B', reason: 'CROSS_USER_AWARD', keptUserId: 'A', status: 'planned' }),
    ]);
    const plan = await reviewedPlan(f, ['--rightful', 'SO-Y=A']);
    expect((await ops(f, ['reverse', '--apply', '--plan', plan, '--yes'])).code).toBe(0);
    expect(await f.balance('A')).toBe(300);
    expect(await f.balance('B')).toBe(0);
    expect((await ops(f, ['audit'])).code).toBe(0);

    // Idempotent, and a second run choosing the other user cannot take the order below one award
    const again = await ops(f, ['reverse', '--apply', '--plan', plan, '--yes', '--json']);
    expect(again.code).toBe(0);
    expect(again.json()).toMatchObject({ outcomes: [], rightfulUnused: ['SO-Y'] });
    const otherChoice = await ops(f, ['reverse', '--rightful', 'SO-Y=B']);
    expect(otherChoice.stdout).toContain('no award of SO-Y to more than one user is in force');
    expect(await f.balance('A')).toBe(300);
  });

  it('two runs from one audit that choose different rightful users cannot reverse both awards', async () => {
    // Prepare
    const f = await pointsFixture();
    await awardThroughConsumer(f, [{ orderNo: 'SO-Z', userId: 'A', points: 300 }]);
    await importLegacyAward(f, {
      userId: 'B',
      orderNo: 'SO-Z',
      points: 300,
      entryId: 'AWARD#SO-Z',
      createdAt: '2026-11-30T09:00:00.000Z',
    });
    const tables = { ledger: f.resources.tables.ledger, accounts: f.resources.tables.accounts };
    const audit = await runLedgerAudit({ dynamoDb: f.dynamoDb, tables });
    const run = (user: string) =>
      reverseDoubleAwards({
        dynamoDb: f.dynamoDb,
        tables,
        doubleAwards: audit.doubleAwards,
        crossUserAwards: audit.crossUserAwards,
        rightful: new Map([['SO-Z', user]]),
        apply: true,
      });
    // Act
    const first = await run('A');
    const second = await run('B');
    // Assess: the second run finds the award it meant to keep reversed, and writes nothing
    expect(first.outcomes.map((o) => o.status)).toEqual(['written']);
    expect(second.outcomes.map((o) => [o.userId, o.status])).toEqual([['A', 'kept-award-changed']]);
    expect(await f.balance('A')).toBe(300);
    expect(await f.balance('B')).toBe(0);
  });
});
