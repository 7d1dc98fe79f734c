import { type Connection, createConnection, escapeId, type RowDataPacket } from 'mysql2/promise';
import { messageOf } from '../../operations/index.ts';
import type { LegacyRow } from '../legacy-award.ts';
import {
  type ColumnMapping,
  type LegacySource,
  LegacySourceError,
  redactedUrl,
  type SourcePage,
} from '../legacy-source.ts';
import { legacyInstant, legacyWallClock, zoneOffsetMinutes } from '../legacy-time.ts';

export interface SqlSourceOptions {
  /** `mysql://user:password@host:3306/database` (or `mariadb://`); without a password, `LEGACY_DB_PASSWORD`. */
  readonly url: URL;
  readonly mapping: ColumnMapping;
  /** Only rows whose time column is at or after this instant. */
  readonly since?: Date;
  /** The zone of DATETIME values; default: the server's current offset. */
  readonly timeZone?: string;
  readonly pageSize?: number;
  readonly password?: string;
}

/**
 * A MySQL/MariaDB table read in keyset pages (`WHERE cursor > last ORDER BY cursor LIMIT n`): each
 * page is its own short query, so nothing holds a snapshot or a lock on the legacy database for the
 * length of the import, and a page's last cursor value is where an interrupted run resumes. Rows
 * the legacy consumer inserts meanwhile, behind the last page, are read too; `--since` catches
 * any committed behind the reader (the delta import after the legacy consumers stopped).
 */
export async function openSqlSource(options: SqlSourceOptions): Promise<LegacySource> {
  const { url, mapping } = options;
  let connection: Connection;
  try {
    connection = await createConnection({
      host: url.hostname,
      port: url.port ? Number(url.port) : 3306,
      user: decodeURIComponent(url.username),
      password: url.password ? decodeURIComponent(url.password) : options.password,
      database: decodeURIComponent(url.pathname.slice(1)),
      // BIGINT user ids and cursors as text: no digits lost above 2^53. DATETIME as written.
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: true,
      connectTimeout: 10_000,
    });
  } catch (error) {
    throw new LegacySourceError(`cannot connect to ${redactedUrl(url)}: ${messageOf(error)}`);
  }
  const offset = options.timeZone === undefined ? await serverOffset(connection) : zoneOffsetMinutes(options.timeZone);
  const pageSize = options.pageSize ?? 1_000;
  const col = (name: string | undefined) => (name === undefined ? 'NULL' : escapeId(name));
  const select =
    `SELECT ${col(mapping.cursor)} AS c, ${col(mapping.key)} AS k, ${col(mapping.user)} AS u, ` +
    `${col(mapping.points)} AS p, ${col(mapping.time)} AS t FROM ${escapeId(mapping.table)}`;
  if (options.since && !mapping.time) throw new LegacySourceError('--since needs a time column (--map time=…)');
  const since = options.since ? legacyWallClock(options.since, offset) : undefined;
  const ref = (cursor: unknown) => `${mapping.table}#${String(cursor)}`;

  return {
    kind: 'mysql',
    description: `MySQL table ${mapping.table} at ${redactedUrl(url)}`,
    carriesContent: mapping.user !== undefined,
    async estimateRows() {
      const [rows] = await connection.query<RowDataPacket[]>(
        'SELECT TABLE_ROWS AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
        [mapping.table],
      );
      return rows[0]?.n === undefined || rows[0].n === null ? undefined : Number(rows[0].n);
    },
    async *pages(position): AsyncGenerator<SourcePage> {
      let last: unknown = position === undefined ? undefined : JSON.parse(position);
      for (;;) {
        const where = [
          ...(last === undefined ? [] : [`${col(mapping.cursor)} > ?`]),
          ...(since === undefined ? [] : [`${col(mapping.time)} >= ?`]),
        ];
        const params = [...(last === undefined ? [] : [last]), ...(since === undefined ? [] : [since])];
        let rows: RowDataPacket[];
        try {
          [rows] = await connection.query<RowDataPacket[]>(
            `${select}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${col(mapping.cursor)} LIMIT ${pageSize}`,
            params,
          );
        } catch (error) {
          throw new LegacySourceError(`reading ${mapping.table} failed: ${messageOf(error)}`);
        }
        if (rows.length === 0) return;
        last = rows[rows.length - 1]!.c;
        yield { rows: rows.map((r) => rowOf(r, mapping, offset, ref(r.c))), position: JSON.stringify(last) };
        if (rows.length < pageSize) return;
      }
    },
    close: () => connection.end().catch(() => undefined),
  };
}

function rowOf(r: RowDataPacket, mapping: ColumnMapping, offsetMinutes: number, ref: string): LegacyRow {
  let awardedAt: Date | undefined;
  try {
    awardedAt = legacyInstant(r.t, offsetMinutes, mapping.time ?? 'time');
  } catch {
    awardedAt = undefined;
  }
  return {
    ref,
    orderNo: r.k,
    ...(mapping.user === undefined ? {} : { userId: r.u, points: r.p }),
    awardedAt,
  };
}

/** The server's offset from UTC now, in minutes: the zone its `CURRENT_TIMESTAMP` wrote DATETIMEs in. */
async function serverOffset(connection: Connection): Promise<number> {
  const [rows] = await connection.query<RowDataPacket[]>(
    'SELECT TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW()) AS utc_offset',
  );
  return Number(rows[0]!.utc_offset);
}
