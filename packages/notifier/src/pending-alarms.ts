import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { AlarmNotification } from './alarm-event.ts';
import { DELIVERED_PREFIX, PENDING_PREFIX, robotPartitionKey } from './alarm-storm-table.ts';
import { truncateText } from './markdown-text.ts';

/**
 * The backlog of alarms a robot still has to post. Every notification is written here before any
 * attempt to send it, and leaves only after DingTalk answered `errcode 0` for a message that
 * contained it; that is what makes folding a storm into summaries safe.
 */
export interface PendingAlarm {
  /** Orders the backlog: SNS timestamp, then MessageId. */
  key: string;
  claimedBy: string | null;
  leaseUntil: number | null;
}

export interface PendingAlarmStore {
  /** Idempotent: a Lambda retry of a queued or already delivered alarm changes nothing. */
  add(robotId: string, key: string, notification: AlarmNotification, now: number): Promise<void>;
  /** The alarm's claim state, or `null` once it has been delivered. */
  get(robotId: string, key: string): Promise<PendingAlarm | null>;
  /** Undelivered alarms, oldest first; only keys and claims, so it stays cheap. */
  list(robotId: string): Promise<PendingAlarm[]>;
  /**
   * The alarm, if `claimant` now holds it until `leaseUntil` (it was free, its lease had run out,
   * or it was already `claimant`'s); `null` if someone else holds it or it was delivered.
   */
  claim(
    robotId: string,
    key: string,
    claimant: string,
    leaseUntil: number,
    now: number,
  ): Promise<AlarmNotification | null>;
  markDelivered(robotId: string, keys: string[], now: number): Promise<void>;
}

export function pendingKey(n: AlarmNotification): string {
  return `${n.receivedAt}#${n.id}`;
}

/** The stored copy only feeds summary lines; the full text stays with the invocation that received it. */
const STORED_TEXT_CHARS = 4_000;
/** Tombstones outlive Lambda's async retries (at most 6 h) with room to spare. */
const TOMBSTONE_SECONDS = 24 * 3600;

export function compactForStorage(n: AlarmNotification): AlarmNotification {
  if (n.kind === 'unrecognized') return { ...n, body: truncateText(n.body, STORED_TEXT_CHARS) };
  return {
    ...n,
    alarm: {
      ...n.alarm,
      reason: truncateText(n.alarm.reason, STORED_TEXT_CHARS),
      description: n.alarm.description === null ? null : truncateText(n.alarm.description, STORED_TEXT_CHARS),
    },
  };
}

export class DynamoDbPendingAlarms implements PendingAlarmStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private pendingItemKey(robotId: string, key: string) {
    return { pk: robotPartitionKey(robotId), sk: `${PENDING_PREFIX}${key}` };
  }

  private deliveredItemKey(robotId: string, key: string) {
    return { pk: robotPartitionKey(robotId), sk: `${DELIVERED_PREFIX}${key}` };
  }

  async add(robotId: string, key: string, notification: AlarmNotification, now: number): Promise<void> {
    const tombstone = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: this.deliveredItemKey(robotId, key), ConsistentRead: true }),
    );
    if (tombstone.Item) return;
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...this.pendingItemKey(robotId, key),
            notification: JSON.stringify(compactForStorage(notification)),
            addedAt: now,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
  }

  async get(robotId: string, key: string): Promise<PendingAlarm | null> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: this.pendingItemKey(robotId, key),
        ConsistentRead: true,
        ProjectionExpression: 'sk, claimedBy, leaseUntil',
      }),
    );
    return Item ? toPending(Item) : null;
  }

  async list(robotId: string): Promise<PendingAlarm[]> {
    const out: PendingAlarm[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': robotPartitionKey(robotId), ':prefix': PENDING_PREFIX },
          ProjectionExpression: 'sk, claimedBy, leaseUntil',
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      out.push(...(page.Items ?? []).map(toPending));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return out;
  }

  async claim(
    robotId: string,
    key: string,
    claimant: string,
    leaseUntil: number,
    now: number,
  ): Promise<AlarmNotification | null> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.pendingItemKey(robotId, key),
          UpdateExpression: 'SET claimedBy = :c, leaseUntil = :l',
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now OR claimedBy = :c)',
          ExpressionAttributeValues: { ':c': claimant, ':l': leaseUntil, ':now': now },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return JSON.parse(String(out.Attributes?.notification)) as AlarmNotification;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return null;
      throw err;
    }
  }

  /** Tombstones first, then the deletes: a crash in between can cause a repeat, never a loss. */
  async markDelivered(robotId: string, keys: string[], now: number): Promise<void> {
    const expiresAt = Math.floor(now / 1000) + TOMBSTONE_SECONDS;
    await this.batchWrite(
      keys.map((key) => ({
        PutRequest: { Item: { ...this.deliveredItemKey(robotId, key), deliveredAt: now, expiresAt } },
      })),
    );
    await this.batchWrite(keys.map((key) => ({ DeleteRequest: { Key: this.pendingItemKey(robotId, key) } })));
  }

  private async batchWrite(requests: Record<string, unknown>[]): Promise<void> {
    for (let i = 0; i < requests.length; i += 25) {
      let batch = requests.slice(i, i + 25);
      for (let attempt = 0; batch.length > 0; attempt++) {
        if (attempt >= 10) throw new Error('DynamoDB left writes unprocessed after 10 attempts');
        const out = await this.db.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: batch } }));
        batch = (out.UnprocessedItems?.[this.tableName] ?? []) as Record<string, unknown>[];
      }
    }
  }
}

function toPending(item: Record<string, unknown>): PendingAlarm {
  return {
    key: String(item.sk).slice(PENDING_PREFIX.length),
    claimedBy: typeof item.claimedBy === 'string' ? item.claimedBy : null,
    leaseUntil: typeof item.leaseUntil === 'number' ? item.leaseUntil : null,
  };
}

/** Same contract in memory, for a single process (the `alarm:test` command). */
export class InMemoryPendingAlarms implements PendingAlarmStore {
  private readonly pending = new Map<string, PendingAlarm & { notification: AlarmNotification }>();
  private readonly delivered = new Set<string>();

  async add(robotId: string, key: string, notification: AlarmNotification): Promise<void> {
    const id = `${robotId}|${key}`;
    if (this.delivered.has(id) || this.pending.has(id)) return;
    this.pending.set(id, { key, notification: compactForStorage(notification), claimedBy: null, leaseUntil: null });
  }

  async get(robotId: string, key: string): Promise<PendingAlarm | null> {
    const item = this.pending.get(`${robotId}|${key}`);
    return item ? { key: item.key, claimedBy: item.claimedBy, leaseUntil: item.leaseUntil } : null;
  }

  async list(robotId: string): Promise<PendingAlarm[]> {
    return [...this.pending.entries()]
      .filter(([id]) => id.startsWith(`${robotId}|`))
      .map(([, { key, claimedBy, leaseUntil }]) => ({ key, claimedBy, leaseUntil }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async claim(
    robotId: string,
    key: string,
    claimant: string,
    leaseUntil: number,
    now: number,
  ): Promise<AlarmNotification | null> {
    const item = this.pending.get(`${robotId}|${key}`);
    if (!item) return null;
    if (item.leaseUntil !== null && item.leaseUntil >= now && item.claimedBy !== claimant) return null;
    item.claimedBy = claimant;
    item.leaseUntil = leaseUntil;
    return item.notification;
  }

  async markDelivered(robotId: string, keys: string[]): Promise<void> {
    for (const key of keys) {
      this.pending.delete(`${robotId}|${key}`);
      this.delivered.add(`${robotId}|${key}`);
    }
  }
}
