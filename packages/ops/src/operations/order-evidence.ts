import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { LedgerEntry } from '@rocketmq-lambda/consumers/points/index.ts';
import {
  type ConsumerGroupDefinition,
  functionLogGroupName,
  recordId,
  recordIdPrefix,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { DedupRecord } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { type DeadLetter, readDeadLetters, releaseDeadLetters } from './dead-letter-inspection.ts';
import { TargetResolutionError } from './errors.ts';
import { type ConsumerLogLine, type LogSubject, readConsumerLogLines } from './function-logs.ts';
import { groupQueuesOf, type PointTableNames, type TargetOptions } from './operations-target.ts';
import { isMsgId, orderNoOfKey } from './order-keys.ts';

/**
 * What the system keeps about one order, read and not yet interpreted: each group's log lines,
 * dedup records, failure counts and dead letters, and the points ledger. Every read is a read:
 * the DLQs are received with a short visibility timeout and made visible again at once, as
 * `ops dlq list` does.
 */
export interface OrderEvidence {
  /** What the operator asked about. */
  readonly subject: string;
  readonly orderNo: string | undefined;
  readonly groups: GroupEvidence[];
  readonly ledger: LedgerEvidence | undefined;
  /** What could not be read, in words (a log group or queue not found). */
  readonly gaps: string[];
}

export interface GroupEvidence {
  readonly group: string;
  readonly ordering: 'concurrent' | 'orderly';
  readonly logGroup: string;
  readonly lines: ConsumerLogLine[];
  readonly records: DedupRecord[];
  /** Orderly groups: an SQS message's own failures (packages/runtime/src/consumer/failures/failure-counter.ts). */
  readonly failureCounts: Array<{ sqsMessageId: string; failures: number }>;
  readonly deadLetterQueue: string | undefined;
  readonly letters: DeadLetter[];
}

export interface LedgerEvidence {
  readonly tables: PointTableNames;
  /** The order's ledger entries (awards and reversals), oldest first. */
  readonly entries: LedgerEntry[];
  readonly balances: Array<{ userId: string; balance: number | null }>;
  /** How the entries were found: a query of the named user's partition, or a scan of the whole ledger. */
  readonly readBy: 'query' | 'scan';
}

export interface EvidenceSources {
  readonly logs: CloudWatchLogsClient;
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly target: TargetOptions;
  readonly idempotencyTable: string;
  /** The points tables, when the trace should read the ledger. */
  readonly pointTables: PointTableNames | undefined;
  readonly groups: readonly ConsumerGroupDefinition[];
  /** Log group per consumer group (default: as Lambda names `<prefix>-<functionName>`'s). */
  readonly logGroupOf?: (definition: ConsumerGroupDefinition) => string;
  /** The order's user: the ledger is then queried in that user's partition instead of scanned. */
  readonly userId?: string;
  /** Only log lines written after this time (epoch ms). */
  readonly startTime?: number;
}

/**
 * Reads the evidence about `subject`, an order number or a msgId. For a msgId the lines that
 * name it give the order number (its key), and the order's lines are read then: the story of
 * a message is the story of its order, re-sends with other msgIds included.
 */
export async function readOrderEvidence(subject: string, sources: EvidenceSources): Promise<OrderEvidence> {
  const gaps: string[] = [];
  const logGroupOf =
    sources.logGroupOf ??
    ((d: ConsumerGroupDefinition) => functionLogGroupName(sources.target.prefix ?? '', d.functionName));
  const logGroups = sources.groups.map(logGroupOf);
  const read = async (s: LogSubject) => {
    const out = await readConsumerLogLines({ logs: sources.logs, logGroups, subject: s, startTime: sources.startTime });
    for (const g of out.missingGroups) if (!gaps.some((x) => x.includes(g))) gaps.push(`log group ${g} not found`);
    return out.lines;
  };
  const asked = isMsgId(subject) ? subject.toUpperCase() : undefined;
  const letters = await lettersOfGroups(sources, gaps);
  let lines = asked ? await read({ msgIds: [asked] }) : [];
  const orderNo = asked ? orderNoOf(lines, letters, asked) : subject;
  // The order's lines first: lines of one millisecond keep the order CloudWatch Logs gave them.
  if (orderNo) lines = mergeLines(await read({ orderNo }), lines);
  const msgIds = new Set([...lines.map((l) => l.msgId?.toUpperCase()), asked].filter((m) => m !== undefined));
  const groups: GroupEvidence[] = [];
  for (const definition of sources.groups) {
    const logGroup = logGroupOf(definition);
    const own = lines.filter((l) => l.logGroup === logGroup);
    const queue = letters.get(definition.group);
    groups.push({
      group: definition.group,
      ordering: definition.ordering ?? 'concurrent',
      logGroup,
      lines: own,
      records: await dedupRecords(sources, definition.group, orderNo, own),
      failureCounts: definition.ordering === 'orderly' ? await failureCounts(sources, definition.group, own) : [],
      deadLetterQueue: queue?.name,
      letters: (queue?.letters ?? []).filter((l) => letterIsAbout(l, orderNo, msgIds)),
    });
  }
  const readsLedger = sources.groups.some((g) => g.tables.includes('ledger'));
  const ledger = orderNo && readsLedger && sources.pointTables ? await ledgerOf(sources, orderNo) : undefined;
  return { subject, orderNo, groups, ledger, gaps };
}

function mergeLines(a: ConsumerLogLine[], b: ConsumerLogLine[]): ConsumerLogLine[] {
  const id = (l: ConsumerLogLine) => `${l.logGroup}\u0000${l.at}\u0000${l.sqsMessageId}\u0000${l.message}`;
  const seen = new Set(a.map(id));
  return [...a, ...b.filter((l) => !seen.has(id(l)))].sort((x, y) => x.at - y.at);
}

function orderNoOf(
  lines: readonly ConsumerLogLine[],
  letters: Map<string, { letters: DeadLetter[] }>,
  msgId: string,
): string | undefined {
  const key = lines.find((l) => l.key !== undefined)?.key;
  if (key) return orderNoOfKey(key);
  for (const { letters: all } of letters.values()) {
    const letter = all.find((l) => l.envelope?.msgId === msgId || l.failure?.msgId?.toUpperCase() === msgId);
    const found = letter?.failure?.key ?? letter?.envelope?.keys[0];
    if (found) return orderNoOfKey(found);
  }
  return undefined;
}

function letterIsAbout(letter: DeadLetter, orderNo: string | undefined, msgIds: ReadonlySet<string>): boolean {
  const ids = [letter.envelope?.msgId, letter.failure?.msgId].filter((m) => m !== undefined);
  if (ids.some((m) => msgIds.has(m.toUpperCase()))) return true;
  if (!orderNo) return false;
  const keys = [letter.failure?.key, ...(letter.envelope?.keys ?? [])].filter((k) => k !== undefined);
  return keys.some((k) => orderNoOfKey(k) === orderNo);
}

/** Every group's DLQ, read once (receive, then visible again at once). */
async function lettersOfGroups(
  sources: EvidenceSources,
  gaps: string[],
): Promise<Map<string, { name: string; letters: DeadLetter[] }>> {
  const out = new Map<string, { name: string; letters: DeadLetter[] }>();
  for (const definition of sources.groups) {
    let queues: Awaited<ReturnType<typeof groupQueuesOf>>;
    try {
      queues = await groupQueuesOf(sources.sqs, { ...sources.target, group: definition.group });
    } catch (error) {
      if (!(error instanceof TargetResolutionError)) throw error;
      gaps.push(`${definition.group}: dead-letter queue not read (${error.message})`);
      continue;
    }
    const letters = await readDeadLetters({
      sqs: sources.sqs,
      queueUrl: queues.deadLetterUrl,
      visibilityTimeoutSeconds: 30,
      maxReceiveCount: queues.maxReceiveCount,
    });
    await releaseDeadLetters(sources.sqs, queues.deadLetterUrl, letters);
    out.set(definition.group, { name: queues.deadLetterUrl.slice(queues.deadLetterUrl.lastIndexOf('/') + 1), letters });
  }
  return out;
}

/** The group's records of the order: under the order number itself and under every key its lines name. */
async function dedupRecords(
  sources: EvidenceSources,
  group: string,
  orderNo: string | undefined,
  lines: readonly ConsumerLogLine[],
): Promise<DedupRecord[]> {
  const keys = new Set([orderNo, ...lines.map((l) => l.key)].filter((k) => k !== undefined));
  const out: DedupRecord[] = [];
  for (const key of keys) {
    const { Item } = await sources.dynamoDb.send(
      new GetCommand({ TableName: sources.idempotencyTable, Key: { id: recordId(group, key) }, ConsistentRead: true }),
    );
    if (Item) out.push(Item as DedupRecord);
  }
  return out;
}

async function failureCounts(
  sources: EvidenceSources,
  group: string,
  lines: readonly ConsumerLogLine[],
): Promise<GroupEvidence['failureCounts']> {
  const out: GroupEvidence['failureCounts'] = [];
  for (const sqsMessageId of new Set(lines.map((l) => l.sqsMessageId).filter((m) => m !== undefined))) {
    const { Item } = await sources.dynamoDb.send(
      new GetCommand({
        TableName: sources.idempotencyTable,
        Key: { id: `${recordIdPrefix(group)}failures#${sqsMessageId}` },
        ConsistentRead: true,
      }),
    );
    if (Item) out.push({ sqsMessageId, failures: Number(Item.failures ?? 0) });
  }
  return out;
}

/**
 * The order's ledger entries. The ledger is keyed by user: with the user named, one query of
 * that partition; without, a scan of the whole ledger with a filter (read units for every
 * entry; the audit pays the same).
 */
async function ledgerOf(sources: EvidenceSources, orderNo: string): Promise<LedgerEvidence> {
  const tables = sources.pointTables!;
  const entries: LedgerEntry[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const common = {
      TableName: tables.ledger,
      FilterExpression: 'orderNo = :o',
      ExclusiveStartKey,
      ConsistentRead: true,
    };
    const page = sources.userId
      ? await sources.dynamoDb.send(
          new QueryCommand({
            ...common,
            KeyConditionExpression: 'userId = :u',
            ExpressionAttributeValues: { ':o': orderNo, ':u': sources.userId },
          }),
        )
      : await sources.dynamoDb.send(new ScanCommand({ ...common, ExpressionAttributeValues: { ':o': orderNo } }));
    entries.push(...((page.Items ?? []) as LedgerEntry[]));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  entries.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const balances: LedgerEvidence['balances'] = [];
  for (const userId of new Set(entries.map((e) => e.userId))) {
    const { Item } = await sources.dynamoDb.send(
      new GetCommand({ TableName: tables.accounts, Key: { userId }, ConsistentRead: true }),
    );
    balances.push({ userId, balance: typeof Item?.balance === 'number' ? Item.balance : null });
  }
  return { tables, entries, balances, readBy: sources.userId ? 'query' : 'scan' };
}
