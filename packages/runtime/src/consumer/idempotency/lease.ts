import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ConsumptionError, LeaseHeldError, PayloadConflictError } from '../failures/errors.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import { type DedupRecord, duplicateReasonOf, RecordStatus } from './record.ts';
import type { BeginResult, ConsumptionStrategy } from './strategy.ts';
import { DEFAULT_RECORD_TTL_SECONDS } from './transactional.ts';

export interface LeaseOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  group: string;
  /** Where the group's record ids start (`<prefix><key>`), as the deployment decides it. */
  recordIdPrefix: string;
  ttlSeconds?: number;
  /** Added to the invocation's deadline: the lease must not end while the holder may still run. */
  marginMs?: number;
  now?: () => number;
}

/** The record as lease mode keeps it: a dedup record plus the id of the acquisition that holds it. */
type LeaseRecord = DedupRecord & { holder?: string };

/** The holder's completion was rejected: its lease expired and another delivery took the key over. */
export class LeaseLostError extends ConsumptionError {
  override readonly name = 'LeaseLostError';
  readonly classification = 'transient';
  readonly code = 'LEASE_LOST';
}

/**
 * Lease mode, for side effects that cannot join a DynamoDB transaction (an HTTP coupon
 * service). The record is the lease: IN_PROGRESS until the invocation's deadline with a
 * fencing token, COMPLETED with the result, or RETRYABLE after a failure (never deleted:
 * a failed delete is how "set a flag, delete it on failure" loses messages).
 *
 *   t0  A acquires SO1 (token 1, lease until A's deadline)
 *   t1  A hangs in the coupon call; A's lease ends
 *   t2  B acquires SO1 by takeover (token 2) and grants (Idempotency-Key SO1 lets the service dedup)
 *   t3  B completes: condition token = 2 holds → COMPLETED
 *   t4  A wakes and completes: condition token = 1 fails → LeaseLostError, A's copy is retried
 *       later and then settles as a duplicate with B's stored result.
 */
export function leaseStrategy(options: LeaseOptions): ConsumptionStrategy<unknown> {
  return new LeaseStrategy(options);
}

class LeaseStrategy implements ConsumptionStrategy<unknown> {
  readonly recordTtlSeconds: number;
  private readonly now: () => number;
  private readonly marginMs: number;

  constructor(private readonly options: LeaseOptions) {
    this.recordTtlSeconds = options.ttlSeconds ?? DEFAULT_RECORD_TTL_SECONDS;
    this.now = options.now ?? Date.now;
    this.marginMs = options.marginMs ?? 5_000;
  }

  async begin<P>(msg: ConsumerMessage<P>, deadline: number): Promise<BeginResult> {
    // Names this acquisition. The SDK retries a request whose answer was lost with the same
    // input: the retry then finds a live lease with its own holder id and proceeds, instead
    // of waiting out a lease it already holds.
    const holder = randomUUID();
    try {
      const out = await this.options.client.send(this.acquisition(msg, deadline, holder));
      return { proceed: true, leaseToken: (out.Attributes as DedupRecord).token! };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return refusedAcquisition(msg, unmarshall(error.Item ?? {}) as LeaseRecord, holder);
    }
  }

  async commit<P>(msg: ConsumerMessage<P>, result: unknown): Promise<Settlement> {
    try {
      await this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: this.keyOf(msg),
          UpdateExpression: 'SET #status = :completed, #result = :result, lastMsgId = :msgId REMOVE leaseUntil, holder',
          // Tokens are unique per acquisition, so COMPLETED with our token can only be our
          // own completion, applied once already (an SDK retry after a lost answer).
          ConditionExpression: '#token = :token AND (#status = :inProgress OR #status = :completed)',
          ExpressionAttributeNames: { '#status': 'status', '#result': 'result', '#token': 'token' },
          ExpressionAttributeValues: {
            ':completed': RecordStatus.COMPLETED,
            ':inProgress': RecordStatus.IN_PROGRESS,
            ':result': result ?? null,
            ':msgId': msg.message.msgId,
            ':token': msg.leaseToken,
          },
        }),
      );
      return { outcome: 'processed', result };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Not acknowledged: the new holder may still fail, and its retry needs a message.
      const lost = new LeaseLostError(`lease on ${msg.key} (token ${msg.leaseToken}) was taken over before completion`);
      return { outcome: 'failed', error: lost };
    }
  }

  async abort<P>(msg: ConsumerMessage<P>): Promise<void> {
    if (msg.leaseToken === undefined) return;
    try {
      await this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: this.keyOf(msg),
          UpdateExpression: 'SET #status = :retryable REMOVE leaseUntil, holder',
          ConditionExpression: '#token = :token AND #status = :inProgress',
          ExpressionAttributeNames: { '#status': 'status', '#token': 'token' },
          ExpressionAttributeValues: {
            ':retryable': RecordStatus.RETRYABLE,
            ':inProgress': RecordStatus.IN_PROGRESS,
            ':token': msg.leaseToken,
          },
        }),
      );
    } catch {
      // A lease we can no longer release simply expires at its deadline and is taken over then.
    }
  }

  /** Takes the key if it is free, expired, RETRYABLE, or IN_PROGRESS past its lease (a takeover, with a new token). */
  private acquisition<P>(msg: ConsumerMessage<P>, deadline: number, holder: string): UpdateCommand {
    const nowMs = this.now();
    return new UpdateCommand({
      TableName: this.options.tableName,
      Key: this.keyOf(msg),
      UpdateExpression:
        'SET #status = :inProgress, leaseUntil = :leaseUntil, holder = :holder, fingerprint = :fp, #key = :key, #group = :group, ' +
        'firstMsgId = if_not_exists(firstMsgId, :msgId), createdAt = if_not_exists(createdAt, :nowIso), expiresAt = :expiresAt ' +
        'ADD #token :one',
      ConditionExpression:
        'attribute_not_exists(id) OR expiresAt < :nowSeconds OR ' +
        '(fingerprint = :fp AND (#status = :retryable OR (#status = :inProgress AND leaseUntil < :nowMs)))',
      ExpressionAttributeNames: { '#status': 'status', '#key': 'key', '#group': 'group', '#token': 'token' },
      ExpressionAttributeValues: {
        ':inProgress': RecordStatus.IN_PROGRESS,
        ':retryable': RecordStatus.RETRYABLE,
        ':leaseUntil': deadline + this.marginMs,
        ':holder': holder,
        ':fp': msg.fingerprint,
        ':key': msg.key,
        ':group': this.options.group,
        ':msgId': msg.message.msgId,
        ':nowIso': new Date(nowMs).toISOString(),
        ':expiresAt': Math.floor(nowMs / 1000) + this.recordTtlSeconds,
        ':nowSeconds': Math.floor(nowMs / 1000),
        ':nowMs': nowMs,
        ':one': 1,
      },
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  }

  private keyOf<P>(msg: ConsumerMessage<P>) {
    return { id: `${this.options.recordIdPrefix}${msg.key}` };
  }
}

/** Why the key could not be taken, from the record as it stood: ours already, a conflict, done, or held elsewhere. */
function refusedAcquisition<P>(msg: ConsumerMessage<P>, existing: LeaseRecord, holder: string): BeginResult {
  if (existing.status === RecordStatus.IN_PROGRESS && existing.holder === holder) {
    return { proceed: true, leaseToken: existing.token! };
  }
  const reason = duplicateReasonOf(existing);
  if (reason !== 'legacy-record-unverified' && existing.fingerprint !== msg.fingerprint) {
    const conflict = new PayloadConflictError(
      msg.key,
      existing.fingerprint ?? '',
      msg.fingerprint,
      existing.firstMsgId,
    );
    return { proceed: false, settlement: { outcome: 'failed', error: conflict } };
  }
  if (existing.status === RecordStatus.COMPLETED) {
    return {
      proceed: false,
      settlement: {
        outcome: 'duplicate',
        reason: reason === 'dedup-record-exists' ? 'lease-completed' : reason,
        winnerMsgId: existing.lastMsgId ?? existing.firstMsgId,
        result: existing.result,
      },
    };
  }
  return {
    proceed: false,
    settlement: { outcome: 'failed', error: new LeaseHeldError(msg.key, existing.leaseUntil ?? 0) },
  };
}
