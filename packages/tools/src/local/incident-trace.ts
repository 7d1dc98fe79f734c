import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runOps } from '@rocketmq-lambda/ops/command/ops.ts';
import type { OrderTrace, OutboxHop } from '@rocketmq-lambda/ops/operations/index.ts';
import { createDynamoDb } from '@rocketmq-lambda/runtime/aws/index.ts';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import type { LocalRunResult, LogShippingAccount } from './local-pipeline.ts';
import { shortMsgId, wrapped } from './report-text.ts';

/** The traced order: its number and the user whose ledger partition `ops trace` reads. */
export interface TracedOrder {
  readonly orderNo: string;
  readonly userId: string;
}

/** Columns of the compact trace: it fits this many. */
const WIDTH = 120;

/**
 * The end of the local run: `ops trace` of one order in each group the run drove, read as on
 * AWS from the log lines the run shipped to CloudWatch Logs, the dedup records, the DLQs and
 * the ledger. The command runs in-process with the run's DynamoDB client, since the local
 * emulator may serve DynamoDB on an endpoint of its own. The whole text of each trace, as an
 * operator's terminal shows it (`npm start -- --full-trace`).
 */
export async function orderTraceSections(result: LocalRunResult, order: TracedOrder): Promise<string> {
  const started = performance.now();
  const out = [`The incident's order, as an operator traces it (ops trace, per consumer group):`];
  const groups = tracedGroups(result);
  await withDynamoDb(result, async (dynamoDb) => {
    for (const group of groups) {
      const { argv, code, output } = await trace(result, order, group, [], dynamoDb);
      out.push('', `$ npm run ops -- ${argv.join(' ')}   (exit ${code})`, output.trimEnd());
    }
  });
  out.push('', `(${groups.length} traces read in ${Math.round(performance.now() - started)} ms)`);
  return out.join('\n');
}

/**
 * The same traces, one line per delivery within 120 columns: each group's deliveries of the
 * order (time, msgId, outcome, why), the ledger's entries and the findings. `ops trace --json`
 * tells the story; this only lays it out narrower.
 */
export async function compactOrderTrace(result: LocalRunResult, order: TracedOrder): Promise<string> {
  const traces: Array<OrderTrace & { outbox?: OutboxHop[] }> = [];
  const failures: string[] = [];
  await withDynamoDb(result, async (dynamoDb) => {
    for (const group of tracedGroups(result)) {
      const { argv, code, output } = await trace(result, order, group, ['--json'], dynamoDb);
      if (code === 2) failures.push(`  ${group}: npm run ops -- ${argv.join(' ')} told nothing: ${output.trim()}`);
      else traces.push(JSON.parse(output) as OrderTrace);
    }
  });
  const out = [
    `The incident's order as an operator traces it (npm run ops -- trace ${order.orderNo} --group <group> --user ${order.userId}):`,
  ];
  for (const t of traces) out.push(...groupLines(t));
  const ledger = traces.find((t) => t.ledger)?.ledger;
  if (ledger) out.push(...ledgerLines(ledger));
  for (const t of traces) out.push(...hopLines(t.outbox ?? []));
  const findings = traces.flatMap((t) => t.findings);
  out.push(
    ...failures,
    `  Findings: ${findings.length === 0 ? 'none' : findings.join('; ')}. Each trace whole: npm start -- --full-trace.`,
  );
  return out.flatMap((l) => wrapped(l, WIDTH, WHY_COLUMN)).join('\n');
}

/**
 * The groups an order is traced in on its own: those it reaches from its producer. A group that consumes
 * what another group publishes (its topic is a publisher's) keys on the event id, not the order: its
 * part of the story is told in the publisher's trace, across the outbox hop (`ops trace`'s `outbox`).
 */
function tracedGroups(result: LocalRunResult): string[] {
  const catalogue: readonly ConsumerGroupDefinition[] = CONSUMER_GROUPS;
  const published = new Set(catalogue.flatMap((g) => (g.publishes ?? []).map((p) => p.topic)));
  return result.groups.filter((group) => {
    const topic = catalogue.find((g) => g.group === group)?.topic;
    return topic === undefined || !published.has(topic);
  });
}

/** Where a delivery's why starts: continuations of a long one line up under it. */
const WHY_COLUMN = 3 + 2 + 12 + 2 + 9 + 2 + 9 + 2;

function groupLines(t: OrderTrace): string[] {
  return t.groups.flatMap((g) => [
    `  ${g.group}: ${g.appliedBy ? `applied by ${shortMsgId(g.appliedBy.msgId)}` : 'not applied'}, ${g.suppressed} cop${g.suppressed === 1 ? 'y' : 'ies'} suppressed`,
    ...g.deliveries.map((d) =>
      ['   ', d.at.slice(11, 23), shortMsgId(d.msgId).padEnd(9), d.outcome.padEnd(9), shortMsgIds(d.why)].join('  '),
    ),
  ]);
}

function ledgerLines(ledger: NonNullable<OrderTrace['ledger']>): string[] {
  const effect = ledger.effect.map(
    (e) =>
      `user ${e.userId} ${e.points > 0 ? '+' : ''}${e.points} points, ${e.awardsInForce} award(s) in force, balance ${e.balance ?? 'unknown'}`,
  );
  return [
    `  ledger ${ledger.table}: ${effect.join('; ') || 'nothing of the order'}`,
    ...ledger.entries.map((e) =>
      [
        '   ',
        e.at.slice(11, 23),
        shortMsgId(e.msgId).padEnd(9),
        e.kind.toLowerCase().padEnd(9),
        `${e.entryId} for user ${e.userId}: ${e.points > 0 ? '+' : ''}${e.points} points`,
      ].join('  '),
    ),
  ];
}

/** Each event the order's commit published, and what each subscribing group made of it. */
function hopLines(hops: readonly OutboxHop[]): string[] {
  return hops.flatMap((hop) =>
    hop.events.map((e) => {
      const downstream = e.downstream.map((d) => `${d.group} ${d.record?.status ?? 'no record'}`).join(', ');
      return `  outbox ${hop.group}: event ${shortMsgId(e.eventId)} ${e.tag} ${e.status} → ${downstream || 'no subscriber'}`;
    }),
  );
}

/** The msgIds in a trace's words, shortened as in its msgId column. */
const shortMsgIds = (text: string) => text.replace(/\b[0-9A-F]{32,56}\b/g, (id) => shortMsgId(id));

async function trace(
  result: LocalRunResult,
  order: TracedOrder,
  group: string,
  extra: readonly string[],
  dynamoDb: DynamoDBDocumentClient,
): Promise<{ argv: string[]; code: number; output: string }> {
  let stdout = '';
  let stderr = '';
  const argv = ['trace', order.orderNo, '--group', group, '--user', order.userId];
  const target = ['--endpoint', result.endpoint, '--prefix', result.resources.prefix, '--quiet'];
  const code = await runOps([...argv, ...extra, ...target], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { isTTY: false, write: (s: string) => (stderr += s) },
    dynamoDb,
  });
  return { argv, code, output: stdout + stderr };
}

async function withDynamoDb(result: LocalRunResult, use: (dynamoDb: DynamoDBDocumentClient) => Promise<void>) {
  const dynamoDb = createDynamoDb(result.resources.aws);
  try {
    await use(dynamoDb);
  } finally {
    dynamoDb.destroy();
  }
}

export function shippingText(s: LogShippingAccount): string {
  return wrapped(
    `Function logs: ${s.lines} lines shipped to ${logGroupsText(s.logGroups)} in ${s.calls} PutLogEvents calls ` +
      `(${s.putMs} ms beside the consumers; the run waited ${s.finalFlushMs} ms for the last` +
      `${s.refusedBatches > 0 ? `; ${s.refusedBatches} batches refused and retried` : ''}).`,
    WIDTH,
  ).join('\n');
}

/** `/aws/lambda/local-1a2b-<function>` for the run's log groups, which differ only in the function's name. */
function logGroupsText(groups: readonly string[]): string {
  if (groups.length < 2) return groups.join('');
  let common = groups[0]!;
  for (const g of groups) while (!g.startsWith(common)) common = common.slice(0, -1);
  const cut = common.lastIndexOf('-') + 1;
  return `${groups[0]!.slice(0, cut)}<function> (${groups.length} functions)`;
}
