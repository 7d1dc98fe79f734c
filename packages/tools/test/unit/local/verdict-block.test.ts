import { describe, expect, it } from 'vitest';
import type { GroupInvariantReport, InvariantReport } from '../../../src/chaos/invariants.ts';
import type { RunVerdict } from '../../../src/local/run-verdict.ts';
import { verdictBlock } from '../../../src/local/verdict-block.ts';

const INCIDENT = { userId: '88372', points: 300, incidentAwarded: 600 };

function group(over: Partial<GroupInvariantReport> = {}): GroupInvariantReport {
  return {
    doubleEffects: 0,
    lostEffects: 0,
    violations: [],
    notJudged: 0,
    detail: { orders: 81, users: 21, balanceMismatches: 0 },
    deadLettered: 1,
    repeatedDeadLetters: 0,
    expectedDeadLettered: 1,
    missingDeadLetters: 0,
    unexpectedDeadLetters: 0,
    leftInSourceQueue: 0,
    holds: true,
    ...over,
  };
}

function invariants(points: GroupInvariantReport): InvariantReport {
  return {
    doubleAwards: points.doubleEffects,
    lostAwards: points.lostEffects,
    deadLettered: 1,
    repeatedDeadLetters: 0,
    expectedDeadLettered: 1,
    missingDeadLetters: 0,
    unexpectedDeadLetters: 0,
    leftInSourceQueues: 0,
    notJudged: 0,
    violations: points.violations.map((v) => `point-consumer-group: ${v}`),
    holds: points.holds,
    groups: { 'point-consumer-group': points },
  };
}

const focus = (entries: number, applied: number): RunVerdict['focus'] => ({
  orderNo: 'SO202007051422310088',
  copies: ['original delivery', 'application re-send after a timeout: new msgId, same order'],
  groups: [{ group: 'point-consumer-group', applied, suppressed: 2 - applied, other: 0, distinctMsgIds: 2 }],
  ledger: { entries, points: 300 * entries, userIds: entries > 0 ? ['88372'] : [] },
});

describe('the verdict block: the first lines of the report say what happened', () => {
  it('a run that held: the user awarded once beside the incident’s figure, each group’s invariant HOLDS', () => {
    const lines = verdictBlock(
      { invariants: invariants(group()), focus: focus(1, 1), injected: [] },
      { incident: INCIDENT },
      undefined,
    );
    expect(lines[0]).toBe(
      'Verdict: exactly once held in the group: no effect applied twice, none lost, every dead letter expected.',
    );
    expect(lines[1]).toBe(
      '  User 88372 was awarded 300 points once for SO202007051422310088 (1 ledger entry); the incident awarded 600.',
    );
    expect(lines.join('\n')).toMatch(/point-consumer-group +once +once +1 +twice: 600 points/);
    expect(lines.join('\n')).toContain('point-consumer-group  HOLDS: orders 81, users 21, 1 dead letter, 1 expected');
  });

  it('a run that broke: the double award is in the first line and the next, with the plug-in’s violation', () => {
    const broken = group({
      doubleEffects: 1,
      holds: false,
      violations: ['order SO202007051422310088 was awarded 2 times'],
      detail: { orders: 81, users: 21, balanceMismatches: 0 },
    });
    const lines = verdictBlock(
      { invariants: invariants(broken), focus: focus(2, 2), injected: [] },
      { incident: INCIDENT },
      undefined,
    );
    expect(lines[0]).toBe(
      'Verdict: exactly once DOES NOT HOLD: 1 effect(s) applied twice, 0 lost, 0 dead letter(s) not as expected.',
    );
    expect(lines[1]).toContain('User 88372 was awarded 600 points twice for SO202007051422310088 (2 ledger entries)');
    expect(lines.join('\n')).toContain('point-consumer-group  DOES NOT HOLD: 1 applied twice, orders 81');
    expect(lines.join('\n')).toContain('✗ point-consumer-group: order SO202007051422310088 was awarded 2 times');
  });

  it('labels an injected crash as put in on purpose, and says when a planned one did not fire', () => {
    const lines = verdictBlock(
      {
        invariants: invariants(group()),
        injected: [
          { group: 'point-consumer-group', msgId: 'A', fired: true, records: 10, suppressedAfter: 10 },
          { group: 'point-consumer-group', msgId: 'B', fired: false, records: 0, suppressedAfter: 0 },
        ],
      },
      {},
      undefined,
    ).join(' ');
    expect(lines).toContain(
      "Injected on purpose, not failures: a crash after commit, before the ack, in point-consumer-group (its batch's 10 records came back: 10 suppressed as duplicates)",
    );
    expect(lines).toContain(
      'a crash after commit planned in point-consumer-group did not fire (msgId B was never committed)',
    );
  });

  it('says why a replayed file’s groups are not judged, and how its capture’s times were sent', () => {
    const lines = verdictBlock(
      { notJudged: 'a replayed file says what its messages are', injected: [] },
      {},
      { mode: 'rebased', shiftMs: 86_400_000 + 3_000, messages: 40, earliest: 0, latest: 1000 },
    );
    expect(lines[0]).toBe('Verdict: the groups’ invariants were not judged; the counts below say what happened.');
    expect(lines).toContain('  Not judged: a replayed file says what its messages are.');
    expect(lines.at(-1)).toContain('Capture times rebased onto now: 40 envelope(s) captured 1970-01-01T00:00:00.000Z');
    expect(lines.at(-1)).toContain('each moved by +1d 3s');
  });
});
