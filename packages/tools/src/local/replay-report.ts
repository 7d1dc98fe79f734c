import { DEAD_LETTER_ATTRIBUTES, type DuplicateReason } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import type { CaptureTimes } from './capture-times.ts';
import type { Delivery, DeliveryCounts } from './delivery-account.ts';
import type { LocalRunResult } from './local-pipeline.ts';
import { type OutboxFigures, outboxFigures } from './local-relays.ts';
import { shortMsgId, tally, textTable, wrapped } from './report-text.ts';
import type { RunVerdict } from './run-verdict.ts';
import type { TrafficPhase } from './traffic.ts';
import type { TrafficFileAccount } from './traffic-file.ts';
import { type VerdictFacts, verdictBlock } from './verdict-block.ts';

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
  /** With a group that publishes: its outbox items at the end (docs/outbox.md). */
  outbox?: OutboxFigures;
}

export interface ReportContext {
  readonly title: string;
  readonly phases: readonly TrafficPhase[];
  readonly input?: TrafficFileAccount;
  /** An order the report follows message by message (the incident's). */
  readonly focusOrderNo?: string;
  /** The run judged (`judgeRun`): the report opens with it. */
  readonly verdict?: RunVerdict;
  readonly facts?: VerdictFacts;
  /** The order's trace follows the report (`ops trace`), so the report leaves its deliveries to it. */
  readonly tracedAfter?: boolean;
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
    ...(result.outbox ? { outbox: outboxFigures(result.outbox.items) } : {}),
  };
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

/** What the consumer found, in a few words, for the tally of duplicates. */
const DUPLICATE_FOUND: Record<DuplicateReason, string> = {
  'dedup-record-exists': 'its dedup record exists',
  'legacy-record-exists': 'the imported legacy record matches',
  'legacy-record-unverified': 'an imported legacy key exists (unchecked)',
  'effect-already-present': 'the ledger holds the award',
  'in-batch-duplicate': 'an earlier copy in its batch was consumed',
  'lease-completed': 'a completed lease holds the result',
  'lease-lost': 'another delivery took the lease over',
  'state-already-advanced': 'the state has moved on',
};

const MAX_LISTED = 10;
/** Lines the report keeps within, so a terminal shows them unbroken. */
const WIDTH = 120;

/**
 * The readable report, verdict first: did each group apply each effect once, then the figures
 * behind it (what was delivered and how it was settled, duplicates and dead letters grouped by
 * why, the points ledger), each section a function of its own.
 */
export function renderReport(result: LocalRunResult, context: ReportContext): string {
  const summary = runSummary(result, context.input);
  const labels = labelsOf(context.phases);
  const sections = [
    [context.title, '='.repeat(Math.min(100, context.title.length))],
    context.verdict ? verdictBlock(context.verdict, context.facts ?? {}, result.captureTimes) : [],
    runSettings(result),
    context.input ? inputSection(context.input) : [],
    deliveredSection(result, summary, context.verdict),
    context.focusOrderNo && !context.tracedAfter ? orderSection(result, context.focusOrderNo, labels) : [],
    outcomesSection(result, summary),
    duplicatesSection(result, labels, context.focusOrderNo),
    deadLettersSection(result, labels),
    retriedSection(result),
    [...ledgerSection(result, summary), ...closingLines(result)],
  ];
  return sections
    .filter((lines) => lines.length > 0)
    .map((lines) => lines.flatMap((l) => wrapped(l, WIDTH)).join('\n'))
    .join('\n\n');
}

/** What the scenario calls each copy: the first of a msgId names the original, later ones why it came again. */
interface CopyLabels {
  readonly first: ReadonlyMap<string, string>;
  readonly again: ReadonlyMap<string, string>;
  readonly lines: ReadonlyMap<string, number>;
}

function labelsOf(phases: readonly TrafficPhase[]): CopyLabels {
  const first = new Map<string, string>();
  const again = new Map<string, string>();
  const lines = new Map<string, number>();
  for (const m of phases.flatMap((p) => p.messages)) {
    if (m.msgId && m.label) (first.has(m.msgId) ? again : first).set(m.msgId, m.label);
    if (m.msgId && m.line !== undefined && !lines.has(m.msgId)) lines.set(m.msgId, m.line);
  }
  return { first, again, lines };
}

function runSettings(result: LocalRunResult): string[] {
  const s = result.settings;
  return [
    `Run: ${result.groups.length} group(s), ${s.concurrency} concurrent consumer(s) each, batch size ${s.batchSize}, batching window ${s.batchingWindowMs} ms,`,
    `  visibility timeout ${s.visibilityTimeoutSeconds} s (= function timeout); RocketMQ retry delays divided by ${s.timeScale}${s.redeliverProbability > 0 ? `; bridge redelivers each copy with probability ${s.redeliverProbability} (seed ${s.seed})` : ''}.`,
    ...(result.seededOrders > 0
      ? [
          `  Seeded ${result.seededOrders} orders as WAIT_PAY first, standing in for the order service that creates them.`,
        ]
      : []),
    `  Emulator ${result.endpoint}, resources prefixed "${result.resources.prefix}"${reusedNote(result.resources.reused.length)}.`,
  ];
}

/** A kept stage run into again holds what earlier runs left: the counts below are this run's, the tables everything's. */
const reusedNote = (reused: number) =>
  reused > 0
    ? ` (a kept stage: ${reused} of its tables and queues were there already, with what earlier runs left in them)`
    : '';

function inputSection(i: TrafficFileAccount): string[] {
  return [
    'Input',
    `  ${i.path}: ${i.lines} lines, ${i.envelopes} envelopes, ${i.badLines.length} not envelopes (sent anyway; the consumers dead-letter them), ${i.blankLines.length} blank (no message).`,
    ...i.badLines.slice(0, MAX_LISTED).map((bad) => `  line ${bad.line}: ${bad.reason}`),
    ...(i.badLines.length > MAX_LISTED ? [`  … ${i.badLines.length - MAX_LISTED} more bad lines`] : []),
  ];
}

function deliveredSection(result: LocalRunResult, summary: RunSummary, verdict: RunVerdict | undefined): string[] {
  const inv = [...result.account.invocations.values()].reduce(
    (a, v) => ({ count: a.count + v.count, failed: a.failed + v.failed, timedOut: a.timedOut + v.timedOut }),
    { count: 0, failed: 0, timedOut: 0 },
  );
  const b = summary.bridge;
  const injected = (verdict?.injected ?? []).filter((c) => c.fired).length;
  const real = inv.failed - injected;
  const failures = [
    injected > 0 ? `${injected} crashed on purpose (above)` : '',
    real > 0 ? `${real} failed${inv.timedOut ? ` (${inv.timedOut} by timeout)` : ''}` : '',
  ].filter((f) => f !== '');
  return [
    'Delivered (copies: one per message and subscribed group)',
    `  The bridge enqueued ${b.enqueued} copies (${b.redelivered} injected redeliveries${b.deduplicated ? `; ${b.deduplicated} absorbed by FIFO deduplication, never enqueued` : ''}${b.unrouted ? `; ${b.unrouted} messages of topics no selected group subscribes to` : ''}).`,
    `  Pollers handed ${summary.delivered} deliveries to the handlers in ${inv.count} invocations${failures.length > 0 ? `; ${failures.join(', ')}: ${summary.unacknowledged} settled record(s) delivered again` : ''}.`,
    ...result.bridge.rejected
      .slice(0, MAX_LISTED)
      .map((r) => `  SQS refused a copy for ${r.group}${r.line ? ` (line ${r.line})` : ''}: ${r.reason}`),
  ];
}

/** The followed order delivery by delivery, from the run's own account (when no trace follows the report). */
function orderSection(result: LocalRunResult, orderNo: string, labels: CopyLabels): string[] {
  const entries = result.ledger.filter((e) => e.orderNo === orderNo);
  const ofOrder = result.account.deliveries.filter(
    (d) => d.key === orderNo || d.key?.startsWith(`${orderNo}#`) === true,
  );
  return [
    `Order ${orderNo}, delivery by delivery`,
    ...ofOrder.map(
      (d) =>
        `  ${d.group}  ${shortMsgId(d.msgId)}  attempt ${d.attempt}  ${circumstanceOf(d, labels, result)} → ${describe(d)}`,
    ),
    `  Ledger entries for the order: ${entries.length} (${entries.map((e) => `${e.userId} ${e.entryId} ${e.points} points from msgId ${e.msgId}`).join('; ') || 'none'})`,
  ];
}

function outcomesSection(result: LocalRunResult, summary: RunSummary): string[] {
  const header = ['group', 'delivered', 'processed', 'duplicates', 'filtered', 'dead-lettered', 'retried'];
  const rows = [...result.groups.map((g) => [g, ...countsRow(summary.groups[g]!)]), ['total', ...countsRow(summary)]];
  const settled = summary.processed + summary.duplicatesSuppressed + summary.filtered + summary.deadLettered;
  return [
    'Outcomes per group (deliveries: every copy handed to a handler, redeliveries again)',
    ...textTable(header, rows).map((l) => `  ${l}`),
    `  processed + duplicates + filtered + dead-lettered = ${settled} = delivered ${summary.delivered} − retried ${summary.retried} ${settled === summary.delivered - summary.retried ? '✓' : '✗'}`,
  ];
}

/** Duplicates tallied by why they came and what the consumer found; the followed order's are told with it. */
function duplicatesSection(result: LocalRunResult, labels: CopyLabels, focusOrderNo: string | undefined): string[] {
  const all = result.account.deliveries.filter((d) => d.outcome.kind === 'duplicate');
  const ofFocus = (d: Delivery) => focusOrderNo !== undefined && d.key?.split('#')[0] === focusOrderNo;
  const dupes = all.filter((d) => !ofFocus(d));
  if (all.length === 0) return ['Duplicates suppressed: none'];
  const kinds = tally(
    dupes.map((d) => {
      const o = d.outcome as Extract<Delivery['outcome'], { kind: 'duplicate' }>;
      return `${d.group}: ${circumstanceOf(d, labels, result)} → ${DUPLICATE_FOUND[o.reason] ?? o.reason}`;
    }),
  );
  const focus = all.length - dupes.length;
  return [
    `Duplicates suppressed: ${all.length} deliveries, by why they came → what the consumer found${focus > 0 ? ` (and the followed order's ${focus}, above and in its trace)` : ''}`,
    ...kinds.slice(0, MAX_LISTED).map(([why, n]) => `  ${String(n).padStart(5)} × ${why}`),
    ...(kinds.length > MAX_LISTED ? [`  … ${kinds.length - MAX_LISTED} more kinds`] : []),
  ];
}

/** Dead letters grouped by their code and reason: a count, the groups, one example. */
function deadLettersSection(result: LocalRunResult, labels: CopyLabels): string[] {
  const dead = result.account.deliveries.filter((d) => d.outcome.kind === 'dead-lettered');
  const byRedrive = result.deadLetters.filter((l) => !l.attributes[DEAD_LETTER_ATTRIBUTES.code]).length;
  const held = `The DLQs hold ${result.deadLetters.length} message(s)${byRedrive ? `, ${byRedrive} moved there by SQS redrive after its receives ran out (no reason attached)` : ''}.`;
  if (dead.length === 0) return ['Dead-lettered: none', `  ${held}`];
  const byReason = new Map<string, Delivery[]>();
  for (const d of dead) {
    const o = d.outcome as Extract<Delivery['outcome'], { kind: 'dead-lettered' }>;
    const key = `${o.code}: ${o.reason}`;
    byReason.set(key, [...(byReason.get(key) ?? []), d]);
  }
  const reasons = [...byReason].sort((a, b) => b[1].length - a[1].length);
  const out = [`Dead-lettered (deliveries), by reason: ${dead.length}`];
  for (const [reason, letters] of reasons.slice(0, MAX_LISTED)) {
    const groups = [...new Set(letters.map((d) => d.group))];
    // "Every group that received it": the groups its copies reached (a group on another topic never sees it).
    const msgIds = new Set(letters.map((d) => d.msgId));
    const reached = new Set(result.account.deliveries.filter((d) => msgIds.has(d.msgId)).map((d) => d.group));
    const e = letters[0]!;
    const where = e.msgId
      ? `msgId ${e.msgId}${labels.lines.has(e.msgId) ? ` (line ${labels.lines.get(e.msgId)})` : ''}`
      : `SQS message ${e.sqsMessageId}`;
    const label = e.msgId ? labels.first.get(e.msgId) : undefined;
    out.push(
      `  ${String(letters.length).padStart(5)} × ${reason}  (${groups.length === reached.size && groups.length > 1 ? 'every group that received it' : groups.join(', ')})`,
      `          e.g. ${where}${label ? `: ${label}` : ''}`,
    );
  }
  if (reasons.length > MAX_LISTED) out.push(`  … ${reasons.length - MAX_LISTED} more reasons`);
  out.push(`  ${held}`);
  return out;
}

function retriedSection(result: LocalRunResult): string[] {
  const retried = result.account.deliveries.filter((d) => d.outcome.kind === 'retried');
  if (retried.length === 0) return [];
  const example = new Map<string, string>();
  const keys = retried.map((d) => {
    const o = d.outcome as Extract<Delivery['outcome'], { kind: 'retried' }>;
    const key = `${d.group} ${o.code}`;
    if (!example.has(key)) example.set(key, o.why);
    return key;
  });
  return [
    'Retried (came back to the queue)',
    ...tally(keys).map(([key, n]) => `  ${String(n).padStart(5)} × ${key} (e.g. ${example.get(key)})`),
  ];
}

/** The points ledger against the balances: one line when they agree, the users that differ when not. */
function ledgerSection(result: LocalRunResult, summary: RunSummary): string[] {
  if (!result.groups.includes('point-consumer-group')) return [];
  const users = [...new Set([...Object.keys(summary.awarded), ...Object.keys(summary.balances)])];
  const mismatched = users.filter((u) => (summary.awarded[u] ?? 0) !== (summary.balances[u] ?? 0));
  if (summary.invariantHolds) return [`Points: balance equals ledger for every user (${users.length}): HOLDS.`];
  return [
    `Points: balance differs from ledger for ${mismatched.length} of ${users.length} users: DOES NOT HOLD.`,
    ...textTable(
      ['  user', 'ledger sum', 'balance'],
      mismatched
        .slice(0, MAX_LISTED)
        .map((u) => [`  ${u}`, String(summary.awarded[u] ?? 0), String(summary.balances[u] ?? 0)]),
    ),
  ];
}

/** `Outbox: 81 events committed, 81 relayed, 0 pending, 0 failed (the relay retried 0 records).` */
function outboxLine({ items, relay }: NonNullable<LocalRunResult['outbox']>): string {
  const { committed, relayed, pending, failed } = outboxFigures(items);
  return (
    `Outbox: ${committed} events committed, ${relayed} relayed, ${pending} pending, ${failed} failed ` +
    `(the relay handed ${relay.retried} record(s) back to the stream).`
  );
}

function closingLines(result: LocalRunResult): string[] {
  return [
    ...(result.couponGrants !== undefined
      ? [`Coupons granted by the local coupon service: ${result.couponGrants}.`]
      : []),
    ...(result.outbox ? [outboxLine(result.outbox)] : []),
    ...(result.notifications !== undefined
      ? [
          `Notifications sent by the local notification service: ${result.notifications.sent}` +
            ` (awards told more than once: ${result.notifications.doubleNotifications}).`,
        ]
      : []),
    ...(result.completed
      ? []
      : [
          `INCOMPLETE: the run reached its time limit with ${result.neverSent} message(s) never sent and ${result.leftInQueues} still in the source queues; ` +
            'the figures above cover only what was delivered (raise --max-run-seconds).',
        ]),
    `Wall time: ${(result.wallMs / 1000).toFixed(1)} s (emulator start to report; ${process.uptime().toFixed(1)} s since the command started).`,
  ];
}

function describe(d: Delivery): string {
  const o = d.outcome;
  const unacked = d.unacknowledged ? ' (then its invocation crashed before the batch was deleted)' : '';
  switch (o.kind) {
    case 'processed':
      return `processed${unacked}`;
    case 'duplicate':
      return `duplicate: ${whyDuplicate(d)}${unacked}`;
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
        ? ' (same msgId)'
        : '';
  return `${DUPLICATE_WHY[o.reason] ?? o.reason}${winner}`;
}

/** What made the copy arrive: SQS after a failed invocation, the scenario's story, or what the data shows. */
function circumstanceOf(d: Delivery, labels: CopyLabels, result: LocalRunResult): string {
  if (d.attempt > 1) return 'SQS delivered it again after a failed invocation';
  const id = d.msgId ?? '';
  if (d.outcome.kind !== 'duplicate') return labels.first.get(id) ?? 'delivered';
  const resent = d.outcome.winnerMsgId !== undefined && d.outcome.winnerMsgId !== d.msgId;
  if (!resent && labels.again.has(id)) return labels.again.get(id)!;
  if (resent && labels.first.has(id)) return labels.first.get(id)!;
  if (resent) return 're-sent with a new msgId, same order';
  if (result.bridge.redeliveredMsgIds.has(id)) return 'bridge redelivery (same msgId)';
  return 'the same message again (same msgId)';
}

function countsRow(c: Counts): string[] {
  return [c.delivered, c.processed, c.duplicatesSuppressed, c.filtered, c.deadLettered, c.retried].map(String);
}
