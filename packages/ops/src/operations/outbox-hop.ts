import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  type ConsumerGroupDefinition,
  eventIdOf,
  type OutboxItem,
  outboxTableName,
  recordId,
  subscribersOf,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { DedupRecord } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { type ConsumerLogLine, readConsumerLogLines } from './function-logs.ts';

/**
 * An order across the outbox hop (docs/outbox.md): what a publishing group's commit for the order
 * wrote to its outbox (each event by its id, its status, when it was committed and relayed), and
 * what each subscribing group made of the event: its record under the event id and its log lines.
 *
 *   award (orderNo) ─► outbox item (eventIdOf(group, orderNo, i)) ─► relay ─► subscriber record (group#eventId)
 *
 * The event ids are derived, not searched: item i of the order is `eventIdOf(group, orderNo, i)`, read
 * until the first index with no item, so the hop costs a few GetItems and no scan.
 */
export interface OutboxHop {
  readonly group: string;
  readonly table: string;
  readonly events: OutboxEventStory[];
}

export interface OutboxEventStory {
  readonly eventId: string;
  readonly index: number;
  readonly topic: string;
  readonly tag: string;
  readonly target: string;
  readonly status: string;
  readonly committedAt: string;
  readonly relayedAt?: string;
  readonly failureReason?: string;
  readonly redriveCount: number;
  readonly downstream: DownstreamStory[];
}

export interface DownstreamStory {
  readonly group: string;
  readonly logGroup: string;
  /** The subscriber's record of the event (`recordId(group, eventId)`), if it has one. */
  readonly record?: Pick<DedupRecord, 'status' | 'firstMsgId' | 'createdAt'> & {
    readonly lastMsgId?: string;
    readonly result?: unknown;
  };
  readonly lines: ReadonlyArray<Pick<ConsumerLogLine, 'at' | 'msgId' | 'outcome' | 'disposition' | 'reason'>>;
}

/** Items an order may publish at most: the hop stops at the first index with none. */
const MAX_EVENTS_PER_ORDER = 32;

export interface OutboxHopSources {
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly logs: CloudWatchLogsClient;
  readonly prefix: string;
  readonly idempotencyTable: string;
  /** The publishing groups whose outbox the order may have written to. */
  readonly publishers: readonly ConsumerGroupDefinition[];
  readonly catalogue: readonly ConsumerGroupDefinition[];
  readonly logGroupOf: (definition: ConsumerGroupDefinition) => string;
  readonly startTime?: number;
}

/** The order's hops, one per publishing group that wrote anything for it; `gaps` gets what could not be read. */
export async function readOutboxHops(orderNo: string, sources: OutboxHopSources, gaps: string[]): Promise<OutboxHop[]> {
  const hops: OutboxHop[] = [];
  for (const publisher of sources.publishers) {
    const table = outboxTableName(sources.prefix, publisher.group);
    let items: OutboxItem[];
    try {
      items = await itemsOf(sources.dynamoDb, table, publisher.group, orderNo);
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
      gaps.push(`outbox table ${table} not found`);
      continue;
    }
    if (items.length === 0) continue;
    const events: OutboxEventStory[] = [];
    for (const item of items) events.push(await eventStoryOf(item, sources, gaps));
    hops.push({ group: publisher.group, table, events });
  }
  return hops;
}

async function itemsOf(
  dynamoDb: DynamoDBDocumentClient,
  table: string,
  group: string,
  orderNo: string,
): Promise<OutboxItem[]> {
  const items: OutboxItem[] = [];
  for (let index = 0; index < MAX_EVENTS_PER_ORDER; index++) {
    const { Item } = await dynamoDb.send(
      new GetCommand({ TableName: table, Key: { eventId: eventIdOf(group, orderNo, index) }, ConsistentRead: true }),
    );
    if (!Item) break;
    items.push(Item as OutboxItem);
  }
  return items;
}

async function eventStoryOf(item: OutboxItem, sources: OutboxHopSources, gaps: string[]): Promise<OutboxEventStory> {
  const downstream: DownstreamStory[] = [];
  for (const subscriber of subscribersOf(item.topic, item.tag, sources.catalogue)) {
    const logGroup = sources.logGroupOf(subscriber);
    const { Item } = await sources.dynamoDb.send(
      new GetCommand({
        TableName: sources.idempotencyTable,
        Key: { id: recordId(subscriber.group, item.eventId) },
        ConsistentRead: true,
      }),
    );
    const read = await readConsumerLogLines({
      logs: sources.logs,
      logGroups: [logGroup],
      subject: { orderNo: item.eventId },
      startTime: sources.startTime,
    });
    for (const g of read.missingGroups) if (!gaps.some((x) => x.includes(g))) gaps.push(`log group ${g} not found`);
    const record = Item as (DedupRecord & { lastMsgId?: string; result?: unknown }) | undefined;
    downstream.push({
      group: subscriber.group,
      logGroup,
      ...(record
        ? {
            record: {
              status: record.status,
              firstMsgId: record.firstMsgId,
              createdAt: record.createdAt,
              ...(record.lastMsgId ? { lastMsgId: record.lastMsgId } : {}),
              ...(record.result === undefined ? {} : { result: record.result }),
            },
          }
        : {}),
      lines: read.lines.map(({ at, msgId, outcome, disposition, reason }) => ({
        at,
        msgId,
        outcome,
        disposition,
        reason,
      })),
    });
  }
  return {
    eventId: item.eventId,
    index: item.index,
    topic: item.topic,
    tag: item.tag,
    target: item.target,
    status: item.status,
    committedAt: new Date(item.committedAt).toISOString(),
    ...(item.relayedAt === undefined ? {} : { relayedAt: new Date(item.relayedAt).toISOString() }),
    ...(item.failureReason === undefined ? {} : { failureReason: item.failureReason }),
    redriveCount: item.redriveCount ?? 0,
    downstream,
  };
}

/** The hops as text, after the order's own story. */
export function renderOutboxHopsText(hops: readonly OutboxHop[]): string {
  if (hops.length === 0) return '';
  const out: string[] = [];
  for (const hop of hops) {
    out.push(`Across the outbox of ${hop.group} (${hop.table}):`);
    for (const e of hop.events) {
      const relayed = e.relayedAt ? `, relayed ${e.relayedAt}` : '';
      const failed = e.failureReason ? `, reason: ${e.failureReason}` : '';
      const redriven = e.redriveCount > 0 ? `, redriven ${e.redriveCount}×` : '';
      out.push(
        `  event ${e.eventId} (#${e.index}) ${e.topic}:${e.tag} → ${e.target}: ${e.status}, committed ${e.committedAt}${relayed}${failed}${redriven}`,
      );
      for (const d of e.downstream) {
        const r = d.record;
        out.push(
          r
            ? `    ${d.group}: record ${r.status} since ${r.createdAt} (first msgId ${r.firstMsgId}${r.lastMsgId ? `, last ${r.lastMsgId}` : ''})${r.result === undefined ? '' : `, result ${JSON.stringify(r.result)}`}`
            : `    ${d.group}: no record of the event`,
        );
        for (const l of d.lines)
          out.push(
            `      ${new Date(l.at).toISOString()} ${l.msgId ?? '?'} ${l.outcome ?? ''}${l.disposition ? ` → ${l.disposition}` : ''}${l.reason ? ` (${l.reason})` : ''}`,
          );
      }
    }
  }
  return out.join('\n');
}
