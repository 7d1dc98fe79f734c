import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { OutboxStatus } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  type ConfirmationChannel,
  confirmWrite,
  type OutputFormat,
  outboxTargetOf,
  readOutboxItems,
  redriveOutboxItems,
  renderOutboxList,
  renderOutboxRedrive,
  type TargetOptions,
  tableLocation,
  UsageError,
} from '../operations/index.ts';

/** What `ops outbox` reads from the command line (ops.ts parses it). */
export interface OutboxValues {
  status?: string[];
  'event-id'?: string[];
  all?: boolean;
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
}

const LISTED: readonly OutboxStatus[] = [OutboxStatus.PENDING, OutboxStatus.FAILED];

/**
 * `ops outbox list` (PENDING and FAILED items, or `--status`'s) and `ops outbox redrive` (FAILED → PENDING,
 * a dry run unless `--apply`). Exit 0 done, 1 some items refused (redrive), 2 an error.
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
      const ids = v['event-id'] ?? [];
      if (ids.length > 0 && v.all) throw new UsageError('choose --event-id or --all, not both');
      if (ids.length === 0 && !v.all)
        throw new UsageError(
          'outbox redrive needs the items: --event-id <id> (repeatable) or --all (every FAILED item)',
        );
      const dryRun = v.apply !== true;
      if (!dryRun)
        await confirmWrite(
          {
            location: await tableLocation(ctx.dynamoDb, target.table),
            resources: [['outbox table', target.table]],
            details: [
              `${v.all ? 'every FAILED item' : `items ${ids.join(', ')}`} set back to PENDING (redriveCount + 1): the relay sends each again under its event id`,
            ],
          },
          ctx.confirmation,
        );
      const report = await redriveOutboxItems({
        dynamoDb: ctx.dynamoDb,
        target,
        eventIds: v.all ? 'all-failed' : ids,
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

function statusesOf(values: readonly string[] | undefined): OutboxStatus[] {
  if (!values || values.length === 0) return [...LISTED];
  const known = Object.values(OutboxStatus) as string[];
  for (const value of values)
    if (!known.includes(value)) throw new UsageError(`--status ${value}: one of ${known.join(', ')}`);
  return [...new Set(values)] as OutboxStatus[];
}
