import { type CancellationReason, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { DEFAULT_RECORD_TTL_SECONDS, type OutgoingMessage } from '../../config/index.ts';
import {
  type ConsumptionError,
  ContentionError,
  PayloadConflictError,
  TransientFailureError,
  WriteRejectedError,
} from '../failures/errors.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import { type DedupRecord, duplicateReasonOf, RecordStatus } from './record.ts';
import type { BeginResult, ConsumptionStrategy } from './strategy.ts';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A business write the handler declares instead of performing it. */
export interface DeclaredWrite {
  readonly item: TransactItem;
  /**
   * When this write's own condition fails, is the effect already there? (A ledger entry
   * keyed by the order exists: yes, a duplicate. Anything else: a permanent error.)
   */
  readonly conditionFailureMeansDone?: boolean;
  /**
   * With `conditionFailureMeansDone`: the attribute of the existing item that holds the
   * payload fingerprint of the message that wrote it. A different fingerprint there is a
   * conflict, not a duplicate (the dedup record may have expired, so this is the last line
   * that tells "same order again" from "same order, other content"). The item must be
   * written with that attribute and `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`.
   */
  readonly fingerprintAttribute?: string;
}

export interface TransactionalResult {
  readonly writes: readonly DeclaredWrite[];
  /**
   * The messages the business publishes (a publishing group, its entry's `publishes`): each is
   * written as an outbox item in the same transaction as `writes` (outbox-writes.ts), and relayed
   * from there. A message outside the entry's declarations fails the record, writing nothing.
   */
  readonly publishes?: readonly OutgoingMessage[];
}

export interface TransactionalOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  group: string;
  /**
   * Where the group's record ids start (`<prefix><key>`): the deployment decides it (each
   * function's role may write only under its own prefix), so the runtime is given it.
   */
  recordIdPrefix: string;
  /** Lifetime of a dedup record; 30 days by default, never shorter than any copy of a message can live. */
  ttlSeconds?: number;
  now?: () => number;
}

export { DEFAULT_RECORD_TTL_SECONDS };

/**
 * Transactional mode: ONE `TransactWriteItems` holds the conditional put of the dedup
 * record and the business writes, so "recorded as done" and "done" commit together.
 *
 * The race it closes (two deliveries of order SO1, both with a live record absent):
 *   A: TransactWrite [put dedup SO1 if absent, put ledger, add balance] ─ commits
 *   B: TransactWrite [put dedup SO1 if absent, …]                       ─ cancelled:
 *      reason[0] = ConditionalCheckFailed, Item = A's record → duplicate, nothing written.
 * Had the record been written first and the ledger after, a crash in between would
 * leave a record that blocks every retry of an effect that never happened (a lost award).
 */
export function transactionalStrategy(options: TransactionalOptions): ConsumptionStrategy<TransactionalResult> {
  const now = options.now ?? Date.now;
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_RECORD_TTL_SECONDS;
  return {
    recordTtlSeconds: ttlSeconds,
    async begin(): Promise<BeginResult> {
      return { proceed: true };
    },
    async commit<P>(msg: ConsumerMessage<P>, result: TransactionalResult): Promise<Settlement> {
      try {
        await options.client.send(
          new TransactWriteCommand({
            TransactItems: [dedupRecordPut(msg, options, ttlSeconds, now()), ...result.writes.map((w) => w.item)],
          }),
        );
        return { outcome: 'processed' };
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw error;
        return explainCancellation(msg, result, error.CancellationReasons ?? []);
      }
    },
    async abort(): Promise<void> {
      // Nothing was written before the commit, so there is nothing to undo.
    },
  };
}

/**
 * The conditional put of a record's dedup record: the first action of its transaction.
 * Shared with packing, so both modes write the same record under the same condition.
 */
export function dedupRecordPut<P>(
  msg: ConsumerMessage<P>,
  options: Pick<TransactionalOptions, 'tableName' | 'group' | 'recordIdPrefix'>,
  ttlSeconds: number,
  nowMs: number,
): TransactItem {
  const record: DedupRecord = {
    id: `${options.recordIdPrefix}${msg.key}`,
    key: msg.key,
    group: options.group,
    status: RecordStatus.COMPLETED,
    firstMsgId: msg.message.msgId,
    fingerprint: msg.fingerprint,
    createdAt: new Date(nowMs).toISOString(),
    expiresAt: Math.floor(nowMs / 1000) + ttlSeconds,
  };
  return {
    Put: {
      TableName: options.tableName,
      Item: record,
      // TTL deletes lazily (up to days late): an expired record counts as absent.
      ConditionExpression: 'attribute_not_exists(id) OR expiresAt < :nowSeconds',
      ExpressionAttributeValues: { ':nowSeconds': Math.floor(nowMs / 1000) },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/**
 * Reasons come in action order: [0] is the dedup record, [i] is declared write i-1. Every
 * cancellation is explained as a settlement: a duplicate, a conflict or a rejected write (failed,
 * permanent), contention (a `ContentionError`, retried by the runtime) or another transient
 * failure.
 */
export function explainCancellation<P>(
  msg: ConsumerMessage<P>,
  result: TransactionalResult,
  reasons: CancellationReason[],
): Settlement {
  const dedup = reasons[0];
  if (dedup?.Code === 'ConditionalCheckFailed') return explainExistingRecord(msg, dedup);
  const failedWrite = reasons.findIndex((r, i) => i > 0 && r.Code === 'ConditionalCheckFailed');
  if (failedWrite > 0) return explainRejectedWrite(msg, result.writes[failedWrite - 1], failedWrite - 1, reasons);
  const codes = reasons.map((r) => r.Code ?? 'None');
  const listed = codes.join(', ');
  if (codes.includes('TransactionConflict')) {
    return failed(new ContentionError(`transaction cancelled: ${listed}`, 'TransactionConflict'));
  }
  const code = codes.find((c) => c !== 'None') ?? 'TransactionCanceled';
  if (code === 'ValidationError') return failed(new WriteRejectedError(`transaction rejected: ${listed}`));
  return failed(new TransientFailureError(`transaction cancelled: ${listed}`, code));
}

/** The dedup record exists: the same content is a duplicate, other content a conflict. */
function explainExistingRecord<P>(msg: ConsumerMessage<P>, reason: CancellationReason): Settlement {
  const existing = reason.Item ? (unmarshall(reason.Item) as Partial<DedupRecord>) : {};
  if (existing.fingerprint !== undefined && existing.fingerprint !== msg.fingerprint) {
    return failed(new PayloadConflictError(msg.key, existing.fingerprint, msg.fingerprint, existing.firstMsgId));
  }
  return { outcome: 'duplicate', reason: duplicateReasonOf(existing), winnerMsgId: existing.firstMsgId };
}

/** A declared write's own condition failed: done already (same content), a conflict, or a rejected write. */
function explainRejectedWrite<P>(
  msg: ConsumerMessage<P>,
  write: DeclaredWrite | undefined,
  index: number,
  reasons: CancellationReason[],
): Settlement {
  if (!write?.conditionFailureMeansDone) {
    return failed(new WriteRejectedError(`declared write ${index} was rejected by its condition`));
  }
  const item = reasons[index + 1]?.Item;
  const existing = write.fingerprintAttribute && item ? unmarshall(item) : undefined;
  const fingerprint = existing?.[write.fingerprintAttribute!];
  // Entries written before fingerprints were stored carry none: they can only be taken as the same effect.
  if (typeof fingerprint === 'string' && fingerprint !== msg.fingerprint) {
    const existingMsgId = typeof existing?.msgId === 'string' ? existing.msgId : undefined;
    return failed(new PayloadConflictError(msg.key, fingerprint, msg.fingerprint, existingMsgId));
  }
  return { outcome: 'duplicate', reason: 'effect-already-present' };
}

const failed = (error: ConsumptionError): Settlement => ({ outcome: 'failed', error });
