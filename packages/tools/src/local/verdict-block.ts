import type { GroupInvariantReport, InvariantReport } from '../chaos/invariants.ts';
import type { CaptureTimes } from './capture-times.ts';
import { textTable } from './report-text.ts';
import type { FocusVerdict, InjectedCrash, RunVerdict } from './run-verdict.ts';

/** What the verdict also names besides the run's own result. */
export interface VerdictFacts {
  /** The followed order's user and amount, and what the incident awarded for it. */
  readonly incident?: { readonly userId: string; readonly points: number; readonly incidentAwarded: number };
}

/**
 * The report's first block: did each group apply each effect once, the followed order group by
 * group with what a check keyed by msgId (the incident's) would have let through, the faults put
 * in on purpose, and a replayed capture's times. A reader who stops here knows the outcome.
 */
export function verdictBlock(
  verdict: RunVerdict,
  facts: VerdictFacts,
  captureTimes: CaptureTimes | undefined,
): string[] {
  const out = [`Verdict: ${headline(verdict.invariants)}`];
  if (verdict.focus) out.push(...focusLines(verdict.focus, facts));
  out.push(...(verdict.invariants ? invariantLines(verdict.invariants) : [`  Not judged: ${verdict.notJudged}.`]));
  out.push(...injectedLines(verdict.injected, verdict.invariants));
  if (captureTimes) out.push(`  ${captureTimesLine(captureTimes)}`);
  return out;
}

function headline(invariants: InvariantReport | undefined): string {
  if (!invariants) return 'the groups’ invariants were not judged; the counts below say what happened.';
  const groups = Object.keys(invariants.groups).length;
  if (invariants.holds)
    return `exactly once held in ${groups === 1 ? 'the group' : `all ${groups} groups`}: no effect applied twice, none lost, every dead letter expected.`;
  return `exactly once DOES NOT HOLD: ${invariants.doubleAwards} effect(s) applied twice, ${invariants.lostAwards} lost, ${invariants.unexpectedDeadLetters + invariants.missingDeadLetters} dead letter(s) not as expected.`;
}

function focusLines(focus: FocusVerdict, facts: VerdictFacts): string[] {
  const out: string[] = [];
  const incident = facts.incident;
  if (focus.ledger && incident) {
    const { entries, points, userIds } = focus.ledger;
    const who = userIds.length > 1 ? `Users ${userIds.join(', ')} were` : `User ${userIds[0] ?? incident.userId} was`;
    const award = entries === 0 ? 'never awarded' : `awarded ${points} points ${timesWord(entries)}`;
    out.push(
      `  ${who} ${award} for ${focus.orderNo} (${entries} ledger entr${entries === 1 ? 'y' : 'ies'}); the incident awarded ${incident.incidentAwarded}.`,
    );
  }
  if (focus.announced) out.push(announcedLine(focus.announced));
  out.push(`  The order came as: ${focus.copies.join('; ')}.`);
  const rows = focus.groups.map((g) => [
    g.group,
    'once',
    timesWord(g.applied),
    String(g.suppressed),
    `${timesWord(g.distinctMsgIds)}${g.group === 'point-consumer-group' && incident ? `: ${g.distinctMsgIds * incident.points} points` : ''}`,
  ]);
  const header = [`order ${focus.orderNo}`, 'expected', 'applied', 'suppressed', 'keyed by msgId, as in the incident'];
  out.push(...textTable(header, rows, { leftAligned: [0, 1, 2, 4] }).map((l) => `  ${l}`));
  return out;
}

/** `Its award was announced once (outbox event 393D…8CDA, RELAYED) and notified once.` */
function announcedLine(announced: NonNullable<FocusVerdict['announced']>): string {
  const events = announced.map((a) => `${a.eventId.slice(0, 4)}…${a.eventId.slice(-4)}, ${a.status}`).join('; ');
  const what =
    announced.length === 0 ? 'never announced' : `announced ${timesWord(announced.length)} (outbox event ${events})`;
  const notified = announced.every((a) => a.notifications === undefined)
    ? ''
    : ` and notified ${timesWord(announced.reduce((n, a) => n + (a.notifications ?? 0), 0))}`;
  return `  Its award was ${what}${notified}.`;
}

const timesWord = (n: number) => (n === 0 ? 'never' : n === 1 ? 'once' : n === 2 ? 'twice' : `${n} times`);

function invariantLines(invariants: InvariantReport): string[] {
  const out = [
    '  Every order, judged from the tables and queues by its group’s chaos plug-in (packages/tools/src/chaos/groups/):',
  ];
  const width = Math.max(...Object.keys(invariants.groups).map((g) => g.length));
  for (const [group, report] of Object.entries(invariants.groups))
    out.push(`    ${group.padEnd(width)}  ${groupJudgement(report)}`);
  for (const violation of invariants.violations.slice(0, 5)) out.push(`    ✗ ${violation}`);
  if (invariants.violations.length > 5) out.push(`    … ${invariants.violations.length - 5} more violations`);
  return out;
}

/** `HOLDS: orders 81, users 21`: the plug-in's own figures, zeros left out. */
function groupJudgement(r: GroupInvariantReport): string {
  const figures = Object.entries(r.detail)
    .filter(([, n]) => n !== 0)
    .map(([name, n]) => `${name.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)} ${n}`);
  const judged = [
    r.doubleEffects > 0 ? `${r.doubleEffects} applied twice` : '',
    r.lostEffects > 0 ? `${r.lostEffects} lost` : '',
    r.notJudged > 0 ? `${r.notJudged} not judged (unsettled)` : '',
    ...figures,
    `${r.deadLettered} dead letter${r.deadLettered === 1 ? '' : 's'}, ${r.expectedDeadLettered} expected`,
  ].filter((s) => s !== '');
  return `${r.holds ? 'HOLDS' : 'DOES NOT HOLD'}: ${judged.join(', ')}`;
}

function injectedLines(injected: readonly InjectedCrash[], invariants: InvariantReport | undefined): string[] {
  const parts = injected.map((c) =>
    c.fired
      ? `a crash after commit, before the ack, in ${c.group} (its batch's ${c.records} records came back: ${c.suppressedAfter} suppressed as duplicates)`
      : `a crash after commit planned in ${c.group} did not fire (msgId ${c.msgId} was never committed)`,
  );
  if (invariants && invariants.expectedDeadLettered > 0)
    parts.push(
      `${invariants.expectedDeadLettered} poison cop${invariants.expectedDeadLettered === 1 ? 'y' : 'ies'} (dead-lettered, as expected)`,
    );
  return parts.length === 0 ? [] : [`  Injected on purpose, not failures: ${parts.join('; ')}.`];
}

/** The replay's one line on the capture's times. */
export function captureTimesLine(t: CaptureTimes): string {
  if (t.earliest === undefined || t.latest === undefined)
    return 'Capture times: no envelope carries a store or born time.';
  const span = `${new Date(t.earliest).toISOString()} to ${new Date(t.latest).toISOString()}`;
  return t.mode === 'rebased'
    ? `Capture times rebased onto now: ${t.messages} envelope(s) captured ${span}, each moved by ${durationText(t.shiftMs)} (spacing and order kept; --original-times keeps them as captured).`
    : `Capture times kept as captured (--original-times): ${t.messages} envelope(s) from ${span}; a copy stored before its group's redrive horizon is dead-lettered as PAST_REDRIVE_HORIZON.`;
}

/** `+2342d 7h 5m 3s`: the largest unit first, zeros left out. */
function durationText(ms: number): string {
  const seconds = Math.round(Math.abs(ms) / 1000);
  const parts = [
    [Math.floor(seconds / 86_400), 'd'],
    [Math.floor(seconds / 3600) % 24, 'h'],
    [Math.floor(seconds / 60) % 60, 'm'],
    [seconds % 60, 's'],
  ] as const;
  const text =
    parts
      .filter(([n]) => n > 0)
      .map(([n, unit]) => `${n}${unit}`)
      .join(' ') || '0s';
  return `${ms < 0 ? '-' : '+'}${text}`;
}
