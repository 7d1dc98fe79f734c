import type { ConsumerLogLine } from './function-logs.ts';
import type { GroupEvidence, OrderEvidence } from './order-evidence.ts';

/**
 * The story of one order, told from what the system keeps (`readOrderEvidence`): per consumer
 * group every delivery, the copy that applied the effect, the copies suppressed and why, the
 * failures, retries, dead letters and redrives; the ledger entries and their balance effect; and
 * where each delivery's trace can be opened. `ops trace` prints it as text, JSON or a sequence diagram.
 */
export interface OrderTrace {
  readonly subject: string;
  readonly orderNo: string | undefined;
  readonly groups: GroupStory[];
  readonly ledger: LedgerStory | undefined;
  /** Every event of every group and of the ledger, oldest first. */
  readonly timeline: TimelineEvent[];
  readonly traces: TraceReference[];
  /** Things that need a person: more than one award in force, letters still in a DLQ. */
  readonly findings: string[];
  readonly gaps: string[];
}

export type DeliveryOutcome = 'applied' | 'duplicate' | 'conflict' | 'failed' | 'held-back' | 'filtered' | 'other';

export interface Delivery {
  readonly at: string;
  readonly msgId: string | undefined;
  readonly sqsMessageId: string | undefined;
  readonly attempt: number | undefined;
  readonly outcome: DeliveryOutcome;
  /** Why, in words: the duplicate's reason, the failure, what happens next. */
  readonly why: string;
  /**
   * A letter sent back: the consumer logged its redrive count, or (lines from before that field) it is a new SQS
   * message of a msgId this group had dead-lettered.
   */
  readonly redriven: boolean;
  /** How many times `ops dlq redrive` had sent this copy back, as its consumer logged it. */
  readonly redriveCount?: number;
  readonly traceId: string | undefined;
}

export interface GroupStory {
  readonly group: string;
  readonly logGroup: string;
  readonly deliveries: Delivery[];
  readonly appliedBy: Delivery | undefined;
  readonly suppressed: number;
  readonly records: Array<{ key: string; status: string; firstMsgId: string; lastMsgId?: string; createdAt: string }>;
  readonly failureCounts: GroupEvidence['failureCounts'];
  readonly deadLetterQueue: string | undefined;
  readonly letters: Array<{ at: string | undefined; msgId: string | undefined; reason: string; redriveCount: number }>;
}

export interface LedgerStory {
  readonly table: string;
  readonly readBy: 'query' | 'scan';
  readonly entries: Array<{
    at: string;
    userId: string;
    entryId: string;
    kind: string;
    points: number;
    msgId?: string;
  }>;
  /** Points the order moved per user: awards plus (negative) reversals. */
  readonly effect: Array<{ userId: string; points: number; awardsInForce: number; balance: number | null }>;
}

export interface TimelineEvent {
  readonly at: string;
  /** The consumer group, or `ledger`. */
  readonly where: string;
  readonly what: string;
  readonly msgId?: string;
}

export interface TraceReference {
  readonly traceId: string;
  /** X-Ray's spelling of the same id (`1-<8 hex>-<24 hex>`): the console and `aws xray batch-get-traces` take it. */
  readonly xrayTraceId: string;
  readonly msgIds: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();

const DUPLICATE_REASONS: Record<string, string> = {
  'dedup-record-exists': 'its dedup record exists',
  'legacy-record-exists': 'the legacy consumer processed it (imported record)',
  'legacy-record-unverified': 'an imported legacy key exists (content not checkable)',
  'effect-already-present': 'the effect is already in the table',
  'in-batch-duplicate': 'an earlier record of the same batch has the key',
  'lease-completed': 'the lease holder completed it',
  'lease-lost': 'another delivery holds the lease',
  'state-already-advanced': 'the state has already moved on',
};

function whyOf(line: ConsumerLogLine, appliedMsgId: string | undefined): { outcome: DeliveryOutcome; why: string } {
  const next =
    line.disposition === 'retry'
      ? `; retried in ${line.retryInSeconds ?? '?'}s`
      : line.disposition === 'dead-letter'
        ? line.errorClass === 'transient'
          ? '; retries spent, dead-lettered'
          : '; dead-lettered'
        : line.disposition === 'retry-dead-letter'
          ? '; the DLQ send failed, left for SQS to deliver again'
          : '';
  switch (line.outcome) {
    case 'processed':
      return { outcome: 'applied', why: 'applied the effect' };
    case 'duplicate': {
      const winner = line.winnerMsgId ?? appliedMsgId;
      const copy =
        winner === undefined
          ? 'a copy'
          : winner.toUpperCase() === line.msgId?.toUpperCase()
            ? 'the same msgId again (a redelivery)'
            : `a new msgId for the same key (an application re-send; applied by ${winner})`;
      return { outcome: 'duplicate', why: `${copy}: ${DUPLICATE_REASONS[line.reason ?? ''] ?? line.reason}` };
    }
    case 'filtered':
      return { outcome: 'filtered', why: 'tag not subscribed' };
    case 'failed': {
      if (line.message.includes('held back'))
        return { outcome: 'held-back', why: 'held back behind its message group' };
      const outcome = line.errorCode === 'PAYLOAD_CONFLICT' ? 'conflict' : 'failed';
      return { outcome, why: `${line.errorCode ?? 'error'} (${line.errorClass ?? '?'}): ${line.reason ?? ''}${next}` };
    }
    default:
      return { outcome: 'other', why: line.message };
  }
}

function groupStory(g: GroupEvidence): GroupStory {
  const applied = g.lines.find((l) => l.outcome === 'processed');
  const deadLettered = new Set<string>();
  const seenSqs = new Map<string, string>();
  const deliveries = g.lines.map((line): Delivery => {
    const msgId = line.msgId?.toUpperCase();
    // The line says so since consumers log `redriveCount`; older lines are judged by a new SQS message of a msgId
    // the group had dead-lettered.
    const redriven =
      (line.redriveCount ?? 0) > 0 ||
      (msgId !== undefined &&
        deadLettered.has(msgId) &&
        line.sqsMessageId !== seenSqs.get(msgId) &&
        !!line.sqsMessageId);
    if (msgId && line.disposition === 'dead-letter') deadLettered.add(msgId);
    if (msgId && line.sqsMessageId) seenSqs.set(msgId, line.sqsMessageId);
    const { outcome, why } = whyOf(line, applied?.msgId);
    return {
      at: iso(line.at),
      msgId: line.msgId,
      sqsMessageId: line.sqsMessageId,
      attempt: line.attempt,
      outcome,
      why: redriven ? `redriven from the DLQ; ${why}` : why,
      redriven,
      ...(line.redriveCount ? { redriveCount: line.redriveCount } : {}),
      traceId: line.traceId ?? traceIdOfXray(line.xrayTraceId),
    };
  });
  return {
    group: g.group,
    logGroup: g.logGroup,
    deliveries,
    appliedBy: deliveries.find((d) => d.outcome === 'applied'),
    suppressed: deliveries.filter((d) => d.outcome === 'duplicate').length,
    records: g.records.map((r) => ({
      key: r.key,
      status: r.status,
      firstMsgId: r.firstMsgId,
      ...(r.lastMsgId ? { lastMsgId: r.lastMsgId } : {}),
      createdAt: r.createdAt,
    })),
    failureCounts: g.failureCounts,
    deadLetterQueue: g.deadLetterQueue,
    letters: g.letters.map((l) => ({
      at: l.deadLetteredAt?.toISOString(),
      msgId: l.envelope?.msgId ?? l.failure?.msgId,
      reason: l.reasonText,
      redriveCount: l.redriveCount,
    })),
  };
}

function ledgerStory(evidence: OrderEvidence): LedgerStory | undefined {
  const l = evidence.ledger;
  if (!l) return undefined;
  const effect = new Map<string, { points: number; awards: number }>();
  const reversed = new Set(l.entries.filter((e) => e.kind === 'REVERSAL').map((e) => e.reverses));
  for (const e of l.entries) {
    const sum = effect.get(e.userId) ?? { points: 0, awards: 0 };
    sum.points += e.points;
    if (e.kind === 'AWARD' && !reversed.has(e.entryId)) sum.awards++;
    effect.set(e.userId, sum);
  }
  return {
    table: l.tables.ledger,
    readBy: l.readBy,
    entries: l.entries.map((e) => ({
      at: e.createdAt,
      userId: e.userId,
      entryId: e.entryId,
      kind: e.kind,
      points: e.points,
      ...(e.msgId ? { msgId: e.msgId } : {}),
    })),
    effect: [...effect].map(([userId, s]) => ({
      userId,
      points: s.points,
      awardsInForce: s.awards,
      balance: l.balances.find((b) => b.userId === userId)?.balance ?? null,
    })),
  };
}

function timelineOf(groups: readonly GroupStory[], ledger: LedgerStory | undefined): TimelineEvent[] {
  const events: TimelineEvent[] = [];
  for (const g of groups) {
    for (const d of g.deliveries) {
      const attempt = d.attempt === undefined ? '' : `, attempt ${d.attempt}`;
      events.push({
        at: d.at,
        where: g.group,
        what: `delivery ${d.msgId ?? '(no msgId)'} (SQS ${d.sqsMessageId ?? '?'}${attempt}): ${d.why}`,
        ...(d.msgId ? { msgId: d.msgId } : {}),
      });
    }
    for (const r of g.records)
      events.push({ at: r.createdAt, where: g.group, what: `dedup record ${r.key} written (${r.status})` });
    for (const l of g.letters)
      events.push({
        at: l.at ?? '',
        where: g.group,
        what: `in ${g.deadLetterQueue}: ${l.reason}${l.redriveCount > 0 ? ` (redriven ${l.redriveCount}x before)` : ''}`,
        ...(l.msgId ? { msgId: l.msgId } : {}),
      });
  }
  for (const e of ledger?.entries ?? [])
    events.push({
      at: e.at,
      where: 'ledger',
      what: `${e.kind} ${e.entryId} for user ${e.userId}: ${e.points > 0 ? '+' : ''}${e.points} points`,
      ...(e.msgId ? { msgId: e.msgId } : {}),
    });
  return events.sort((a, b) => a.at.localeCompare(b.at));
}

/** The W3C trace id in X-Ray's spelling: the first 8 hex digits are X-Ray's epoch seconds. */
export function xrayTraceIdOf(traceId: string): string {
  return `1-${traceId.slice(0, 8)}-${traceId.slice(8)}`;
}

/** Powertools logs X-Ray's `Root=1-…-…;Parent=…;Sampled=…` or the bare id; back to 32 hex. */
function traceIdOfXray(value: string | undefined): string | undefined {
  const m = value && /(?:Root=)?1-([0-9a-f]{8})-([0-9a-f]{24})/i.exec(value);
  return m ? `${m[1]}${m[2]}`.toLowerCase() : undefined;
}

function tracesOf(groups: readonly GroupStory[]): TraceReference[] {
  const out = new Map<string, Set<string>>();
  for (const d of groups.flatMap((g) => g.deliveries)) {
    if (!d.traceId) continue;
    const ids = out.get(d.traceId) ?? new Set<string>();
    if (d.msgId) ids.add(d.msgId);
    out.set(d.traceId, ids);
  }
  return [...out].map(([traceId, ids]) => ({ traceId, xrayTraceId: xrayTraceIdOf(traceId), msgIds: [...ids] }));
}

function findingsOf(groups: readonly GroupStory[], ledger: LedgerStory | undefined): string[] {
  const out: string[] = [];
  for (const e of ledger?.effect ?? [])
    if (e.awardsInForce > 1) out.push(`user ${e.userId} holds ${e.awardsInForce} awards of the order`);
  if ((ledger?.effect.length ?? 0) > 1) out.push(`the order is awarded to ${ledger!.effect.length} users`);
  for (const g of groups)
    if (g.letters.length > 0) out.push(`${g.letters.length} letter(s) of the order wait in ${g.deadLetterQueue}`);
  return out;
}

export function orderTraceOf(evidence: OrderEvidence): OrderTrace {
  const groups = evidence.groups.map(groupStory);
  const ledger = ledgerStory(evidence);
  return {
    subject: evidence.subject,
    orderNo: evidence.orderNo,
    groups,
    ledger,
    timeline: timelineOf(groups, ledger),
    traces: tracesOf(groups),
    findings: findingsOf(groups, ledger),
    gaps: evidence.gaps,
  };
}

/** Nothing anywhere names the subject: no log line, record, letter or ledger entry. */
export function isEmptyTrace(trace: OrderTrace): boolean {
  return (
    trace.groups.every((g) => g.deliveries.length === 0 && g.records.length === 0 && g.letters.length === 0) &&
    (trace.ledger?.entries.length ?? 0) === 0
  );
}
