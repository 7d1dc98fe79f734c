import { DEAD_LETTER_ATTRIBUTES, type DuplicateReason } from '../../lib/consumer/index.ts';
import type { CaptureTimes } from './capture-times.ts';
import type { Delivery, DeliveryCounts } from './delivery-account.ts';
import type { LocalRunResult } from './local-pipeline.ts';
import type { TrafficPhase } from './traffic.ts';
import type { TrafficFileAccount } from './traffic-file.ts';

type Counts = Omit<DeliveryCounts, 'retried'> & { retried: number };

/**
 * The machine-readable account of a run: the last line of `npm start -- --json`, read by
 * other tools. The first nine fields are the documented contract; the rest are extras.
 */
export interface RunSummary extends Counts {
  groups: Record<string, Counts>;
  /** Sum of the ledger per user (the points consumer's tables). */
  awarded: Record<string, number>;
  /** The accounts table per user. */
  balances: Record<string, number>;
  /** Every user's balance equals the sum of their ledger. */
  invariantHolds: boolean;
  /** Deliveries whose record was settled but whose invocation failed, so SQS delivered it again. */
  unacknowledged: number;
  /** Messages in the groups' DLQs at the end (dead-lettered by a consumer or by SQS redrive). */
  deadLetterQueue: number;
  /** `deduplicated`: copies for FIFO queues that SQS absorbed (same msgId within five minutes), never enqueued. */
  bridge: { enqueued: number; redelivered: number; deduplicated: number; unrouted: number; rejected: number };
  input?: { lines: number; envelopes: number; badLines: number; blankLines: number };
  /** Every message was sent and every queue drained before the run stopped. */
  completed: boolean;
  /** Input messages never sent because the run reached its time limit first (0 when completed). */
  neverSent: number;
  /** Messages still in the source queues when the run stopped (0 when completed). */
  inFlight: number;
  wallMs: number;
  /** The stage's prefix, and how many of its tables and queues an earlier run had left (a kept stage). */
  stage: { prefix: string; reused: number };
  /** A replayed capture: whether its store and born times were rebased onto now, and by how much. */
  captureTimes?: { mode: string; shiftMs: number; messages: number; earliest?: string; latest?: string };
}

export interface ReportContext {
  readonly title: string;
  readonly phases: readonly TrafficPhase[];
  readonly input?: TrafficFileAccount;
  /** An order the report follows message by message (the incident's). */
  readonly focusOrderNo?: string;
}

export function runSummary(result: LocalRunResult, input?: TrafficFileAccount): RunSummary {
  const awarded: Record<string, number> = {};
  for (const e of result.ledger) awarded[e.userId] = (awarded[e.userId] ?? 0) + e.points;
  const users = new Set([...Object.keys(awarded), ...Object.keys(result.balances)]);
  const invariantHolds = [...users].every((u) => (awarded[u] ?? 0) === (result.balances[u] ?? 0));
  const groups = Object.fromEntries(result.groups.map((g) => [g, result.account.countsOf(g)]));
  const b = result.bridge;
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, n) => a + n, 0);
  return {
    ...contractOrder(result.account.total()),
    groups: Object.fromEntries(Object.entries(groups).map(([g, c]) => [g, contractOrder(c)])),
    awarded: sortedByUser(awarded),
    balances: sortedByUser(result.balances),
    invariantHolds,
    unacknowledged: result.account.deliveries.filter((d) => d.unacknowledged).length,
    deadLetterQueue: result.deadLetters.length,
    bridge: {
      enqueued: sum(b.enqueued),
      redelivered: sum(b.redelivered),
      deduplicated: sum(b.deduplicated),
      unrouted: b.unrouted,
      rejected: b.rejected.length,
    },
    ...(input
      ? {
          input: {
            lines: input.lines,
            envelopes: input.envelopes,
            badLines: input.badLines.length,
            blankLines: input.blankLines.length,
          },
        }
      : {}),
    completed: result.completed,
    neverSent: result.neverSent,
    inFlight: result.leftInQueues,
    wallMs: result.wallMs,
    stage: { prefix: result.resources.prefix, reused: result.resources.reused.length },
    ...(result.captureTimes ? { captureTimes: captureTimesJson(result.captureTimes) } : {}),
  };
}

/** The report's one line on the capture's times. */
function captureTimesLine(t: CaptureTimes): string {
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

function captureTimesJson(t: CaptureTimes): NonNullable<RunSummary['captureTimes']> {
  return {
    mode: t.mode,
    shiftMs: t.shiftMs,
    messages: t.messages,
    ...(t.earliest === undefined || t.latest === undefined
      ? {}
      : { earliest: new Date(t.earliest).toISOString(), latest: new Date(t.latest).toISOString() }),
  };
}

/** The documented key order, so the JSON line reads like its description. */
function contractOrder(c: DeliveryCounts): Counts {
  return {
    delivered: c.delivered,
    processed: c.processed,
    duplicatesSuppressed: c.duplicatesSuppressed,
    filtered: c.filtered,
    deadLettered: c.deadLettered,
    retried: c.retried,
  };
}

function sortedByUser(r: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })));
}

const DUPLICATE_WHY: Record<DuplicateReason, string> = {
  'dedup-record-exists': 'the dedup record for this order exists: its effect was already committed',
  'legacy-record-exists': 'the legacy consumer processed this order before the move (imported record, same content)',
  'legacy-record-unverified': 'a legacy key for this order exists (imported without content, so unchecked)',
  'effect-already-present': 'the ledger already holds this award',
  'in-batch-duplicate': 'an earlier copy in the same batch was just consumed',
  'lease-completed': 'a completed lease holds the stored result',
  'lease-lost': 'another delivery took over the lease',
  'state-already-advanced': 'the target state was already reached',
};

const MAX_LISTED = 25;

/** The readable report: what was delivered, processed, suppressed and why, dead-lettered and why, the ledgers. */
export function renderReport(result: LocalRunResult, context: ReportContext): string {
  const summary = runSummary(result, context.input);
  // A msgId sent more than once has a label per copy: the first names the original, the
  // later ones say why it came again, which is what a suppressed duplicate needs.
  const labels = new Map<string, string>();
  const againLabels = new Map<string, string>();
  const lines = new Map<string, number>();
  for (const phase of context.phases) {
    for (const m of phase.messages) {
      if (m.msgId && m.label) (labels.has(m.msgId) ? againLabels : labels).set(m.msgId, m.label);
      if (m.msgId && m.line !== undefined && !lines.has(m.msgId)) lines.set(m.msgId, m.line);
    }
  }
  const out: string[] = [];
  const s = result.settings;
  out.push(context.title, '='.repeat(Math.min(100, context.title.length)), '');
  out.push(
    `Consumer groups: ${result.groups.join(', ')}; ${s.concurrency} concurrent consumer(s) each, batch size ${s.batchSize}, batching window ${s.batchingWindowMs} ms.`,
  );
  out.push(
    `Queues: visibility timeout ${s.visibilityTimeoutSeconds} s (function timeout the same); RocketMQ retry delays divided by ${s.timeScale}${s.redeliverProbability > 0 ? `; bridge redelivers each copy with probability ${s.redeliverProbability} (seed ${s.seed})` : ''}.`,
  );
  if (result.seededOrders > 0)
    out.push(
      `Seeded ${result.seededOrders} orders as WAIT_PAY first, standing in for the order service that creates them.`,
    );
  const reused = result.resources.reused.length;
  out.push(
    `Emulator: ${result.endpoint}, resources prefixed "${result.resources.prefix}"${reused > 0 ? ` (a kept stage: ${reused} of its tables and queues were there already, with what earlier runs left in them)` : ''}.`,
  );
  if (result.captureTimes) out.push(captureTimesLine(result.captureTimes));
  out.push('');

  if (context.input) {
    const i = context.input;
    out.push(
      'Input',
      `  ${i.path}: ${i.lines} lines, ${i.envelopes} envelopes, ${i.badLines.length} not envelopes (sent anyway; the consumers dead-letter them), ${i.blankLines.length} blank (no message).`,
    );
    for (const bad of i.badLines.slice(0, MAX_LISTED)) out.push(`  line ${bad.line}: ${bad.reason}`);
    if (i.badLines.length > MAX_LISTED) out.push(`  … ${i.badLines.length - MAX_LISTED} more bad lines`);
    out.push('');
  }

  const invocations = [...result.account.invocations.values()].reduce(
    (a, v) => ({ count: a.count + v.count, failed: a.failed + v.failed, timedOut: a.timedOut + v.timedOut }),
    {
      count: 0,
      failed: 0,
      timedOut: 0,
    },
  );
  out.push('Delivered');
  out.push(
    `  The bridge enqueued ${summary.bridge.enqueued} copies (${summary.bridge.redelivered} of them injected redeliveries${summary.bridge.deduplicated ? `; ${summary.bridge.deduplicated} more copies were absorbed by FIFO deduplication and never enqueued` : ''}${summary.bridge.unrouted ? `, ${summary.bridge.unrouted} messages of topics no selected group subscribes to` : ''}).`,
  );
  out.push(
    `  Pollers handed ${summary.delivered} deliveries to the handlers in ${invocations.count} invocations; ${invocations.failed} invocation(s) failed${invocations.timedOut ? ` (${invocations.timedOut} by timeout)` : ''}, leaving ${summary.unacknowledged} settled record(s) unacknowledged, so SQS delivered them again.`,
  );
  for (const r of result.bridge.rejected.slice(0, MAX_LISTED))
    out.push(`  SQS refused a copy for ${r.group}${r.line ? ` (line ${r.line})` : ''}: ${r.reason}`);
  out.push('');

  if (context.focusOrderNo) {
    out.push(`Order ${context.focusOrderNo}, delivery by delivery`);
    for (const d of result.account.deliveries.filter((x) => x.key === context.focusOrderNo)) {
      const label =
        d.outcome.kind === 'duplicate'
          ? circumstance(d, labels, againLabels, result.bridge.redeliveredMsgIds)
          : (labels.get(d.msgId ?? '') ?? '');
      out.push(`  ${d.group}  msgId ${d.msgId}  attempt ${d.attempt}  ${label}`);
      out.push(`      → ${describe(d)}`);
    }
    const entries = result.ledger.filter((e) => e.orderNo === context.focusOrderNo);
    out.push(
      `  Ledger entries for the order: ${entries.length} (${entries.map((e) => `${e.userId} ${e.entryId} ${e.points} points from msgId ${e.msgId}`).join('; ') || 'none'})`,
      '',
    );
  }

  out.push('Outcomes per group');
  const header = ['group', 'delivered', 'processed', 'duplicates', 'filtered', 'dead-lettered', 'retried'];
  const rows = [...result.groups.map((g) => [g, ...countsRow(summary.groups[g]!)]), ['total', ...countsRow(summary)]];
  out.push(...table(header, rows).map((l) => `  ${l}`));
  const settled = summary.processed + summary.duplicatesSuppressed + summary.filtered + summary.deadLettered;
  out.push(
    `  processed + duplicates + filtered + dead-lettered = ${settled} = delivered ${summary.delivered} − retried ${summary.retried} ${settled === summary.delivered - summary.retried ? '✓' : '✗'}`,
    '',
  );

  out.push('Duplicates suppressed, and why');
  const dupes = result.account.deliveries.filter((d) => d.outcome.kind === 'duplicate');
  if (dupes.length === 0) out.push('  none');
  for (const [why, n] of tally(
    dupes.map((d) => `${whyDuplicate(d)} — ${circumstance(d, labels, againLabels, result.bridge.redeliveredMsgIds)}`),
  ))
    out.push(`  ${String(n).padStart(5)} × ${why}`);
  out.push('');

  out.push('Dead-lettered, and why');
  const dead = result.account.deliveries.filter((d) => d.outcome.kind === 'dead-lettered');
  if (dead.length === 0) out.push('  none');
  for (const d of dead.slice(0, MAX_LISTED)) {
    const o = d.outcome as Extract<Delivery['outcome'], { kind: 'dead-lettered' }>;
    const where = d.msgId
      ? `msgId ${d.msgId}${lines.has(d.msgId) ? ` (line ${lines.get(d.msgId)})` : ''}`
      : `SQS message ${d.sqsMessageId}`;
    out.push(
      `  ${d.group}  ${o.code}: ${o.reason}  — ${where}${d.msgId && labels.get(d.msgId) ? `, ${labels.get(d.msgId)}` : ''}`,
    );
  }
  if (dead.length > MAX_LISTED) out.push(`  … ${dead.length - MAX_LISTED} more`);
  const byRedrive = result.deadLetters.filter((l) => !l.attributes[DEAD_LETTER_ATTRIBUTES.code]).length;
  out.push(
    `  The DLQs hold ${result.deadLetters.length} message(s)${byRedrive ? `, ${byRedrive} moved there by SQS redrive after ${17} receives (no reason attached)` : ''}.`,
    '',
  );

  const retried = result.account.deliveries.filter((d) => d.outcome.kind === 'retried');
  if (retried.length > 0) {
    out.push('Retried (came back to the queue)');
    const example = new Map<string, string>();
    const keys = retried.map((d) => {
      const o = d.outcome as Extract<Delivery['outcome'], { kind: 'retried' }>;
      const key = `${d.group} ${o.code}`;
      if (!example.has(key)) example.set(key, o.why);
      return key;
    });
    for (const [key, n] of tally(keys)) out.push(`  ${String(n).padStart(5)} × ${key} (e.g. ${example.get(key)})`);
    out.push('');
  }

  out.push(...ledgerSection(result, summary));
  if (result.couponGrants !== undefined)
    out.push(`Coupons granted by the local coupon service: ${result.couponGrants}.`, '');
  if (!result.completed) {
    out.push(
      `INCOMPLETE: the run reached its time limit with ${result.neverSent} message(s) never sent and ${result.leftInQueues} still in the source queues; ` +
        'the figures above cover only what was delivered (raise --max-run-seconds).',
    );
  }
  out.push(
    `Wall time: ${(result.wallMs / 1000).toFixed(1)} s (emulator start to report; ${(process.uptime()).toFixed(1)} s since the command started).`,
  );
  return out.join('\n');
}

function ledgerSection(result: LocalRunResult, summary: RunSummary): string[] {
  if (!result.groups.includes('point-consumer-group'))
    return ['Ledger and balances: the points group was not run.', ''];
  const out = ['Ledger and balances (points consumer)'];
  const users = [...new Set([...Object.keys(summary.awarded), ...Object.keys(summary.balances)])].sort((a, b) =>
    a.localeCompare(b, 'en', { numeric: true }),
  );
  const entries = new Map<string, number>();
  for (const e of result.ledger) entries.set(e.userId, (entries.get(e.userId) ?? 0) + 1);
  const mismatched = users.filter((u) => (summary.awarded[u] ?? 0) !== (summary.balances[u] ?? 0));
  const listed = users.length <= MAX_LISTED ? users : [...new Set([...mismatched, ...users])].slice(0, MAX_LISTED);
  const rows = listed.map((u) => [
    u,
    String(entries.get(u) ?? 0),
    String(summary.awarded[u] ?? 0),
    String(summary.balances[u] ?? 0),
    (summary.awarded[u] ?? 0) === (summary.balances[u] ?? 0) ? '✓' : '✗ MISMATCH',
  ]);
  out.push(...table(['user', 'entries', 'ledger sum', 'balance', ''], rows).map((l) => `  ${l}`));
  if (listed.length < users.length) out.push(`  … ${users.length - listed.length} more users`);
  out.push(
    summary.invariantHolds
      ? `Balance equals ledger for every user (${users.length}): HOLDS.`
      : `Balance differs from ledger for ${mismatched.length} of ${users.length} users: ${mismatched.slice(0, 10).join(', ')}. DOES NOT HOLD.`,
    '',
  );
  return out;
}

function describe(d: Delivery): string {
  const o = d.outcome;
  const unacked = d.unacknowledged ? ' (then the invocation crashed before the batch was deleted)' : '';
  switch (o.kind) {
    case 'processed':
      return `processed: the effect committed exactly once${unacked}`;
    case 'duplicate':
      return `duplicate suppressed: ${whyDuplicate(d)}${unacked}`;
    case 'filtered':
      return `filtered: tag ${o.tag ?? '(none)'} is not subscribed${unacked}`;
    case 'dead-lettered':
      return `dead-lettered: ${o.code}: ${o.reason}${unacked}`;
    case 'retried':
      return `retried: ${o.code}: ${o.why}${o.delaySeconds !== undefined ? ` (visible again in ${o.delaySeconds} s)` : ''}`;
  }
}

function whyDuplicate(d: Delivery): string {
  const o = d.outcome as Extract<Delivery['outcome'], { kind: 'duplicate' }>;
  const winner =
    o.winnerMsgId && o.winnerMsgId !== d.msgId
      ? ` (first consumed as msgId ${o.winnerMsgId})`
      : o.winnerMsgId
        ? ' (by this same msgId)'
        : '';
  return `${DUPLICATE_WHY[o.reason] ?? o.reason}${winner}`;
}

/** What made the copy arrive again: SQS after a failed invocation, the scenario's story, or what the data shows. */
function circumstance(
  d: Delivery,
  labels: ReadonlyMap<string, string>,
  againLabels: ReadonlyMap<string, string>,
  redelivered: ReadonlySet<string>,
): string {
  if (d.attempt > 1) return 'SQS delivered it again after a failed invocation';
  const o = d.outcome as Extract<Delivery['outcome'], { kind: 'duplicate' }>;
  const id = d.msgId ?? '';
  const resent = o.winnerMsgId !== undefined && o.winnerMsgId !== d.msgId;
  if (!resent && againLabels.has(id)) return againLabels.get(id)!;
  if (resent && labels.has(id)) return labels.get(id)!;
  if (resent) return 're-sent with a new msgId, same order';
  if (redelivered.has(id)) return 'bridge redelivery (same msgId)';
  return 'the same message again (same msgId)';
}

function countsRow(c: Counts): string[] {
  return [c.delivered, c.processed, c.duplicatesSuppressed, c.filtered, c.deadLettered, c.retried].map(String);
}

function tally(keys: readonly string[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]);
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
