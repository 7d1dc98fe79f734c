import {
  type DeadLetterNotice,
  type RocketMQMessage,
  refetchCommands,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { DeadLetter } from './dead-letter-inspection.ts';
import { bodyLocationText, type LetterKind } from './dead-letter-kind.ts';
import type { RedriveFilter, RedriveReport } from './dead-letter-redrive.ts';
import type { PlannedReversal, ReversalReport } from './double-award-reversal.ts';
import { type AuditReport, type CrossUserAward, isClean } from './ledger-audit.ts';
import type { PointTableNames } from './operations-target.ts';
import { type Column, type OutputFormat, renderCsv, renderTable } from './report-format.ts';
import type { ResourceLocation, WriteSummary } from './write-confirmation.ts';

/** What each command prints, in the three formats. JSON keeps every field; tables keep what a person reads. */

type FindingRow = {
  finding: 'balance-mismatch' | 'double-award' | 'cross-user-award';
  userId: string;
  orderNo?: string;
  balance?: number | null;
  ledgerSum?: number;
  difference?: number;
  entries?: number;
  awardsInForce?: number;
  keptEntryId?: string;
  excessEntryIds?: string;
  excessPoints?: number;
  note?: string;
};

function findingRows(report: AuditReport): FindingRow[] {
  return [
    ...report.balanceMismatches.map(
      (m): FindingRow => ({
        finding: 'balance-mismatch',
        userId: m.userId,
        balance: m.balance,
        ledgerSum: m.ledgerSum,
        difference: m.difference,
        entries: m.ledgerEntries,
        note: m.balance === null ? 'no account item' : undefined,
      }),
    ),
    ...report.doubleAwards.map(
      (d): FindingRow => ({
        finding: 'double-award',
        userId: d.userId,
        orderNo: d.orderNo,
        entries: d.awards.length,
        awardsInForce: d.excess.length + 1,
        keptEntryId: d.kept.entryId,
        excessEntryIds: d.excess.map((a) => a.entryId).join(' '),
        excessPoints: d.excessPoints,
        note:
          [
            d.pointsDiffer ? 'awards carry different points' : undefined,
            d.awards.some((a) => a.reversedBy) ? 'partly reversed already' : undefined,
          ]
            .filter(Boolean)
            .join('; ') || undefined,
      }),
    ),
    ...report.crossUserAwards.flatMap((o) =>
      o.awards.map(
        (a): FindingRow => ({
          finding: 'cross-user-award',
          userId: a.userId,
          orderNo: o.orderNo,
          entries: o.awards.length,
          awardsInForce: o.awards.length,
          keptEntryId: undefined,
          excessPoints: a.points,
          note: `awarded to ${o.users.join(', ')}: name the rightful user (reverse --rightful ${o.orderNo}=<user>)`,
        }),
      ),
    ),
  ];
}

const FINDING_CSV: Column<FindingRow>[] = (
  [
    'finding',
    'userId',
    'orderNo',
    'balance',
    'ledgerSum',
    'difference',
    'entries',
    'awardsInForce',
    'keptEntryId',
    'excessEntryIds',
    'excessPoints',
    'note',
  ] as const
).map((k) => ({ header: k, value: (r: FindingRow) => r[k] }));

/**
 * A section another package adds to the audit's output (the legacy store's cross-system findings,
 * packages/ops/src/migration): its fields in the JSON, its text after the findings. Given rendered, so that
 * packages/ops/src/operations needs nothing of the packages that build on it.
 */
export interface AuditAppendix {
  readonly json: Readonly<Record<string, unknown>>;
  readonly text: string;
}

const MISMATCH_COLUMNS: Column<AuditReport['balanceMismatches'][number]>[] = [
  { header: 'user', value: (m) => m.userId },
  { header: 'balance', value: (m) => m.balance ?? '(no account)', align: 'right' },
  { header: 'ledger sum', value: (m) => m.ledgerSum, align: 'right' },
  { header: 'difference', value: (m) => (m.difference > 0 ? `+${m.difference}` : m.difference), align: 'right' },
  { header: 'entries', value: (m) => m.ledgerEntries, align: 'right' },
];

const doubleAwardColumns = (report: AuditReport): Column<AuditReport['doubleAwards'][number]>[] => [
  { header: 'user', value: (d) => d.userId },
  { header: 'order', value: (d) => d.orderNo },
  { header: 'in force', value: (d) => d.excess.length + 1, align: 'right' },
  { header: 'kept (earliest)', value: (d) => d.kept.entryId },
  { header: 'to reverse', value: (d) => d.excess.map((a) => a.entryId).join(' ') },
  { header: 'excess points', value: (d) => d.excessPoints, align: 'right' },
  { header: 'note', value: (d) => findingRows({ ...report, balanceMismatches: [], doubleAwards: [d] })[0]!.note },
];

const CROSS_USER_COLUMNS: Column<CrossUserAward>[] = [
  { header: 'order', value: (o) => o.orderNo },
  { header: 'users', value: (o) => o.users.join(' ') },
  {
    header: 'awards',
    value: (o) => o.awards.map((a) => `${a.userId}:${a.points}${a.createdAt ? `@${a.createdAt}` : ''}`).join(' '),
  },
  { header: 'points', value: (o) => o.points, align: 'right' },
];

export function renderAudit(
  report: AuditReport,
  tables: PointTableNames,
  format: OutputFormat,
  appendix?: AuditAppendix,
): string {
  if (format === 'json')
    return JSON.stringify({ tables, clean: isClean(report), ...report, ...appendix?.json }, null, 2);
  if (format === 'csv') return renderCsv(FINDING_CSV, findingRows(report));
  const out = [
    `Ledger audit: ${tables.ledger} against ${tables.accounts}`,
    `Scanned ${report.ledgerEntries} ledger entries and ${report.accounts} accounts (${report.users} users).`,
  ];
  if (report.balanceMismatches.length > 0) {
    out.push('', `Balance differs from the ledger sum (${report.balanceMismatches.length} users):`);
    out.push(renderTable(MISMATCH_COLUMNS, report.balanceMismatches));
  }
  if (report.doubleAwards.length > 0) {
    out.push(
      '',
      `Orders awarded more than once (${report.doubleAwards.length} user/order pairs, ${report.doubleAwards.reduce((n, d) => n + d.excess.length, 0)} excess awards):`,
    );
    out.push(renderTable(doubleAwardColumns(report), report.doubleAwards));
  }
  if (report.crossUserAwards.length > 0) {
    out.push(
      '',
      `Orders awarded to more than one user (${report.crossUserAwards.length}): decide which award is right, then reverse --rightful <order>=<user>:`,
    );
    out.push(renderTable(CROSS_USER_COLUMNS, report.crossUserAwards));
  }
  if (appendix) out.push('', appendix.text);
  const findings = report.balanceMismatches.length + report.doubleAwards.length + report.crossUserAwards.length;
  out.push(
    '',
    isClean(report)
      ? 'Clean: every balance equals its ledger and no order is awarded twice.'
      : `Findings: ${findings}.`,
  );
  return out.join('\n');
}

const REVERSAL_COLUMNS: Column<ReversalReport['outcomes'][number]>[] = [
  { header: 'user', value: (o) => o.userId },
  { header: 'order', value: (o) => o.orderNo },
  { header: 'reverses', value: (o) => o.reversedEntryId },
  { header: 'reversal entry', value: (o) => o.reversalEntryId },
  { header: 'points', value: (o) => -o.points, align: 'right' },
  { header: 'kept', value: (o) => (o.keptUserId === o.userId ? o.keptEntryId : `${o.keptUserId}/${o.keptEntryId}`) },
  { header: 'reason', value: (o) => o.reason },
  { header: 'status', value: (o) => o.status },
];

/** A dry run's saved plan: where, and the digest the apply run's confirmation shows again. */
export interface SavedPlan {
  file: string;
  digest: string;
}

export function renderReversal(
  report: ReversalReport,
  tables: PointTableNames,
  format: OutputFormat,
  plan?: SavedPlan,
): string {
  if (format === 'json') return JSON.stringify({ tables, ...(plan ? { plan } : {}), ...report }, null, 2);
  if (format === 'csv') return renderCsv(REVERSAL_COLUMNS, report.outcomes);
  const counted = report.outcomes.filter((o) => o.status === 'written' || o.status === 'planned');
  const points = counted.reduce((n, o) => n + o.points, 0);
  const out = [
    report.applied
      ? `Reversal of double awards in ${tables.ledger} (applied).`
      : `Reversal of double awards in ${tables.ledger}: DRY RUN, nothing written${plan ? '.' : ' (save the plan with --plan <file>, then --apply --plan <file>).'}`,
  ];
  if (plan)
    out.push(
      `Plan ${plan.digest} saved to ${plan.file}. After review, apply exactly this plan: reverse --apply --plan ${plan.file}`,
    );
  const undecided = [
    ...report.undecided.map(
      (o) =>
        `Not reversed, awarded to ${o.users.join(', ')}: ${o.orderNo}. Name the rightful user: --rightful ${o.orderNo}=<user>.`,
    ),
    ...report.rightfulUnused.map(
      (orderNo) =>
        `--rightful ${orderNo}: no award of ${orderNo} to more than one user is in force (already settled?); nothing to do for it.`,
    ),
  ];
  if (report.outcomes.length === 0) {
    out.push(
      '',
      undecided.length > 0 ? 'Nothing reversed.' : 'Nothing to reverse: no order is awarded more than once.',
      ...undecided,
    );
    return out.join('\n');
  }
  out.push('', renderTable(REVERSAL_COLUMNS, report.outcomes));
  out.push(
    '',
    'Per user:',
    renderTable<ReversalReport['perUser'][number]>(
      [
        { header: 'user', value: (t) => t.userId },
        { header: 'reversals', value: (t) => t.reversals, align: 'right' },
        { header: 'points', value: (t) => -t.points, align: 'right' },
      ],
      report.perUser,
    ),
  );
  const verb = report.applied ? 'reversed' : 'would be reversed';
  out.push('', `${counted.length} award(s) ${verb}: ${points} points across ${report.perUser.length} user(s).`);
  const skipped = report.outcomes.filter((o) => o.status === 'already-reversed').length;
  if (skipped > 0) out.push(`${skipped} already reversed by an earlier or concurrent run (nothing written).`);
  const changed = report.outcomes.filter((o) => o.status === 'award-changed');
  if (changed.length > 0)
    out.push(`${changed.length} award(s) changed since the audit and were left alone: check them by hand.`);
  const keptGone = report.outcomes.filter((o) => o.status === 'kept-award-changed').length;
  if (keptGone > 0)
    out.push(
      `${keptGone} reversal(s) not written: the award meant to stay is gone or reversed (another run chose differently).`,
    );
  out.push(...undecided);
  for (const d of report.pointsDiffer)
    out.push(`Note: the awards of ${d.userId}/${d.orderNo} carry different points; the earliest was kept.`);
  return out.join('\n');
}

export function ageOf(date: Date | undefined, now: Date): string {
  if (!date) return '?';
  const s = Math.max(0, Math.round((now.getTime() - date.getTime()) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

const letterCsv: Column<DeadLetter>[] = [
  { header: 'messageId', value: (l) => l.messageId },
  { header: 'deadLetteredAt', value: (l) => l.deadLetteredAt?.toISOString() },
  { header: 'failureCode', value: (l) => l.failure?.code },
  { header: 'failureClass', value: (l) => l.failure?.classification },
  { header: 'kind', value: (l) => l.kind },
  { header: 'reason', value: (l) => l.reasonText },
  { header: 'idempotencyKey', value: (l) => l.failure?.key },
  { header: 'attempt', value: (l) => l.failure?.attempt },
  { header: 'msgId', value: (l) => l.envelope?.msgId ?? l.failure?.msgId },
  { header: 'topic', value: (l) => l.envelope?.topic },
  { header: 'tags', value: (l) => l.envelope?.tags },
  { header: 'keys', value: (l) => l.envelope?.keys.join(' ') },
  { header: 'redriveCount', value: (l) => l.redriveCount },
  { header: 'body', value: (l) => l.envelope?.body ?? l.body },
];

function letterJson(l: DeadLetter) {
  const { receiptHandle: _handle, ...rest } = l;
  return rest;
}

export function renderDeadLetterList(
  letters: readonly DeadLetter[],
  queue: string,
  visibilityTimeoutSeconds: number,
  format: OutputFormat,
  now: Date,
): string {
  if (format === 'json')
    return JSON.stringify({ queue, count: letters.length, messages: letters.map(letterJson) }, null, 2);
  if (format === 'csv') return renderCsv(letterCsv, letters);
  const out = [
    `Dead letters in ${queue}: ${letters.length}`,
    `(read by receiving them with a ${visibilityTimeoutSeconds}s visibility timeout, then made visible again; nothing was deleted)`,
  ];
  if (letters.length === 0) return out.join('\n');
  out.push(
    '',
    renderTable<DeadLetter>(
      [
        ...deadLetterColumns(now),
        { header: 'topic:tags', value: (l) => (l.envelope ? `${l.envelope.topic}:${l.envelope.tags ?? ''}` : '') },
        { header: 'redrives', value: (l) => l.redriveCount, align: 'right' },
      ],
      letters,
    ),
  );
  return out.join('\n');
}

function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

export function renderDeadLetter(l: DeadLetter, format: OutputFormat, now: Date): string {
  if (format === 'json') return JSON.stringify(letterJson(l), null, 2);
  if (format === 'csv') return renderCsv(letterCsv, [l]);
  const f = l.failure;
  const lines: Array<[string, string | number | undefined]> = [
    ['SQS message id', l.messageId],
    [
      'dead-lettered at',
      l.deadLetteredAt ? `${l.deadLetteredAt.toISOString()} (${ageOf(l.deadLetteredAt, now)} ago)` : undefined,
    ],
    ['reason', l.reasonText],
    ['kind', LETTER_KIND_TEXT[l.kind]],
    ['failure code', f?.code],
    ['failure class', f?.classification],
    ['failure reason', f?.reason],
    ['consumer group', f?.group],
    ['idempotency key', f?.key],
    ['attempt', f?.attempt],
    ['source queue', f?.sourceQueue],
    ['receives in DLQ', l.receiveCount],
    ['redriven before', l.redriveCount],
    ...Object.entries(l.otherAttributes).map(([k, v]): [string, string] => [`attribute ${k}`, v]),
  ];
  const out = lines.filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => `${`${k}:`.padEnd(20)}${v}`);
  if (l.envelope) {
    const e = l.envelope;
    out.push(
      '',
      'RocketMQ message:',
      `  ${'msgId:'.padEnd(18)}${e.msgId}`,
      `  ${'topic:'.padEnd(18)}${e.topic}`,
      `  ${'tags:'.padEnd(18)}${e.tags ?? '(none)'}`,
      `  ${'keys:'.padEnd(18)}${e.keys.join(' ') || '(none)'}`,
      `  ${'reconsumeTimes:'.padEnd(18)}${e.reconsumeTimes}`,
    );
    out.push(...messageTimeLines(e));
    if (!l.notice) out.push('', 'Body:', prettyBody(e.body));
  } else if (!l.notice) {
    out.push('', `Body (raw; not a RocketMQ envelope: ${l.envelopeError}):`, l.body);
  }
  if (l.notice) out.push('', ...noticeBodyLines(l.notice));
  return out.join('\n');
}

/**
 * When the message was sent, stored and, for a delay message, due: RocketMQ held a delay message
 * back until its delivery time (5.x) or for its delay level (4.x), so its store time can lie well
 * after its born time, and a redrive horizon counts from the store time.
 */
function messageTimeLines(e: RocketMQMessage): string[] {
  const at = (ms: number) => new Date(ms).toISOString();
  return [
    e.bornTimestamp !== undefined && `  ${'born:'.padEnd(18)}${at(e.bornTimestamp)}`,
    e.storeTimestamp !== undefined && `  ${'stored:'.padEnd(18)}${at(e.storeTimestamp)}`,
    e.deliveryTimestamp !== undefined &&
      `  ${'delivery due:'.padEnd(18)}${at(e.deliveryTimestamp)} (a delay message: RocketMQ held it back until then)`,
    e.delayTimeLevel !== undefined &&
      `  ${'delay level:'.padEnd(18)}${e.delayTimeLevel} (RocketMQ 4: the broker held it back for this level's delay)`,
  ].filter((line): line is string => typeof line === 'string');
}

const LETTER_KIND_TEXT: Record<LetterKind, string> = {
  'failure-router': "the consumer's failure router",
  'redrive-policy': "SQS's redrive policy (no reason recorded)",
  'bridge-notice': 'a bridge notice: the bridge could not forward the message, and this letter has no body',
  'outbox-notice':
    'an outbox relay notice: the relay could not send the item; it stays FAILED in the outbox table (ops outbox redrive --event-id)',
  'stream-failure':
    "records the relay gave up on: the relay's event source mapping's batch metadata; the items stay PENDING (ops outbox redrive --stale)",
  'outbound-refusal': "the bridge's outbound refusal: a relayed body it would not produce to RocketMQ, kept unchanged",
};

/** Where a notice's body is and how to fetch it: the letter itself cannot be redriven. */
function noticeBodyLines(notice: DeadLetterNotice): string[] {
  return [
    `Body: not in this letter. Still in RocketMQ: ${bodyLocationText(notice) || 'no position recorded'}.`,
    'Fetch it with (each writes the body to /tmp/rocketmq/msgbodys/):',
    ...refetchCommands(notice.body).map((c) => `  ${c}`),
    'This letter is never redriven: the consumer would get an empty message.',
  ];
}

export function renderRedrive(
  report: RedriveReport,
  from: string,
  to: string,
  format: OutputFormat,
  now: Date,
): string {
  if (format === 'json') {
    return JSON.stringify(
      {
        from,
        to,
        ...report,
        selected: report.selected.map(letterJson),
        heldBack: report.heldBack.map((h) => ({ ...letterJson(h.letter), why: h.why })),
        sentNotDeleted: report.sentNotDeleted.map((l) => l.messageId),
      },
      null,
      2,
    );
  }
  if (format === 'csv') return renderCsv(letterCsv, report.selected);
  const out = [
    report.dryRun
      ? `Redrive DRY RUN from ${from} to ${to}: nothing sent or deleted.`
      : `Redrive from ${from} to ${to}.`,
    // One count per letter the filter matched: sent back (or, dry, to be sent back) or held back.
    `Examined ${report.examined} message(s); ${report.selected.length + report.heldBack.length} matched the filter: ` +
      `${report.selected.length} ${report.dryRun ? 'would be sent back' : 'to send back'}, ${report.heldBack.length} held back.`,
  ];
  if (report.selected.length > 0) {
    out.push('', renderTable<DeadLetter>([...deadLetterColumns(now)], report.selected));
  }
  if (report.heldBack.length > 0) {
    out.push('', `Held back ${report.heldBack.length} of them; they stay in the DLQ:`);
    for (const { letter, why } of report.heldBack)
      out.push(`- ${letter.messageId} (${letter.failure?.key ?? letter.envelope?.keys.join(' ') ?? 'no key'}): ${why}`);
  }
  if (!report.dryRun) {
    out.push('', `Moved ${report.moved} message(s) back to the source queue.`);
    if (report.sentNotDeleted.length > 0) {
      out.push(
        `${report.sentNotDeleted.length} sent but not deleted from the DLQ (in both queues; a re-run sends them again, the consumer dedups): ${report.sentNotDeleted.map((l) => l.messageId).join(' ')}`,
      );
    }
  }
  return out.join('\n');
}

/** The columns every dead-letter table starts with (`dlq list`, `dlq redrive`). */
function deadLetterColumns(now: Date) {
  return [
    { header: 'message id', value: (l: DeadLetter) => l.messageId },
    { header: 'age', value: (l: DeadLetter) => ageOf(l.deadLetteredAt, now), align: 'right' as const },
    { header: 'kind', value: (l: DeadLetter) => l.kind },
    { header: 'reason', value: (l: DeadLetter) => clip(l.reasonText, 60) },
    { header: 'key', value: (l: DeadLetter) => l.failure?.key ?? l.envelope?.keys.join(' ') },
    { header: 'msgId', value: (l: DeadLetter) => l.envelope?.msgId ?? l.failure?.msgId ?? '(not an envelope)' },
  ];
}

export function reversalWriteSummary(
  ledger: ResourceLocation,
  tables: PointTableNames,
  planned: readonly PlannedReversal[],
  digest: string,
): WriteSummary {
  const points = planned.reduce((n, r) => n + r.points, 0);
  const users = new Set(planned.map((r) => r.userId)).size;
  return {
    location: ledger,
    resources: [
      ['ledger table', tables.ledger],
      ['accounts table', tables.accounts],
    ],
    details: [
      `${planned.length} reversal(s) of the reviewed plan ${digest}: ${points} points taken back from ${users} user(s)`,
    ],
  };
}

export function redriveWriteSummary(
  source: ResourceLocation,
  sourceName: string,
  deadLetterName: string,
  filter: RedriveFilter,
  limit: number | undefined,
): WriteSummary {
  const selection = [
    ...(filter.reasons ?? []).map((r) => `--reason ${r}`),
    ...(filter.keys ?? []).map((k) => `--key ${k}`),
    ...(filter.olderThanMs !== undefined ? [`older than ${filter.olderThanMs / 1000}s`] : []),
    ...(filter.newerThanMs !== undefined ? [`newer than ${filter.newerThanMs / 1000}s`] : []),
  ];
  return {
    location: source,
    resources: [
      ['send to', sourceName],
      ['delete from', deadLetterName],
    ],
    details: [
      // The command refuses a redrive with neither a filter nor --all.
      `dead letters selected by ${selection.length > 0 ? selection.join(', ') : '--all'}${limit !== undefined ? `, at most ${limit}` : ''}: ` +
        'each sent to the source queue, then deleted from the DLQ',
    ],
  };
}
