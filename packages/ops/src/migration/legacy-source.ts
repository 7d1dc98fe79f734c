import { OperationsError } from '../operations/index.ts';
import type { LegacyRow } from './legacy-award.ts';

/**
 * Where a legacy consumer keeps its dedup state, read in pages that can be resumed: a table in
 * MySQL/MariaDB, keys in Redis, or an export of either as CSV or JSONL for teams that cannot reach
 * the store from where they run operations. Every source is read in constant memory, a page at a
 * time, and says after each page where to start again.
 */
export interface SourcePage {
  readonly rows: readonly LegacyRow[];
  /** Where reading resumes after this page (opaque to the caller; kept in the import's checkpoint). */
  readonly position: string;
}

export interface LegacySource {
  readonly kind: 'mysql' | 'redis' | 'csv' | 'jsonl';
  /** What and where, for confirmations and reports; never a password. */
  readonly description: string;
  /** Rows carry the user and the points (a fingerprint can be computed); a Redis key carries neither. */
  readonly carriesContent: boolean;
  /** About how many rows there are, for progress; `undefined` when the store cannot say cheaply. */
  estimateRows(): Promise<number | undefined>;
  /**
   * Pages from the start, or after `position` (a page's position from an earlier, interrupted run),
   * up to `upTo` (an `endPosition()` answer) when given.
   */
  pages(position: string | undefined, upTo?: string): AsyncIterable<SourcePage>;
  /** Where the source ends now: an import plan reads no further than the dry run did. */
  endPosition(): Promise<string>;
  close(): Promise<void>;
}

/** The source cannot be opened or read as configured. */
export class LegacySourceError extends OperationsError {
  override readonly name = 'LegacySourceError';
}

/**
 * Which columns (or CSV/JSONL fields) hold what. `user` and `points` are the fingerprint's fields:
 * left empty for a store that keeps only the key, whose records then carry no fingerprint.
 */
export interface ColumnMapping {
  readonly table: string;
  /** The business key: the order number. */
  readonly key: string;
  readonly user: string | undefined;
  readonly points: string | undefined;
  /** When the legacy consumer processed the message: the record's horizon and `--since` read it. */
  readonly time: string | undefined;
  /** A unique, indexed column the table is read in order of (keyset pages); files: names the row in reports. */
  readonly cursor: string;
}

/** The article's `t_point_record(id, order_no UNIQUE, user_id, point, create_time)`. */
export const ARTICLE_MAPPING: ColumnMapping = {
  table: 't_point_record',
  key: 'order_no',
  user: 'user_id',
  points: 'point',
  time: 'create_time',
  cursor: 'id',
};

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,63}$/;
const FIELDS = ['key', 'user', 'points', 'time', 'cursor'] as const;

/**
 * `--table t_award --map key=order_id,user=member_id,points=amount,time=created_at,cursor=id`: the
 * article's mapping with the named fields replaced; `user=,points=` for a key-only table.
 */
export function columnMappingOf(table: string | undefined, map: string | undefined): ColumnMapping {
  const mapping: { -readonly [K in keyof ColumnMapping]: ColumnMapping[K] } = {
    ...ARTICLE_MAPPING,
    table: table ?? ARTICLE_MAPPING.table,
  };
  for (const part of (map ?? '').split(',').filter((p) => p.trim() !== '')) {
    const [name, value = ''] = part.split('=').map((s) => s.trim()) as [string, string?];
    if (!(FIELDS as readonly string[]).includes(name))
      throw new LegacySourceError(`--map ${name}=…: the fields are ${FIELDS.join(', ')}`);
    if (value === '' && (name === 'key' || name === 'cursor'))
      throw new LegacySourceError(`--map ${name} cannot be empty`);
    (mapping as Record<string, string | undefined>)[name] = value === '' ? undefined : value;
  }
  if ((mapping.user === undefined) !== (mapping.points === undefined))
    throw new LegacySourceError(
      '--map user and points are the fingerprint: name both, or leave both empty (user=,points=) for a key-only table',
    );
  for (const value of [mapping.table, mapping.key, mapping.user, mapping.points, mapping.time, mapping.cursor])
    if (value !== undefined && !IDENTIFIER.test(value))
      throw new LegacySourceError(`"${value}" is not a plain column or table name`);
  return mapping;
}

/** A URL for display: the password replaced. */
export function redactedUrl(url: URL): string {
  const shown = new URL(url.href);
  if (shown.password) shown.password = '***';
  return shown.href;
}
