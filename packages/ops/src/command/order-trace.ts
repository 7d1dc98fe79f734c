import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  checkTraceSubject,
  idempotencyTableOf,
  isEmptyTrace,
  NothingToTraceError,
  type OutputFormat,
  orderTraceOf,
  pointTablesOf,
  readOrderEvidence,
  renderOrderTraceMermaid,
  renderOrderTraceText,
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
  if (isEmptyTrace(trace))
    throw new NothingToTraceError(
      `nothing about ${subject} in the logs, dedup records, DLQs or ledger of ${groups.map((g) => g.group).join(', ')}${
        trace.gaps.length > 0 ? ` (not read: ${trace.gaps.join('; ')})` : ''
      }`,
    );
  ctx.print(
    ctx.format === 'json'
      ? JSON.stringify(trace, null, 2)
      : v.mermaid
        ? renderOrderTraceMermaid(trace)
        : renderOrderTraceText(trace, ctx.region),
  );
  return trace.findings.length > 0 ? 1 : 0;
}
