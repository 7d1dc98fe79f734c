import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { BUCKET_SORT_KEY, robotPartitionKey } from './alarm-storm-table.ts';

/**
 * Per-robot token bucket shared by every notifier container.
 *
 * Why this bound holds: a bucket of capacity C refilled with one token every I ms grants at most
 * C + ⌈W / I⌉ permits in any interval of length W. A permit is used for at most one HTTP request,
 * sent within `maxDispatchDelayMs` of the grant (the dispatcher discards older permits), and the
 * request itself is cut off by the client timeout. So the requests DingTalk sees in any 60 s window
 * were granted within 60 s + dispatch delay + timeout. With C = 4, I = 5 s, dispatch delay 5 s
 * and timeout 10 s: 4 + 75 / 5 = 19 ≤ 20, whether DingTalk counts per calendar minute or over a
 * sliding window, leaving one message of headroom for an operator's `alarm:test`.
 */
export interface BucketPolicy {
  capacity: number;
  refillIntervalMs: number;
}

export const DEFAULT_BUCKET_POLICY: BucketPolicy = { capacity: 4, refillIntervalMs: 5_000 };

export interface BucketState {
  tokens: number;
  refilledAt: number;
  /** Set after DingTalk throttled us anyway (someone else posts with the same robot). */
  pausedUntil: number;
}

export type Permit = { granted: true } | { granted: false; retryAt: number };

/** Pure bucket arithmetic, shared by both stores. */
export function takeToken(
  state: BucketState | null,
  now: number,
  policy: BucketPolicy,
): { permit: Permit; next: BucketState } {
  const current = state ?? { tokens: policy.capacity, refilledAt: now, pausedUntil: 0 };
  if (now < current.pausedUntil) return { permit: { granted: false, retryAt: current.pausedUntil }, next: current };
  // Clocks of different containers can disagree slightly; time never runs backwards for the bucket.
  const elapsed = Math.max(0, now - current.refilledAt);
  const refilled = Math.min(policy.capacity, current.tokens + elapsed / policy.refillIntervalMs);
  const refilledAt = Math.max(now, current.refilledAt);
  if (refilled >= 1) {
    return { permit: { granted: true }, next: { tokens: refilled - 1, refilledAt, pausedUntil: current.pausedUntil } };
  }
  const retryAt = refilledAt + Math.ceil((1 - refilled) * policy.refillIntervalMs);
  return {
    permit: { granted: false, retryAt },
    next: { tokens: refilled, refilledAt, pausedUntil: current.pausedUntil },
  };
}

export interface RobotRateLimiter {
  tryAcquire(robotId: string, now: number): Promise<Permit>;
  /** Nobody sends with this robot before `until`; the bucket is emptied. */
  pauseUntil(robotId: string, until: number, now: number): Promise<void>;
}

/** For a single process (the `alarm:test` command): the same arithmetic, kept in memory. */
export class InMemoryRateLimiter implements RobotRateLimiter {
  private readonly buckets = new Map<string, BucketState>();

  constructor(private readonly policy: BucketPolicy = DEFAULT_BUCKET_POLICY) {}

  async tryAcquire(robotId: string, now: number): Promise<Permit> {
    const { permit, next } = takeToken(this.buckets.get(robotId) ?? null, now, this.policy);
    this.buckets.set(robotId, next);
    return permit;
  }

  async pauseUntil(robotId: string, until: number, now: number): Promise<void> {
    const current = this.buckets.get(robotId);
    this.buckets.set(robotId, {
      tokens: 0,
      refilledAt: Math.max(now, current?.refilledAt ?? now),
      pausedUntil: Math.max(until, current?.pausedUntil ?? 0),
    });
  }
}

/**
 * The bucket as one DynamoDB item, updated with optimistic concurrency (`version`): a grant is
 * only real if the conditional write that recorded it succeeded, so concurrent containers can
 * never hand out the same token twice.
 */
export class DynamoDbRateLimiter implements RobotRateLimiter {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly policy: BucketPolicy = DEFAULT_BUCKET_POLICY,
    private readonly maxConflicts = 50,
  ) {}

  tryAcquire(robotId: string, now: number): Promise<Permit> {
    return this.update(robotId, now, (state) => takeToken(state, now, this.policy));
  }

  async pauseUntil(robotId: string, until: number, now: number): Promise<void> {
    await this.update(
      robotId,
      now,
      (state) => ({
        permit: { granted: false, retryAt: until },
        next: {
          tokens: 0,
          refilledAt: Math.max(now, state?.refilledAt ?? now),
          pausedUntil: Math.max(until, state?.pausedUntil ?? 0),
        },
      }),
      true,
    );
  }

  private async update(
    robotId: string,
    now: number,
    decide: (state: BucketState | null) => { permit: Permit; next: BucketState },
    force = false,
  ): Promise<Permit> {
    const key = { pk: robotPartitionKey(robotId), sk: BUCKET_SORT_KEY };
    for (let attempt = 0; attempt < this.maxConflicts; attempt++) {
      const { Item } = await this.db.send(
        new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }),
      );
      const version = typeof Item?.version === 'number' ? Item.version : 0;
      const state: BucketState | null = Item
        ? {
            tokens: Number(Item.tokens),
            refilledAt: Number(Item.refilledAt),
            pausedUntil: Number(Item.pausedUntil ?? 0),
          }
        : null;
      const { permit, next } = decide(state);
      // A refusal changes nothing worth recording; skipping the write keeps waiters cheap.
      if (!permit.granted && !force) return permit;
      try {
        await this.db.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...key, ...next, version: version + 1 },
            ConditionExpression: Item ? '#v = :v' : 'attribute_not_exists(pk)',
            ...(Item
              ? { ExpressionAttributeNames: { '#v': 'version' }, ExpressionAttributeValues: { ':v': version } }
              : {}),
          }),
        );
        return permit;
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        // Another container changed the bucket between our read and write: read again.
      }
    }
    // Heavy contention: answer "not now" rather than risk a grant we could not record.
    return { granted: false, retryAt: now + 250 };
  }
}
