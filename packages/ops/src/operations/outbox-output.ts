import type { OutboxItem } from '@rocketmq-lambda/runtime/config/index.ts';
import { ageOf } from './command-output.ts';
import type { OutboxRedriveReport, OutboxTarget } from './outbox-items.ts';
import { type Column, type OutputFormat, renderCsv, renderTable } from './report-format.ts';

/** An item as `ops outbox` prints it (JSON and CSV carry the same fields). */
function itemJson(item: OutboxItem, now: Date) {
  return {
    eventId: item.eventId,
    status: item.status,
    ageSeconds: Math.max(0, Math.round((now.getTime() - item.committedAt) / 1000)),
    committedAt: new Date(item.committedAt).toISOString(),
    ...(item.relayedAt === undefined ? {} : { relayedAt: new Date(item.relayedAt).toISOString() }),
    target: item.target,
    topic: item.topic,
    tag: item.tag,
    businessKey: item.businessKey,
    sourceMsgId: item.sourceMsgId,
    ...(item.failureReason === undefined ? {} : { reason: item.failureReason }),
    redriveCount: item.redriveCount ?? 0,
    ...(item.redrivenAt === undefined ? {} : { redrivenAt: new Date(item.redrivenAt).toISOString() }),
  };
}

const columns = (now: Date): Column<OutboxItem>[] => [
  { header: 'age', value: (i) => ageOf(new Date(i.committedAt), now), align: 'right' },
  { header: 'status', value: (i) => i.status },
  { header: 'target', value: (i) => i.target },
  { header: 'topic:tag', value: (i) => `${i.topic}:${i.tag}` },
  { header: 'event id', value: (i) => i.eventId },
  { header: 'business key', value: (i) => i.businessKey },
  { header: 'redrives', value: (i) => i.redriveCount ?? 0, align: 'right' },
  { header: 'reason', value: (i) => i.failureReason },
];

export function renderOutboxList(
  items: readonly OutboxItem[],
  target: OutboxTarget,
  statuses: readonly string[],
  format: OutputFormat,
  now: Date,
): string {
  if (format === 'json')
    return JSON.stringify(
      {
        group: target.group,
        table: target.table,
        statuses,
        count: items.length,
        items: items.map((i) => itemJson(i, now)),
      },
      null,
      2,
    );
  if (format === 'csv') return renderCsv(columns(now), items);
  const out = [`${statuses.join(' and ')} items in ${target.table} (${target.group}): ${items.length}`];
  if (items.length > 0) out.push('', renderTable(columns(now), items));
  return out.join('\n');
}

export function renderOutboxRedrive(report: OutboxRedriveReport, format: OutputFormat, now: Date): string {
  const refused = report.refused.map((r) => ({ eventId: r.eventId, reason: r.reason, why: r.why }));
  if (format === 'json')
    return JSON.stringify(
      {
        group: report.group,
        table: report.table,
        dryRun: report.dryRun,
        ...(report.staleAfterSeconds === undefined ? {} : { staleAfterSeconds: report.staleAfterSeconds }),
        redriven: report.redriven.map((i) => itemJson(i, now)),
        refused,
      },
      null,
      2,
    );
  const refusedColumns: Column<(typeof refused)[number]>[] = [
    { header: 'event id', value: (r) => r.eventId },
    { header: 'refused', value: (r) => r.reason },
    { header: 'why', value: (r) => r.why },
  ];
  if (format === 'csv') return renderCsv(refusedColumns, refused);
  const verb =
    report.staleAfterSeconds === undefined
      ? report.dryRun
        ? 'Would set back to PENDING'
        : 'Set back to PENDING'
      : `${report.dryRun ? 'Would write anew' : 'Written anew'} (PENDING, last stream record older than ${ageText(report.staleAfterSeconds)}; the relay sends each again)`;
  const out = [`${verb} in ${report.table}: ${report.redriven.length}`];
  if (report.redriven.length > 0) out.push('', renderTable(columns(now), report.redriven));
  if (refused.length > 0) out.push('', `Refused: ${refused.length}`, renderTable(refusedColumns, refused));
  if (report.dryRun) out.push('', 'Dry run: nothing was written. Run again with --apply to redrive.');
  return out.join('\n');
}

/** `82800` → `23h`, `5400` → `90m`, `45` → `45s`: a threshold as the operator would type it. */
function ageText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}
