import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  type OutboxItem,
  OutboxStatus,
  outboxRedriveHorizonOf,
  outboxTableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { TargetResolutionError } from './errors.ts';

/**
 * A publishing group's outbox table (docs/outbox.md), as `ops outbox` reads and redrives it: its
 * PENDING items (committed, not yet relayed: the relay is behind or down) and FAILED ones (the
 * relay could not send them; their notice is in the relay's DLQ), and the way a FAILED item goes
 * back to the relay: a conditional update to PENDING, which the table's stream delivers as a MODIFY.
 */
export interface OutboxTarget {
  readonly group: string;
  readonly table: string;
  /** `outboxRedriveHorizonOf`: seconds after its commit an item may still be redriven; undefined when unknown. */
  readonly redriveHorizonSeconds: number | undefined;
}

/** The group named, else the one group of the catalogue that publishes; the table after the prefix or named. */
export function outboxTargetOf(options: { group?: string; prefix?: string; outboxTable?: string }): OutboxTarget {
  const publishing = (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).filter((g) => g.publishes?.length);
  const definition = options.group
    ? publishing.find((g) => g.group === options.group)
    : publishing.length === 1
      ? publishing[0]
      : undefined;
  if (!definition) {
    const names = publishing.map((g) => g.group).join(', ');
    throw new TargetResolutionError(
      options.group
        ? `${options.group} publishes nothing (no publishes in its catalogue entry): the publishing groups are ${names}`
        : `name the publishing group: --group <${names}>`,
    );
  }
  const table = options.outboxTable ?? (options.prefix ? outboxTableName(options.prefix, definition.group) : undefined);
  if (!table) throw new TargetResolutionError('name the outbox table: --prefix <deployment prefix>, or --outbox-table');
  return { group: definition.group, table, redriveHorizonSeconds: outboxRedriveHorizonOf(definition) };
}

/** The items of the given statuses, oldest commit first (a scan: the table holds one item per message for its TTL). */
export async function readOutboxItems(
  dynamoDb: DynamoDBDocumentClient,
  table: string,
  statuses: readonly OutboxStatus[],
): Promise<OutboxItem[]> {
  const items: OutboxItem[] = [];
  const values = Object.fromEntries(statuses.map((s, i) => [`:s${i}`, s]));
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamoDb.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: `#status IN (${Object.keys(values).join(', ')})`,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: values,
        ExclusiveStartKey,
        ConsistentRead: true,
      }),
    );
    items.push(...((page.Items ?? []) as OutboxItem[]));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items.sort((a, b) => a.committedAt - b.committedAt);
}

/** Why an item was not set back to PENDING. */
export const OutboxRefusal = {
  NOT_FOUND: 'NOT_FOUND',
  /** Only a FAILED item is redriven: a PENDING one is on its way, a RELAYED one was sent. */
  NOT_FAILED: 'NOT_FAILED',
  /** Its relayed copy would be dead-lettered downstream as too old to be deduplicated. */
  PAST_REDRIVE_HORIZON: 'PAST_REDRIVE_HORIZON',
  /** `--stale`: no longer a PENDING item whose last stream record is past the threshold (relayed, or touched since). */
  NOT_STALE: 'NOT_STALE',
} as const;
export type OutboxRefusal = (typeof OutboxRefusal)[keyof typeof OutboxRefusal];

export interface OutboxRedriveReport {
  readonly group: string;
  readonly table: string;
  readonly dryRun: boolean;
  /**
   * `--stale`: the PENDING items whose last stream record is older than this many seconds were written anew
   * (`retouchStaleItems`); absent: FAILED items were set back to PENDING.
   */
  readonly staleAfterSeconds?: number;
  /** Set back to PENDING, or (stale) written anew (dry run: would be). */
  readonly redriven: OutboxItem[];
  readonly refused: Array<{ eventId: string; item?: OutboxItem; reason: OutboxRefusal; why: string }>;
}

/**
 * Sets FAILED items back to PENDING, each in a conditional update (status still FAILED, committed
 * inside the redrive horizon), `redriveCount` + 1. The stream delivers the update to the relay,
 * which sends the item again under the same event id: a subscriber that already has it suppresses
 * the copy. An item past the horizon is refused: its copy would be born too long ago for any
 * subscriber to tell it from a duplicate whose record has expired (PAST_REDRIVE_HORIZON downstream).
 */
export async function redriveOutboxItems(options: {
  dynamoDb: DynamoDBDocumentClient;
  target: OutboxTarget;
  /** The items to redrive: these event ids, or every FAILED item. */
  eventIds: readonly string[] | 'all-failed';
  dryRun: boolean;
  now: () => Date;
}): Promise<OutboxRedriveReport> {
  const { dynamoDb, target } = options;
  const candidates =
    options.eventIds === 'all-failed'
      ? (await readOutboxItems(dynamoDb, target.table, [OutboxStatus.FAILED])).map((item) => ({
          eventId: item.eventId,
          item,
        }))
      : await Promise.all(
          options.eventIds.map(async (eventId) => ({ eventId, item: await readItem(options, eventId) })),
        );
  const report: OutboxRedriveReport = {
    group: target.group,
    table: target.table,
    dryRun: options.dryRun,
    redriven: [],
    refused: [],
  };
  for (const { eventId, item } of candidates) {
    const refusal = refusalOf(item, target, options.now().getTime());
    if (refusal) report.refused.push({ eventId, ...(item ? { item } : {}), ...refusal });
    else if (options.dryRun) report.redriven.push(item!);
    else {
      const moved = await setPending(options, item!);
      if (moved) report.redriven.push(moved);
      else {
        // Changed between the read and the write (the relay, another operator): read what it is now.
        const now = await readItem(options, eventId);
        const why = refusalOf(now, target, options.now().getTime()) ?? {
          reason: OutboxRefusal.NOT_FAILED,
          why: 'the item changed while it was being redriven; run the command again',
        };
        report.refused.push({ eventId, ...(now ? { item: now } : {}), ...why });
      }
    }
  }
  return report;
}

async function readItem(options: { dynamoDb: DynamoDBDocumentClient; target: OutboxTarget }, eventId: string) {
  const { Item } = await options.dynamoDb.send(
    new GetCommand({ TableName: options.target.table, Key: { eventId }, ConsistentRead: true }),
  );
  return Item as OutboxItem | undefined;
}

/** The oldest commit a redrive accepts (epoch ms), or none when the horizon is unknown. */
function oldestCommitAccepted(target: OutboxTarget, nowMs: number): number | undefined {
  return target.redriveHorizonSeconds === undefined ? undefined : nowMs - target.redriveHorizonSeconds * 1000;
}

function refusalOf(
  item: OutboxItem | undefined,
  target: OutboxTarget,
  nowMs: number,
): { reason: OutboxRefusal; why: string } | undefined {
  if (!item) return { reason: OutboxRefusal.NOT_FOUND, why: `no item with this event id in ${target.table}` };
  if (item.status !== OutboxStatus.FAILED)
    return {
      reason: OutboxRefusal.NOT_FAILED,
      why: `status is ${item.status}: ${item.status === OutboxStatus.RELAYED ? 'it was sent' : 'the relay has it'}; only FAILED items are redriven`,
    };
  return horizonRefusal(item, target, nowMs);
}

/** An item committed before the redrive horizon: its relayed copy would be too old for its subscribers. */
function horizonRefusal(
  item: OutboxItem,
  target: OutboxTarget,
  nowMs: number,
): { reason: OutboxRefusal; why: string } | undefined {
  const oldest = oldestCommitAccepted(target, nowMs);
  if (oldest !== undefined && item.committedAt < oldest)
    return {
      reason: OutboxRefusal.PAST_REDRIVE_HORIZON,
      why:
        `committed ${new Date(item.committedAt).toISOString()}, more than ${target.redriveHorizonSeconds}s ago: ` +
        'its subscribers would dead-letter the copy as PAST_REDRIVE_HORIZON (their dedup records may be gone)',
    };
  return undefined;
}

/** The conditional update FAILED → PENDING; undefined when the condition no longer holds. */
function setPending(
  options: { dynamoDb: DynamoDBDocumentClient; target: OutboxTarget; now: () => Date },
  item: OutboxItem,
): Promise<OutboxItem | undefined> {
  return redriveWrite(options, item, {
    set: '#status = :pending, ',
    condition: '#status = :failed',
    values: { ':pending': OutboxStatus.PENDING, ':failed': OutboxStatus.FAILED },
  });
}

/**
 * One redrive's conditional write: `set` and the redrive count and time, if `condition` holds and the
 * item was committed inside the redrive horizon; undefined when it no longer does.
 */
async function redriveWrite(
  options: { dynamoDb: DynamoDBDocumentClient; target: OutboxTarget; now: () => Date },
  item: OutboxItem,
  write: { set: string; condition: string; values: Record<string, unknown> },
): Promise<OutboxItem | undefined> {
  const nowMs = options.now().getTime();
  const oldest = oldestCommitAccepted(options.target, nowMs);
  try {
    const { Attributes } = await options.dynamoDb.send(
      new UpdateCommand({
        TableName: options.target.table,
        Key: { eventId: item.eventId },
        UpdateExpression: `SET ${write.set}redriveCount = if_not_exists(redriveCount, :zero) + :one, redrivenAt = :now`,
        ConditionExpression: `${write.condition}${oldest === undefined ? '' : ' AND committedAt >= :oldest'}`,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ...write.values,
          ':zero': 0,
          ':one': 1,
          ':now': nowMs,
          ...(oldest === undefined ? {} : { ':oldest': oldest }),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes as OutboxItem;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** When the item's latest stream record was written: its last redrive, else its commit (epoch ms). */
export function lastStreamRecordAt(item: OutboxItem): number {
  return item.redrivenAt ?? item.committedAt;
}

/**
 * Writes anew the PENDING items the relay will never see again: those whose latest stream record (the
 * commit's INSERT, or the last redrive's MODIFY) is older than `olderThanSeconds` (default
 * `RELAY_MAX_RECORD_AGE_SECONDS`, the relay mapping's `maxRecordAge`: past it the mapping has given up on
 * the record and left only its batch's shard and sequence range in the relay DLQ). Each is a conditional
 * update that keeps it PENDING (still PENDING, still that stale, committed inside the redrive horizon),
 * `redriveCount` + 1 and `redrivenAt`: a MODIFY whose new image is PENDING, which the stream filter passes
 * to the relay, which sends it under its event id (a subscriber that has it already suppresses the copy).
 * An item past the horizon is refused as `redriveOutboxItems` refuses one.
 */
export async function retouchStaleItems(options: {
  dynamoDb: DynamoDBDocumentClient;
  target: OutboxTarget;
  olderThanSeconds: number;
  dryRun: boolean;
  now: () => Date;
}): Promise<OutboxRedriveReport> {
  const { dynamoDb, target, olderThanSeconds } = options;
  const staleBefore = options.now().getTime() - olderThanSeconds * 1000;
  const stale = (await readOutboxItems(dynamoDb, target.table, [OutboxStatus.PENDING])).filter(
    (item) => lastStreamRecordAt(item) < staleBefore,
  );
  const report: OutboxRedriveReport = {
    group: target.group,
    table: target.table,
    dryRun: options.dryRun,
    staleAfterSeconds: olderThanSeconds,
    redriven: [],
    refused: [],
  };
  for (const item of stale) {
    const refusal = horizonRefusal(item, target, options.now().getTime());
    if (refusal) report.refused.push({ eventId: item.eventId, item, ...refusal });
    else if (options.dryRun) report.redriven.push(item);
    else {
      const touched = await touchPending(options, item, staleBefore);
      if (touched) report.redriven.push(touched);
      else {
        const now = await readItem(options, item.eventId);
        report.refused.push({
          eventId: item.eventId,
          ...(now ? { item: now } : {}),
          reason: OutboxRefusal.NOT_STALE,
          why: `it changed while it was being touched (now ${now?.status ?? 'gone'}): the relay has it, or someone redrove it; nothing written`,
        });
      }
    }
  }
  return report;
}

/** The conditional update that keeps a stale PENDING item PENDING and writes it anew; undefined when it no longer is stale. */
function touchPending(
  options: { dynamoDb: DynamoDBDocumentClient; target: OutboxTarget; now: () => Date },
  item: OutboxItem,
  staleBefore: number,
): Promise<OutboxItem | undefined> {
  return redriveWrite(options, item, {
    set: '',
    condition:
      '#status = :pending AND (redrivenAt < :stale OR (attribute_not_exists(redrivenAt) AND committedAt < :stale))',
    values: { ':pending': OutboxStatus.PENDING, ':stale': staleBefore },
  });
}
