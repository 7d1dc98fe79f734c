import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  functionLogGroupName,
  subscribersOf,
} from '@rocketmq-lambda/runtime/config/index.ts';
import {
  checkTraceSubject,
  idempotencyTableOf,
  isEmptyTrace,
  NothingToTraceError,
  type OutboxHop,
  type OutputFormat,
  orderTraceOf,
  pointTablesOf,
  readOrderEvidence,
  readOutboxHops,
  renderOrderTraceMermaid,
  renderOrderTraceText,
  renderOutboxHopsText,
  type TargetOptions,
  UsageError,
} from '../operations/index.ts';

/** What `ops trace` reads from the command line (ops.ts parses it). */
export interface OrderTraceValues {
  mermaid?: boolean;
  user?: string;
  'log-group'?: string;
  'idempotency-table'?: string;
}

export interface OrderTraceContext {
  format: OutputFormat;
  target: TargetOptions;
  region: string;
  /** Only log lines newer than this (epoch ms). */
  startTime: number | undefined;
  logs: CloudWatchLogsClient;
  dynamoDb: DynamoDBDocumentClient;
  sqs: SQSClient;
  print: (text: string) => void;
}

/**
 * `ops trace <orderNo | msgId>`: the story of one order in every consumer group (or `--group`'s).
 * Exit 0 told, 1 the story holds findings (awards in force twice, letters waiting), 2 nothing found or an error.
 */
export async function orderTrace(subject: string | undefined, v: OrderTraceValues, ctx: OrderTraceContext) {
  if (!subject) throw new UsageError('trace wants an order number or a msgId: ops trace <orderNo | msgId>');
  if (ctx.format === 'csv') throw new UsageError('trace prints text, --json or --mermaid');
  if (v.mermaid && ctx.format === 'json') throw new UsageError('choose one of --json and --mermaid');
  if (v['log-group'] && !ctx.target.group)
    throw new UsageError("--log-group names one function's log group: give --group too");
  const groups: ConsumerGroupDefinition[] = ctx.target.group
    ? CONSUMER_GROUPS.filter((g) => g.group === ctx.target.group)
    : [...CONSUMER_GROUPS];
  if (groups.length === 0) throw new UsageError(`--group ${ctx.target.group} is not a consumer group of the catalogue`);
  const logGroup = v['log-group'];
  const readsLedger = groups.some((g) => g.tables.includes('ledger'));
  const evidence = await readOrderEvidence(checkTraceSubject(subject), {
    logs: ctx.logs,
    dynamoDb: ctx.dynamoDb,
    sqs: ctx.sqs,
    target: ctx.target,
    idempotencyTable: idempotencyTableOf({ ...ctx.target, idempotencyTable: v['idempotency-table'] }),
    pointTables: readsLedger ? pointTablesOf(ctx.target) : undefined,
    groups,
    ...(logGroup ? { logGroupOf: () => logGroup } : {}),
    ...(v.user ? { userId: v.user } : {}),
    ...(ctx.startTime === undefined ? {} : { startTime: ctx.startTime }),
  });
  const trace = orderTraceOf(evidence);
  const hops = trace.orderNo ? await outboxHopsOf(trace.orderNo, v, ctx, trace.gaps) : [];
  if (isEmptyTrace(trace) && hops.length === 0)
    throw new NothingToTraceError(
      `nothing about ${subject} in the logs, dedup records, DLQs or ledger of ${groups.map((g) => g.group).join(', ')}${
        trace.gaps.length > 0 ? ` (not read: ${trace.gaps.join('; ')})` : ''
      }`,
    );
  const hopText = renderOutboxHopsText(hops);
  ctx.print(
    ctx.format === 'json'
      ? JSON.stringify({ ...trace, outbox: hops }, null, 2)
      : v.mermaid
        ? renderOrderTraceMermaid(trace)
        : `${renderOrderTraceText(trace, ctx.region)}${hopText ? `\n\n${hopText}` : ''}`,
  );
  return trace.findings.length > 0 ? 1 : 0;
}

/**
 * The order across the outbox hop (packages/ops/src/operations/outbox-hop.ts): the catalogue's publishing groups, or with
 * `--group` those that are the group or publish to it.
 */
async function outboxHopsOf(
  orderNo: string,
  v: OrderTraceValues,
  ctx: OrderTraceContext,
  gaps: string[],
): Promise<OutboxHop[]> {
  const group = ctx.target.group;
  const publishers = (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).filter(
    (g) =>
      g.publishes?.length &&
      (!group ||
        g.group === group ||
        g.publishes.some((p) => p.tags.some((tag) => subscribersOf(p.topic, tag).some((s) => s.group === group)))),
  );
  if (publishers.length === 0) return [];
  const prefix = ctx.target.prefix;
  if (!prefix) {
    gaps.push('outbox tables not read (they are named after --prefix)');
    return [];
  }
  const logGroup = v['log-group'];
  return readOutboxHops(
    orderNo,
    {
      dynamoDb: ctx.dynamoDb,
      logs: ctx.logs,
      prefix,
      idempotencyTable: idempotencyTableOf({ ...ctx.target, idempotencyTable: v['idempotency-table'] }),
      publishers,
      catalogue: CONSUMER_GROUPS,
      logGroupOf: (d) => (logGroup && d.group === group ? logGroup : functionLogGroupName(prefix, d.functionName)),
      ...(ctx.startTime === undefined ? {} : { startTime: ctx.startTime }),
    },
    gaps,
  );
}
