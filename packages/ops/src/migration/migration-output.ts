import { type Column, type OutputFormat, renderCsv, renderTable } from '../operations/index.ts';
import type { CrossSystemAward, CrossSystemReport } from './cross-system-audit.ts';
import type { ImportReport, RejectedRow } from './legacy-import.ts';
import type { OrderDisagreement, ShadowComparison } from './shadow-comparison.ts';

/** What the migration commands print, in the three formats (packages/ops/src/operations/command-output.ts prints the others). */

const REJECTED_COLUMNS: Column<RejectedRow>[] = [
  { header: 'kind', value: (r) => r.kind },
  { header: 'row', value: (r) => r.ref },
  { header: 'order', value: (r) => r.orderNo },
  { header: 'user', value: (r) => r.userId },
  { header: 'points', value: (r) => r.points, align: 'right' },
  { header: 'reason', value: (r) => r.reason },
];

const seconds = (s: number) => {
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3_600);
  const m = Math.floor((s % 3_600) / 60);
  return [d ? `${d}d` : '', h ? `${h}h` : '', m ? `${m}m` : '', s % 60 ? `${s % 60}s` : ''].join('') || '0s';
};

export function renderImport(report: ImportReport, format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(report, null, 2);
  if (format === 'csv') return renderCsv(REJECTED_COLUMNS, report.rejected);
  const c = report.counts;
  const rows: Array<[string, number, string]> = report.dryRun
    ? [
        ['would write', report.wouldWrite, 'conditional writes decide at import time what is already there'],
        ['past the horizon', c.pastHorizon, 'no copy can arrive any more: nothing to write'],
        ['invalid', c.invalid, ''],
      ]
    : [
        ['imported', c.imported, ''],
        ['already present', c.alreadyPresent, 'imported earlier, or the same order from another row, same content'],
        [
          'awarded natively',
          c.awardedNatively,
          'the consumer here awarded a copy before the import: ops audit --legacy-source',
        ],
        ['conflicting', c.conflicting, 'another user or other points than what is there'],
        ['contended', c.contended, 'TransactionConflict after every retry: nothing written, run again'],
        ['past the horizon', c.pastHorizon, 'no copy can arrive any more: nothing to write'],
        ['invalid', c.invalid, ''],
      ];
  const out = [
    `${report.dryRun ? 'Dry run (nothing read from or written to DynamoDB)' : 'Import'}: ${report.source} → ${report.group} (ledger ${report.ledger})`,
    ...(report.resumedFrom
      ? [`Resumed the run started ${report.resumedFrom.startedAt} after position ${report.resumedFrom.position}.`]
      : []),
    `Read ${c.read} rows in ${(report.elapsedMs / 1000).toFixed(1)} s (${report.rowsPerSecond} rows/s, peak RSS ${Math.round(report.peakRssBytes / 1048576)} MB).`,
    `Records live ${seconds(report.horizon.importedRecordLifetimeSeconds)} after the legacy award: ${report.horizon.legacy}.`,
    '',
    renderTable<[string, number, string]>(
      [
        { header: 'rows', value: (r) => r[0] },
        { header: 'count', value: (r) => r[1], align: 'right' },
        { header: '', value: (r) => r[2] },
      ],
      rows,
    ),
  ];
  if (c.unverified > 0)
    out.push(
      '',
      `${c.unverified} rows carry no user or points (${report.source.startsWith('Redis') ? 'Redis keys' : 'no such columns'}): ` +
        'their records have no fingerprint, so a copy meeting one is taken as a duplicate without a conflict check ' +
        '(the consumer reports legacy-record-unverified).',
    );
  const reasons = Object.entries(report.invalidReasons).sort((a, b) => b[1] - a[1]);
  if (reasons.length > 0)
    out.push('', 'Invalid rows by reason:', ...reasons.map(([reason, n]) => `  ${String(n).padStart(8)}  ${reason}`));
  if (report.rejected.length > 0)
    out.push('', 'Rows not imported (first of each kind):', renderTable(REJECTED_COLUMNS, report.rejected));
  if (report.plan)
    out.push(
      '',
      `Plan ${report.plan.digest} saved to ${report.plan.file}: ${report.plan.awards} awards, ${report.plan.points} points to ${report.plan.users} user(s).`,
      `After review, import exactly these: the same command without --dry-run, with --plan ${report.plan.file}.`,
    );
  if (!report.dryRun)
    out.push(
      '',
      `Delta import, once the legacy consumers are stopped: the same command with --since ${report.deltaSince}.`,
    );
  return out.join('\n');
}

/** The cross-system part of `ops audit --legacy-source`: every order with more than one award in force across both. */
export function renderCrossSystem(report: CrossSystemReport): string {
  const out = [
    `Against the legacy store: ${report.source}`,
    `Read ${report.legacyRows} legacy awards (${report.legacyInvalid} invalid, ${report.moved} moved into this ledger, ${report.compensated} compensated here).`,
  ];
  if (report.inBothSystems.length === 0) {
    out.push('No order is awarded in both systems.');
    return out.join('\n');
  }
  const twice = report.inBothSystems.filter((c) => c.sameUser).length;
  out.push(
    '',
    `Orders awarded in both systems (${report.inBothSystems.length}: ${twice} to the same user, ${report.inBothSystems.length - twice} to another user here):`,
    renderTable<CrossSystemAward>(
      [
        { header: 'order', value: (c) => c.orderNo },
        {
          header: 'legacy award',
          value: (c) =>
            `${c.legacy.ref} ${c.legacy.userId ?? '(no user: a key)'}${c.legacy.points === undefined ? '' : `:${c.legacy.points}`}`,
        },
        { header: 'awards here', value: (c) => c.native.map((n) => `${n.userId}:${n.points} ${n.entryId}`).join(' ') },
        { header: 'excess points', value: (c) => c.excessPoints, align: 'right' },
        {
          header: 'to do',
          value: (c) =>
            c.sameUser
              ? 'reverse the awards here (reverse --legacy-source)'
              : `name the rightful user: --rightful ${c.orderNo}=<user>`,
        },
      ],
      report.inBothSystems,
    ),
  );
  return out.join('\n');
}

const DISAGREEMENT_COLUMNS: Column<OrderDisagreement>[] = [
  { header: 'order', value: (d) => d.orderNo },
  { header: 'disagreement', value: (d) => d.kind },
  {
    header: 'legacy award',
    value: (d) => (d.legacy ? `${d.legacy.ref} ${d.legacy.userId}:${d.legacy.points} ${d.legacy.awardedAt ?? ''}` : ''),
  },
  { header: 'awards here', value: (d) => d.here.map((n) => `${n.userId}:${n.points} ${n.createdAt ?? ''}`).join(' ') },
];

export function renderShadowComparison(report: ShadowComparison, format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(report, null, 2);
  if (format === 'csv') return renderCsv(DISAGREEMENT_COLUMNS, report.disagreements);
  const out = [
    `Against the legacy store: ${report.source}`,
    `Orders first awarded from ${report.since} to ${report.until}: ${report.legacyAwards} by the legacy consumer ` +
      `(${report.legacyInvalid} invalid rows), ${report.ordersHere} here; ${report.agreeing} agree.`,
  ];
  if (report.disagreements.length === 0) {
    out.push('Every order agrees: same user, same points, awarded once on both sides.');
    return out.join('\n');
  }
  out.push(
    '',
    `Disagreements (${report.disagreements.length}):`,
    renderTable(DISAGREEMENT_COLUMNS, report.disagreements),
  );
  return out.join('\n');
}
