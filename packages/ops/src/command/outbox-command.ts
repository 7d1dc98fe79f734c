import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { OutboxStatus, RELAY_MAX_RECORD_AGE_SECONDS } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  type ConfirmationChannel,
  confirmWrite,
  type OutputFormat,
  outboxTargetOf,
  readOutboxItems,
  redriveOutboxItems,
  renderOutboxList,
  renderOutboxRedrive,
  retouchStaleItems,
  type TargetOptions,
  tableLocation,
  UsageError,
} from '../operations/index.ts';

/** What `ops outbox` reads from the command line (ops.ts parses it). */
export interface OutboxValues {
  status?: string[];
  'event-id'?: string[];
  all?: boolean;
  stale?: boolean;
  apply?: boolean;
  'outbox-table'?: string;
}

export interface OutboxContext {
  format: OutputFormat;
  target: TargetOptions;
  dynamoDb: DynamoDBDocumentClient;
  now: () => Date;
  print: (text: string) => void;
  confirmation: ConfirmationChannel;
  /** `--pending-older-than`, parsed (ms): `--stale`'s threshold instead of the relay mapping's `maxRecordAge`. */
  pendingOlderThanMs?: number;
}

const LISTED: readonly OutboxStatus[] = [OutboxStatus.PENDING, OutboxStatus.FAILED];

/**
 * `ops outbox list` (PENDING and FAILED items, or `--status`'s) and `ops outbox redrive` (FAILED → PENDING, or
 * `--stale`: PENDING items the relay's stream gave up on written anew; a dry run unless `--apply`).
 * Exit 0 done, 1 some items refused (redrive), 2 an error.
 */
export async function outboxCommand(sub: string | undefined, v: OutboxValues, ctx: OutboxContext): Promise<number> {
  const target = outboxTargetOf({ ...ctx.target, outboxTable: v['outbox-table'] });
  switch (sub) {
    case 'list': {
      const statuses = statusesOf(v.status);
      const items = await readOutboxItems(ctx.dynamoDb, target.table, statuses);
      ctx.print(renderOutboxList(items, target, statuses, ctx.format, ctx.now()));
      return 0;
    }
    case 'redrive': {
      const selection = selectionOf(v, ctx);
      const dryRun = v.apply !== true;
      if (!dryRun)
        await confirmWrite(
          {
            location: await tableLocation(ctx.dynamoDb, target.table),
            resources: [['outbox table', target.table]],
            details: [selection.summary],
          },
          ctx.confirmation,
        );
      const report =
        selection.staleAfterSeconds === undefined
          ? await redriveOutboxItems({
              dynamoDb: ctx.dynamoDb,
              target,
              eventIds: selection.eventIds,
              dryRun,
              now: ctx.now,
            })
          : await retouchStaleItems({
              dynamoDb: ctx.dynamoDb,
              target,
              olderThanSeconds: selection.staleAfterSeconds,
              dryRun,
              now: ctx.now,
            });
      ctx.print(renderOutboxRedrive(report, ctx.format, ctx.now()));
      return report.refused.length > 0 ? 1 : 0;
    }
    default:
      throw new UsageError(`unknown outbox command "${sub ?? ''}": list or redrive`);
  }
}

/** Which items `outbox redrive` takes: `--event-id`s, `--all` FAILED, or `--stale` PENDING (one of them). */
function selectionOf(
  v: OutboxValues,
  ctx: Pick<OutboxContext, 'pendingOlderThanMs'>,
): { eventIds: readonly string[] | 'all-failed'; staleAfterSeconds?: number; summary: string } {
  const ids = v['event-id'] ?? [];
  const stale = v.stale === true || ctx.pendingOlderThanMs !== undefined;
  if ([ids.length > 0, v.all === true, stale].filter(Boolean).length > 1)
    throw new UsageError('choose one of --event-id, --all and --stale (--pending-older-than)');
  if (stale) {
    const staleAfterSeconds =
      ctx.pendingOlderThanMs === undefined ? RELAY_MAX_RECORD_AGE_SECONDS : Math.ceil(ctx.pendingOlderThanMs / 1000);
    return {
      eventIds: [],
      staleAfterSeconds,
      summary: `every PENDING item whose last stream record is older than ${staleAfterSeconds}s written anew (still PENDING, redriveCount + 1): the relay sends each again under its event id`,
    };
  }
  if (ids.length === 0 && !v.all)
    throw new UsageError(
      'outbox redrive needs the items: --event-id <id> (repeatable), --all (every FAILED item) or --stale (PENDING items the relay gave up on)',
    );
  return {
    eventIds: v.all ? 'all-failed' : ids,
    summary: `${v.all ? 'every FAILED item' : `items ${ids.join(', ')}`} set back to PENDING (redriveCount + 1): the relay sends each again under its event id`,
  };
}

function statusesOf(values: readonly string[] | undefined): OutboxStatus[] {
  if (!values || values.length === 0) return [...LISTED];
  const known = Object.values(OutboxStatus) as string[];
  for (const value of values)
    if (!known.includes(value)) throw new UsageError(`--status ${value}: one of ${known.join(', ')}`);
  return [...new Set(values)] as OutboxStatus[];
}
