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
import {
  earliestWallClockSince,
  type LegacyZone,
  legacyInstant,
  legacyZone,
  MissingTimeZoneError,
} from '../legacy-time.ts';
import { legacyTransport } from '../legacy-transport.ts';

export interface SqlSourceOptions {
  /** `mysql://user@host:3306/database` (or `mariadb://`); the password from `LEGACY_PASSWORD` (in the URL on loopback only). */
  readonly url: URL;
  readonly mapping: ColumnMapping;
  /** Only rows whose time column is at or after this instant. */
  readonly since?: Date;
  /** The zone of DATETIME values (`+08:00`, `Europe/Berlin`); default: the server's, when it keeps one offset all year. */
  readonly timeZone?: string;
  readonly pageSize?: number;
  readonly password?: string;
  /** PEM file of the CAs the server's certificate must chain to (packages/ops/src/migration/legacy-transport.ts). */
  readonly caFile?: string;
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
  const { connection, zone } = await connect(options);
  const pageSize = options.pageSize ?? 1_000;
  const col = (name: string | undefined) => (name === undefined ? 'NULL' : escapeId(name));
  const select =
    `SELECT ${col(mapping.cursor)} AS c, ${col(mapping.key)} AS k, ${col(mapping.user)} AS u, ` +
    `${col(mapping.points)} AS p, ${col(mapping.time)} AS t FROM ${escapeId(mapping.table)}`;
  if (options.since && !mapping.time) throw new LegacySourceError('--since needs a time column (--map time=…)');
  const since = options.since ? earliestWallClockSince(options.since, zone) : undefined;
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
    async endPosition() {
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT MAX(${col(mapping.cursor)}) AS m FROM ${escapeId(mapping.table)}`,
      );
      return JSON.stringify(rows[0]?.m ?? null);
    },
    async *pages(position, upTo): AsyncGenerator<SourcePage> {
      let last: unknown = position === undefined ? undefined : JSON.parse(position);
      const end: unknown = upTo === undefined ? undefined : JSON.parse(upTo);
      if (end === null) return;
      for (;;) {
        const conditions = (
          [
            [`${col(mapping.cursor)} > ?`, last],
            [`${col(mapping.cursor)} <= ?`, end],
            [`${col(mapping.time)} >= ?`, since],
          ] as const
        ).filter(([, value]) => value !== undefined);
        const where = conditions.length ? ` WHERE ${conditions.map(([clause]) => clause).join(' AND ')}` : '';
        let rows: RowDataPacket[];
        try {
          [rows] = await connection.query<RowDataPacket[]>(
            `${select}${where} ORDER BY ${col(mapping.cursor)} LIMIT ${pageSize}`,
            conditions.map(([, value]) => value),
          );
        } catch (error) {
          throw new LegacySourceError(`reading ${mapping.table} failed: ${messageOf(error)}`);
        }
        if (rows.length === 0) return;
        last = rows[rows.length - 1]!.c;
        const read = rows.map((r) => rowOf(r, mapping, zone, ref(r.c)));
        yield { rows: read.filter((row) => isSince(row, options.since)), position: JSON.stringify(last) };
        if (rows.length < pageSize) return;
      }
    },
    close: () => connection.end().catch(() => undefined),
  };
}

/** The connection (over TLS off loopback: packages/ops/src/migration/legacy-transport.ts) and the zone its DATETIMEs are in. */
async function connect(options: SqlSourceOptions): Promise<{ connection: Connection; zone: LegacyZone }> {
  const { url } = options;
  const tls = legacyTransport(url, options.caFile);
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
      ...(tls ? { ssl: { ...tls, verifyIdentity: true } } : {}),
    });
  } catch (error) {
    throw new LegacySourceError(`cannot connect to ${redactedUrl(url)}: ${messageOf(error)}`);
  }
  try {
    const zone = options.timeZone === undefined ? await serverZone(connection) : legacyZone(options.timeZone);
    return { connection, zone };
  } catch (error) {
    await connection.end().catch(() => undefined);
    throw error;
  }
}

/** The WHERE clause compares wall-clock text, a superset around a change of offset: the exact cut is per row. */
function isSince(row: LegacyRow, since: Date | undefined): boolean {
  return !since || !row.awardedAt || row.awardedAt >= since;
}

function rowOf(r: RowDataPacket, mapping: ColumnMapping, zone: LegacyZone, ref: string): LegacyRow {
  let awardedAt: Date | undefined;
  try {
    awardedAt = legacyInstant(r.t, zone, mapping.time ?? 'time');
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

/**
 * The zone the server's `CURRENT_TIMESTAMP` writes DATETIMEs in, when it keeps one offset all year
 * (its offsets in January and July agree). A zone with daylight saving time is refused unless the
 * server names it (`time_zone` set to an IANA name): a server on `SYSTEM` does not say which zone
 * its offsets belong to, and one offset for every row would misread half a year of them.
 */
async function serverZone(connection: Connection): Promise<LegacyZone> {
  const year = new Date().getUTCFullYear();
  const offsetAt = (month: number) => {
    const seconds = Date.UTC(year, month, 15) / 1000;
    return `TIMESTAMPDIFF(MINUTE, DATE_ADD('1970-01-01 00:00:00', INTERVAL ${seconds} SECOND), FROM_UNIXTIME(${seconds}))`;
  };
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT @@time_zone AS zone, @@system_time_zone AS systemZone, ${offsetAt(0)} AS january, ${offsetAt(6)} AS july`,
  );
  const { zone, systemZone, january, july } = rows[0]!;
  if (Number(january) === Number(july)) return legacyZone(minutesAsOffset(Number(january)));
  if (typeof zone === 'string' && zone.includes('/')) return legacyZone(zone);
  throw new MissingTimeZoneError(
    `the server's time zone (${zone === 'SYSTEM' ? `SYSTEM, ${systemZone}` : zone}) changes its offset during the year ` +
      `(${minutesAsOffset(Number(january))} in January, ${minutesAsOffset(Number(july))} in July): ` +
      'give its IANA name with --time-zone (e.g. Europe/Berlin), so that each DATETIME is read with its own offset',
  );
}

function minutesAsOffset(minutes: number): string {
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
