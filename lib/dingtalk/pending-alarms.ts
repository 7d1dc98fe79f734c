import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AlarmNotification } from './alarm-event.ts';
import { PENDING_PREFIX, robotPartitionKey } from './alarm-storm-table.ts';
import { truncateText } from './markdown-text.ts';

/**
 * The backlog of alarms a robot still has to post. Every notification is written here before any
 * attempt to send it, and leaves only by being marked delivered after DingTalk said `errcode 0`;
 * that is what makes "fold a storm into summaries" safe: whoever holds a send permit posts the
 * whole backlog, and nothing depends on the invocation that brought an alarm still running.
 */
export interface PendingAlarm {
  /** Orders the backlog: SNS timestamp, then MessageId. */
  key: string;
  notification: AlarmNotification;
  claimedBy: string | null;
  leaseUntil: number | null;
}

export interface PendingAlarmStore {
  /** Idempotent: a Lambda retry of a delivered or queued alarm changes nothing. */
  add(robotId: string, key: string, notification: AlarmNotification, now: number): Promise<void>;
  /** Undelivered alarms, oldest first. */
  list(robotId: string): Promise<PendingAlarm[]>;
  /** True if `claimant` now holds the alarm until `leaseUntil` (free, expired, or already its own). */
  claim(robotId: string, key: string, claimant: string, leaseUntil: number, now: number): Promise<boolean>;
  release(robotId: string, keys: string[], claimant: string): Promise<void>;
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

  private itemKey(robotId: string, key: string) {
    return { pk: robotPartitionKey(robotId), sk: `${PENDING_PREFIX}${key}` };
  }

  async add(robotId: string, key: string, notification: AlarmNotification, now: number): Promise<void> {
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...this.itemKey(robotId, key),
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

  async list(robotId: string): Promise<PendingAlarm[]> {
    const out: PendingAlarm[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          FilterExpression: 'attribute_not_exists(deliveredAt)',
          ExpressionAttributeValues: { ':pk': robotPartitionKey(robotId), ':prefix': PENDING_PREFIX },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        out.push({
          key: String(item.sk).slice(PENDING_PREFIX.length),
          notification: JSON.parse(String(item.notification)) as AlarmNotification,
          claimedBy: typeof item.claimedBy === 'string' ? item.claimedBy : null,
          leaseUntil: typeof item.leaseUntil === 'number' ? item.leaseUntil : null,
        });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return out;
  }

  async claim(robotId: string, key: string, claimant: string, leaseUntil: number, now: number): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.itemKey(robotId, key),
          UpdateExpression: 'SET claimedBy = :c, leaseUntil = :l',
          ConditionExpression:
            'attribute_exists(pk) AND attribute_not_exists(deliveredAt) AND ' +
            '(attribute_not_exists(leaseUntil) OR leaseUntil < :now OR claimedBy = :c)',
          ExpressionAttributeValues: { ':c': claimant, ':l': leaseUntil, ':now': now },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  async release(robotId: string, keys: string[], claimant: string): Promise<void> {
    await Promise.all(
      keys.map(async (key) => {
        try {
          await this.db.send(
            new UpdateCommand({
              TableName: this.tableName,
              Key: this.itemKey(robotId, key),
              UpdateExpression: 'REMOVE claimedBy, leaseUntil',
              ConditionExpression: 'claimedBy = :c',
              ExpressionAttributeValues: { ':c': claimant },
            }),
          );
        } catch (err) {
          // Someone else took it over after our lease ran out: theirs now.
          if (!(err instanceof ConditionalCheckFailedException)) throw err;
        }
      }),
    );
  }

  async markDelivered(robotId: string, keys: string[], now: number): Promise<void> {
    await Promise.all(
      keys.map((key) =>
        this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.itemKey(robotId, key),
            UpdateExpression: 'SET deliveredAt = :now, expiresAt = :ttl REMOVE notification, claimedBy, leaseUntil',
            ExpressionAttributeValues: { ':now': now, ':ttl': Math.floor(now / 1000) + TOMBSTONE_SECONDS },
          }),
        ),
      ),
    );
  }
}

/** Same contract in memory, for a single process (the `alarm:test` command). */
export class InMemoryPendingAlarms implements PendingAlarmStore {
  private readonly items = new Map<string, PendingAlarm & { delivered: boolean }>();

  async add(robotId: string, key: string, notification: AlarmNotification): Promise<void> {
    const id = `${robotId}|${key}`;
    if (!this.items.has(id)) {
      this.items.set(id, { key, notification: compactForStorage(notification), claimedBy: null, leaseUntil: null, delivered: false });
    }
  }

  async list(robotId: string): Promise<PendingAlarm[]> {
    return [...this.items.entries()]
      .filter(([id, item]) => id.startsWith(`${robotId}|`) && !item.delivered)
      .map(([, { delivered: _delivered, ...item }]) => ({ ...item }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async claim(robotId: string, key: string, claimant: string, leaseUntil: number, now: number): Promise<boolean> {
    const item = this.items.get(`${robotId}|${key}`);
    if (!item || item.delivered) return false;
    if (item.leaseUntil !== null && item.leaseUntil >= now && item.claimedBy !== claimant) return false;
    item.claimedBy = claimant;
    item.leaseUntil = leaseUntil;
    return true;
  }

  async release(robotId: string, keys: string[], claimant: string): Promise<void> {
    for (const key of keys) {
      const item = this.items.get(`${robotId}|${key}`);
      if (item && item.claimedBy === claimant) {
        item.claimedBy = null;
        item.leaseUntil = null;
      }
    }
  }

  async markDelivered(robotId: string, keys: string[]): Promise<void> {
    for (const key of keys) {
      const item = this.items.get(`${robotId}|${key}`);
      if (item) {
        item.delivered = true;
        item.claimedBy = null;
        item.leaseUntil = null;
      }
    }
  }
}
