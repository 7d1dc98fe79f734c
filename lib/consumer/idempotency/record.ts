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
  fingerprint: string;
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
