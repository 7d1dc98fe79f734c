import { createHash } from 'node:crypto';

/**
 * Status of an idempotency record. `as const` object rather than an enum: plain strings on the wire and in DynamoDB.
 */
export const RecordStatus = {
  /** The effect is committed (transactional mode writes only this status). */
  COMPLETED: 'COMPLETED',
  /** A lease holder is running an outside side effect. */
  IN_PROGRESS: 'IN_PROGRESS',
  /** The last holder failed; the next delivery takes over at once. */
  RETRYABLE: 'RETRYABLE',
} as const;
export type RecordStatus = (typeof RecordStatus)[keyof typeof RecordStatus];

/**
 * Where a record came from when this project's consumer did not write it: `legacy-import`, a
 * record `ops migrate import` wrote for a message the legacy consumers processed before the group
 * moved here (it suppresses copies of that message that still arrive).
 */
export const RecordOrigin = { LEGACY_IMPORT: 'legacy-import' } as const;
export type RecordOrigin = (typeof RecordOrigin)[keyof typeof RecordOrigin];

/** The dedup / idempotency record, one per (consumer group, business key). */
export interface DedupRecord {
  /** The group's record-id prefix, then the key (`<group>#<key>` as the catalogue's `recordId` makes it). */
  id: string;
  key: string;
  group: string;
  status: RecordStatus;
  firstMsgId: string;
  /** msgId of the delivery that completed the effect (lease mode: may differ from the first). */
  lastMsgId?: string;
  /**
   * Hash of the business fields. Absent only on an imported record whose legacy store keeps no
   * content (a Redis `SET NX` key): a copy it meets is a duplicate that could not be checked.
   */
  fingerprint?: string;
  /** Set on records this project's consumer did not write itself. */
  origin?: RecordOrigin;
  createdAt: string;
  /** Epoch seconds; the table's TTL attribute. TTL deletes lazily, so readers compare it too. */
  expiresAt: number;
  /** Lease mode: epoch milliseconds until which the holder owns the key. */
  leaseUntil?: number;
  /** Lease mode: fencing token, incremented by every takeover. */
  token?: number;
  /** Lease mode: the (small) result replayed to later duplicates. */
  result?: unknown;
}

/**
 * Why a copy that met `existing` (with the fingerprint it holds, if any, equal to the copy's) is a
 * duplicate: the consumer's own record, a record imported from the legacy store with the same
 * content, or an imported record without content, which no conflict check could be run against.
 */
export function duplicateReasonOf(
  existing: Pick<DedupRecord, 'origin' | 'fingerprint'>,
): 'dedup-record-exists' | 'legacy-record-exists' | 'legacy-record-unverified' {
  if (existing.origin !== RecordOrigin.LEGACY_IMPORT) return 'dedup-record-exists';
  return existing.fingerprint === undefined ? 'legacy-record-unverified' : 'legacy-record-exists';
}

/**
 * Hash of the business fields. Keys are sorted so that field order in the producer's
 * JSON never turns a duplicate into a "conflict".
 */
export function fingerprintOf(fields: unknown): string {
  return createHash('sha256').update(canonicalJson(fields)).digest('hex').slice(0, 32);
}

/** JSON with object keys sorted (and `undefined` members dropped): one text per value, whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
