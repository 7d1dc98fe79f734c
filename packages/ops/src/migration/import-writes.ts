import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  awardEntry,
  awardEntryPut,
  balanceIncrement,
  type LedgerEntry,
  type PointTables,
} from '@rocketmq-lambda/consumers/points/index.ts';
import type { LegacyHorizon } from '@rocketmq-lambda/runtime/config/index.ts';
import { recordId } from '@rocketmq-lambda/runtime/config/index.ts';
import type { Settlement } from '@rocketmq-lambda/runtime/consumer/index.ts';
import {
  ContentionError,
  type ContentionPolicy,
  commitRetryingContention,
  type DedupRecord,
  RecordOrigin,
  RecordStatus,
  sleep,
} from '@rocketmq-lambda/runtime/consumer/internal.ts';
import type { LegacyAward } from './legacy-award.ts';

/**
 * What the import writes for one legacy award: the points consumer's own items, so the consumer
 * suppresses copies with the conditions it already has.
 *
 * - The dedup record `<group>#<orderNo>` (COMPLETED, origin `legacy-import`, the consumer's
 *   fingerprint of the legacy row's user and points, none for a store without content), living
 *   the legacy horizon from the legacy award. A copy then settles as `legacy-record-exists`, or
 *   `legacy-record-unverified`, or fails as PAYLOAD_CONFLICT.
 * - `--ledger moved` (the team moves its point store here): also the award's ledger entry
 *   `AWARD#<orderNo>` (origin `legacy-import`, created at the legacy award's time) and the
 *   balance increment, in the same transaction as the record, as the consumer commits an award.
 *   The ledger entry never expires, so a copy for the same user is caught by it after the record
 *   is gone, as for native awards.
 * - `--ledger kept` (the legacy ledger stays the record of its awards): the dedup record alone,
 *   one conditional put (1 write unit).
 *
 * Every write is conditional (the record absent, or an expired import of the same award; the
 * entry absent), so a row written twice (a re-run, a resumed run, a key SCAN returned twice) is
 * written once, and a record the consumer wrote, live or expired, is never overwritten: the award
 * it stands for is in the ledger until TTL deletes the record, and writing over it would award the
 * order again. The refusal returns the item that is there, which tells what the row is.
 *
 * DynamoDB cancels a transaction that meets another on the same item (one user's balance, written
 * by two rows or by the consumer) with `TransactionConflict`: nothing was written, and the row is
 * committed again by the consumer's own contention policy (packages/runtime/src/consumer/steps/contention.ts), with
 * backoff; one still contended after its retries is reported as such, and the run goes on.
 */
export const LedgerMode = { MOVED: 'moved', KEPT: 'kept' } as const;
export type LedgerMode = (typeof LedgerMode)[keyof typeof LedgerMode];

export const RowOutcome = {
  /** Written by this run (or by this run before it was interrupted). */
  IMPORTED: 'imported',
  /** Imported by an earlier run, or the same order from another legacy row, with the same content. */
  ALREADY_PRESENT: 'already-present',
  /** The consumer here processed a copy of the order before the import: awarded in both systems in `kept` mode. */
  AWARDED_NATIVELY: 'awarded-natively',
  /** A record or ledger entry for the order holds other content (another user, other points). */
  CONFLICTING: 'conflicting',
  /** Every commit met another transaction on the same item (`TransactionConflict`) until the retries were spent. */
  CONTENDED: 'contended',
  /** No copy of the message can arrive any more, and nothing else is to be written. */
  PAST_HORIZON: 'past-horizon',
} as const;
export type RowOutcome = (typeof RowOutcome)[keyof typeof RowOutcome];

export interface RowResult {
  readonly outcome: RowOutcome;
  /** What the import found: the first msgId of the record or entry there (a legacy reference for imported ones). */
  readonly existingMsgId?: string;
  readonly existingOrigin?: string;
}

export interface ImportTarget {
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly group: string;
  readonly idempotencyTable: string;
  /** `moved` only. */
  readonly pointTables?: PointTables;
  readonly ledger: LedgerMode;
  readonly horizon: LegacyHorizon;
  /** Names this import run on every item it writes: a resumed run knows its own writes. */
  readonly runId: string;
  readonly now: () => number;
  /** How a contended commit is retried; default `IMPORT_CONTENTION`. */
  readonly contention?: ContentionPolicy;
}

/**
 * The consumer's policy with more rounds: an import has no invocation deadline, and a row left
 * contended is an operator's work. 6 rounds from 25 ms: about 1.6 s of waiting at most.
 */
export const IMPORT_CONTENTION: ContentionPolicy = { retries: 6, backoffMs: 25, sleep };

/** The record's `firstMsgId`: the legacy row it came from, which a PAYLOAD_CONFLICT then names. */
export const legacyMsgId = (ref: string) => `legacy:${ref}`;

type ImportedRecord = DedupRecord & { importRun: string };

/** When the record for an award expires: the legacy horizon after the award (after now, when the store does not say). */
export function importedRecordExpiry(award: LegacyAward, horizon: LegacyHorizon, nowMs: number): number {
  return Math.floor((award.awardedAt?.getTime() ?? nowMs) / 1000) + horizon.importedRecordLifetimeSeconds;
}

export function importedRecord(award: LegacyAward, target: ImportTarget, nowMs: number): ImportedRecord {
  return {
    id: recordId(target.group, award.orderNo),
    key: award.orderNo,
    group: target.group,
    status: RecordStatus.COMPLETED,
    firstMsgId: legacyMsgId(award.ref),
    ...(award.fingerprint === undefined ? {} : { fingerprint: award.fingerprint }),
    origin: RecordOrigin.LEGACY_IMPORT,
    createdAt: new Date(award.awardedAt?.getTime() ?? nowMs).toISOString(),
    expiresAt: importedRecordExpiry(award, target.horizon, nowMs),
    importRun: target.runId,
  };
}

/** Writes one award (see above) and says what became of it. Throws what DynamoDB throws otherwise. */
export async function writeLegacyAward(award: LegacyAward, target: ImportTarget): Promise<RowResult> {
  const [settled] = await commitRetryingContention(
    [award],
    async () => [settlementOf(await writeOnce(award, target))],
    target.contention ?? IMPORT_CONTENTION,
  );
  return settled!.outcome === 'processed' ? (settled!.result as RowResult) : { outcome: RowOutcome.CONTENDED };
}

/** A row's result as the contention policy reads it: contended, or settled. */
function settlementOf(result: RowResult): Settlement {
  return result.outcome === RowOutcome.CONTENDED
    ? {
        outcome: 'failed',
        error: new ContentionError('transaction cancelled: TransactionConflict', 'TransactionConflict'),
      }
    : { outcome: 'processed', result };
}

async function writeOnce(award: LegacyAward, target: ImportTarget): Promise<RowResult> {
  const nowMs = target.now();
  const record = importedRecord(award, target, nowMs);
  const live = record.expiresAt > Math.floor(nowMs / 1000);
  const sameImport = sameImportCondition(award);
  const recordPut = {
    TableName: target.idempotencyTable,
    Item: record,
    // Unlike the consumer's own put, an expired record counts as absent only when it is an import of the same award.
    ConditionExpression: `attribute_not_exists(id) OR (expiresAt < :nowSeconds AND ${sameImport.expression})`,
    ExpressionAttributeValues: { ':nowSeconds': Math.floor(nowMs / 1000), ...sameImport.values },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
  const ledger = ledgerWritesOf(award, target, nowMs);
  if (ledger.length === 0) {
    if (!live) return { outcome: RowOutcome.PAST_HORIZON };
    try {
      await target.dynamoDb.send(new PutCommand(recordPut));
      return { outcome: RowOutcome.IMPORTED };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return judgeExisting(award, target.runId, error.Item ? unmarshall(error.Item) : {}, 'fingerprint', 'firstMsgId');
    }
  }
  // Past the horizon no record is written, but the one the consumer here may have written for the
  // order still decides: moving the legacy award over it would award the order twice (twice to
  // one user, or to two users), so it is checked in the same transaction.
  const items = [live ? { Put: recordPut } : { ConditionCheck: recordCheckOf(award, target) }, ...ledger];
  try {
    await target.dynamoDb.send(new TransactWriteCommand({ TransactItems: items }));
    return { outcome: RowOutcome.IMPORTED };
  } catch (error) {
    if (!(error instanceof TransactionCanceledException)) throw error;
    const reasons = error.CancellationReasons ?? [];
    const failed = reasons.findIndex((r) => r.Code === 'ConditionalCheckFailed');
    if (failed === -1) {
      if (reasons.some((r) => r.Code === 'TransactionConflict')) return { outcome: RowOutcome.CONTENDED };
      throw error;
    }
    const existing = reasons[failed]!.Item ? unmarshall(reasons[failed]!.Item!) : {};
    return failed === 0
      ? judgeExisting(award, target.runId, existing, 'fingerprint', 'firstMsgId')
      : judgeExisting(award, target.runId, existing, 'fingerprint', 'msgId');
  }
}

/** The record is an import of this award: origin `legacy-import`, and the same content, or none on either side. */
function sameImportCondition(award: LegacyAward) {
  return award.fingerprint === undefined
    ? {
        expression: 'origin = :legacyImport AND attribute_not_exists(fingerprint)',
        values: { ':legacyImport': RecordOrigin.LEGACY_IMPORT },
      }
    : {
        expression: 'origin = :legacyImport AND (attribute_not_exists(fingerprint) OR fingerprint = :fp)',
        values: { ':legacyImport': RecordOrigin.LEGACY_IMPORT, ':fp': award.fingerprint },
      };
}

/**
 * A row past its horizon moves its award only where nothing but an import of the same award holds
 * the order's record: no record, or an imported one with the same content (or none, from a store
 * without content). A record the consumer wrote (completed or in progress, expired or not: the award
 * it stands for stays in the ledger) refuses, and so does other content.
 */
function recordCheckOf(award: LegacyAward, target: ImportTarget) {
  const sameImport = sameImportCondition(award);
  return {
    TableName: target.idempotencyTable,
    Key: { id: recordId(target.group, award.orderNo) },
    ConditionExpression: `attribute_not_exists(id) OR (${sameImport.expression})`,
    ExpressionAttributeValues: sameImport.values,
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
}

/** `moved`: the ledger entry (created at the legacy award) and the balance increment; nothing for 0 points. */
function ledgerWritesOf(award: LegacyAward, target: ImportTarget, nowMs: number) {
  if (target.ledger !== LedgerMode.MOVED || !target.pointTables || !award.points) return [];
  const order = { orderNo: award.orderNo, userId: award.userId!, points: award.points };
  const entry: LedgerEntry & { importRun: string } = {
    ...awardEntry(
      order,
      { msgId: legacyMsgId(award.ref), fingerprint: award.fingerprint! },
      award.awardedAt ?? new Date(nowMs),
    ),
    origin: RecordOrigin.LEGACY_IMPORT,
    importRun: target.runId,
  };
  return [
    awardEntryPut(target.pointTables.ledger, entry).item,
    balanceIncrement(target.pointTables.accounts, order.userId, order.points, new Date(nowMs)),
  ];
}

/**
 * The item a conditional write met. Other content is a conflict, as the consumer would judge a
 * copy; an item this row wrote in this run is this run's import (written before an interruption);
 * one imported otherwise is already present; one the consumer wrote means it awarded a copy first.
 */
function judgeExisting(
  award: LegacyAward,
  runId: string,
  existing: Record<string, unknown>,
  fingerprintAttribute: string,
  msgIdAttribute: string,
): RowResult {
  const existingMsgId = typeof existing[msgIdAttribute] === 'string' ? (existing[msgIdAttribute] as string) : undefined;
  const existingOrigin = typeof existing.origin === 'string' ? existing.origin : undefined;
  const theirs = existing[fingerprintAttribute];
  const found = { existingMsgId, existingOrigin };
  if (award.fingerprint !== undefined && typeof theirs === 'string' && theirs !== award.fingerprint)
    return { outcome: RowOutcome.CONFLICTING, ...found };
  if (existingOrigin !== RecordOrigin.LEGACY_IMPORT) return { outcome: RowOutcome.AWARDED_NATIVELY, ...found };
  const thisRow = existingMsgId === legacyMsgId(award.ref) && existing.importRun === runId;
  return { outcome: thisRow ? RowOutcome.IMPORTED : RowOutcome.ALREADY_PRESENT, ...found };
}
