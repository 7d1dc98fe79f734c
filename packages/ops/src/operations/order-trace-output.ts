import type { Delivery, GroupStory, OrderTrace } from './order-trace.ts';
import { type Column, renderTable } from './report-format.ts';

/** How `ops trace` prints an order's story: text for the operator, a Mermaid sequence diagram for the ticket. */

const DELIVERY_COLUMNS: Column<Delivery>[] = [
  { header: 'time', value: (d) => d.at },
  { header: 'msgId', value: (d) => d.msgId },
  { header: 'SQS message', value: (d) => d.sqsMessageId },
  { header: 'attempt', value: (d) => d.attempt, align: 'right' },
  { header: 'outcome', value: (d) => d.outcome },
  { header: 'why', value: (d) => d.why },
];

function groupText(g: GroupStory): string[] {
  const out = ['', `${g.group} (log group ${g.logGroup})`];
  if (g.deliveries.length === 0) out.push('  no delivery in its logs');
  else
    out.push(
      ...renderTable(DELIVERY_COLUMNS, g.deliveries)
        .split('\n')
        .map((l) => `  ${l}`),
    );
  const a = g.appliedBy;
  out.push(
    a
      ? `  Applied by ${a.msgId} (SQS ${a.sqsMessageId}, attempt ${a.attempt ?? '?'}) at ${a.at}; ${g.suppressed} copy(ies) suppressed as duplicates.`
      : `  No delivery applied the effect; ${g.suppressed} copy(ies) suppressed as duplicates.`,
  );
  for (const r of g.records)
    out.push(
      `  Dedup record ${r.key}: ${r.status}, first msgId ${r.firstMsgId}${r.lastMsgId && r.lastMsgId !== r.firstMsgId ? `, completed by ${r.lastMsgId}` : ''}, written ${r.createdAt}.`,
    );
  if (g.records.length === 0)
    out.push('  No dedup record of the order (a state-transition group keeps none; else never applied, or expired).');
  for (const c of g.failureCounts) out.push(`  Failure count of SQS message ${c.sqsMessageId}: ${c.failures}.`);
  if (g.deadLetterQueue !== undefined)
    out.push(
      g.letters.length === 0
        ? `  Nothing of the order in ${g.deadLetterQueue}.`
        : `  In ${g.deadLetterQueue}: ${g.letters.map((l) => `${l.msgId ?? '?'} (${l.reason})`).join('; ')}.`,
    );
  return out;
}

export function renderOrderTraceText(trace: OrderTrace, region: string): string {
  const asked = trace.orderNo && trace.orderNo !== trace.subject ? ` (asked: ${trace.subject})` : '';
  const out = [`Trace of order ${trace.orderNo ?? `unknown; msgId ${trace.subject}`}${asked}`];
  for (const g of trace.groups)
    if (g.deliveries.length + g.records.length + g.letters.length > 0) out.push(...groupText(g));
  const quiet = trace.groups.filter((g) => g.deliveries.length + g.records.length + g.letters.length === 0);
  if (quiet.length > 0) out.push('', `Nothing of the order in ${quiet.map((g) => g.group).join(', ')}.`);
  if (trace.ledger) {
    const l = trace.ledger;
    out.push(
      '',
      `Ledger ${l.table} (${l.readBy === 'query' ? "the user's partition" : 'scanned: give --user to query'}):`,
    );
    if (l.entries.length === 0) out.push('  no entry of the order');
    for (const e of l.entries)
      out.push(
        `  ${e.at}  ${e.kind} ${e.entryId}  user ${e.userId}  ${e.points > 0 ? '+' : ''}${e.points}  ${e.msgId ?? ''}`.trimEnd(),
      );
    for (const e of l.effect)
      out.push(
        `  Balance effect for user ${e.userId}: ${e.points > 0 ? '+' : ''}${e.points} points, ${e.awardsInForce} award(s) in force; balance now ${e.balance ?? '(no account)'}.`,
      );
  }
  out.push('', 'In time order:');
  for (const e of trace.timeline) out.push(`  ${e.at}  ${e.where}  ${e.what}`);
  out.push('', ...traceLines(trace, region));
  for (const g of trace.gaps) out.push(`Not read: ${g}.`);
  out.push(trace.findings.length === 0 ? 'Findings: none.' : `Findings: ${trace.findings.join('; ')}.`);
  return out.join('\n');
}

function traceLines(trace: OrderTrace, region: string): string[] {
  if (trace.traces.length === 0)
    return [
      'Traces: no trace id in these log lines (tracing off for the functions, or lines written before it was on).',
    ];
  return [
    'Traces (open in the X-Ray console, or your trace viewer by the W3C id):',
    ...trace.traces.map(
      (t) =>
        `  ${t.traceId}  ${t.msgIds.join(' ')}  https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#xray:traces/${t.xrayTraceId}`,
    ),
  ];
}

// Mermaid ends a message at a line break and reads `;` and `#` specially: keep a message one plain line.
const mermaidText = (text: string) =>
  text
    .replace(/[;#\n\r]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

const participantOf = (group: string) => group.replace(/[^A-Za-z0-9]/g, '_');

/** The order's journey as a Mermaid sequence diagram: producer, each group's queue and function, the tables, the DLQs. */
export function renderOrderTraceMermaid(trace: OrderTrace): string {
  const groups = trace.groups.filter((g) => g.deliveries.length + g.letters.length > 0);
  const out = ['sequenceDiagram', '  participant P as Producer (RocketMQ)', '  participant B as Bridge'];
  for (const g of groups) {
    out.push(`  participant Q_${participantOf(g.group)} as SQS ${g.group}`);
    out.push(`  participant F_${participantOf(g.group)} as ${g.group} function`);
  }
  out.push('  participant D as DynamoDB (dedup + ledger)');
  if (groups.some((g) => g.letters.length > 0 || g.deliveries.some((d) => d.why.includes('dead-lettered'))))
    out.push('  participant L as DLQ');
  out.push(`  Note over P,D: order ${mermaidText(trace.orderNo ?? trace.subject)}`);
  const msgIds = [...new Set(groups.flatMap((g) => g.deliveries.map((d) => d.msgId)).filter((m) => m !== undefined))];
  for (const m of msgIds) out.push(`  P->>B: msgId ${m}`);
  for (const g of groups) out.push(`  B->>Q_${participantOf(g.group)}: forwards the order's messages`);
  // One journey in time order: the groups' deliveries interleave as they happened.
  const steps = groups.flatMap((g) => g.deliveries.map((d) => ({ at: d.at, lines: deliveryMermaid(g.group, d) })));
  for (const step of steps.sort((a, b) => a.at.localeCompare(b.at))) out.push(...step.lines);
  for (const g of groups)
    for (const l of g.letters)
      out.push(`  Note over L: waiting in ${g.deadLetterQueue}: ${mermaidText(`${l.msgId ?? '?'} ${l.reason}`)}`);
  for (const e of trace.ledger?.effect ?? [])
    out.push(
      `  Note over D: user ${mermaidText(e.userId)}: ${e.points > 0 ? '+' : ''}${e.points} points, ${e.awardsInForce} award(s) in force`,
    );
  return out.join('\n');
}

function deliveryMermaid(group: string, d: Delivery): string[] {
  const q = `Q_${participantOf(group)}`;
  const f = `F_${participantOf(group)}`;
  const out = [`  ${d.redriven ? 'L' : q}->>${f}: ${d.at.slice(11, 23)} ${d.msgId ?? '?'} attempt ${d.attempt ?? '?'}`];
  if (d.outcome === 'applied') out.push(`  ${f}->>D: commit`, `  D-->>${f}: applied`);
  else if (d.outcome === 'duplicate')
    out.push(`  ${f}->>D: commit`, `  D-->>${f}: ${mermaidText(`duplicate: ${d.why}`)}`);
  else out.push(`  Note over ${f}: ${mermaidText(`${d.outcome}: ${d.why}`)}`);
  if (d.why.includes('dead-lettered')) out.push(`  ${f}->>L: dead letter ${d.msgId ?? ''}`.trimEnd());
  return out;
}
