import { type ColumnMapping, type LegacySource, LegacySourceError } from './legacy-source.ts';
import { openFileSource } from './sources/file-source.ts';
import { openRedisSource } from './sources/redis-source.ts';
import { openSqlSource } from './sources/sql-source.ts';

/** How a command names a legacy store, and what it says about reading it. */
export interface LegacySourceSpec {
  /** `mysql://…`, `mariadb://…`, `redis://…`, or a file: `*.csv`, `*.jsonl` (or `csv:<path>`, `jsonl:<path>`). */
  readonly source: string;
  readonly mapping: ColumnMapping;
  readonly since?: Date;
  readonly timeZone?: string;
  /** Redis: `mq:dedup:point:*`. */
  readonly pattern?: string;
  /** Redis: the TTL the legacy consumer set on its keys. */
  readonly keyTtlSeconds?: number;
  /** A password kept out of the URL (and so out of `ps` and the shell history): `LEGACY_PASSWORD`. */
  readonly password?: string;
  /** `--legacy-ca`: PEM file of the CAs a TLS server's certificate must chain to. */
  readonly caFile?: string;
  /** `--sha256`: an export's checksum, checked before a row is read. */
  readonly sha256?: string;
  readonly pageSize?: number;
}

/** The article's Redis key TTL: `SET … NX EX 86400`. */
export const ARTICLE_KEY_TTL_SECONDS = 86_400;

export function legacySourceKind(source: string): LegacySource['kind'] {
  if (/^(mysql|mariadb):\/\//i.test(source)) return 'mysql';
  if (/^rediss?:\/\//i.test(source)) return 'redis';
  if (/^csv:/i.test(source) || /\.csv$/i.test(source)) return 'csv';
  if (/^jsonl:/i.test(source) || /\.(jsonl|ndjson)$/i.test(source)) return 'jsonl';
  throw new LegacySourceError(
    `--source ${source.replace(/:\/\/[^@/]*@/, '://***@')}: give mysql://, mariadb://, redis:// or a .csv / .jsonl export`,
  );
}

export async function openLegacySource(spec: LegacySourceSpec): Promise<LegacySource> {
  const kind = legacySourceKind(spec.source);
  if (spec.sha256 !== undefined && (kind === 'mysql' || kind === 'redis'))
    throw new LegacySourceError('--sha256 checks an export file; a database has no checksum to give');
  switch (kind) {
    case 'mysql':
      return openSqlSource({
        url: new URL(spec.source.replace(/^mariadb:/i, 'mysql:')),
        mapping: spec.mapping,
        since: spec.since,
        timeZone: spec.timeZone,
        password: spec.password,
        caFile: spec.caFile,
        pageSize: spec.pageSize,
      });
    case 'redis': {
      if (spec.since) throw new LegacySourceError('--since: a Redis key carries no time to select by; import all keys');
      return openRedisSource({
        url: new URL(spec.source),
        password: spec.password,
        caFile: spec.caFile,
        pattern: spec.pattern ?? 'mq:dedup:point:*',
        keyTtlSeconds: spec.keyTtlSeconds ?? ARTICLE_KEY_TTL_SECONDS,
        pageSize: spec.pageSize,
      });
    }
    default:
      return openFileSource({
        path: spec.source.replace(/^(csv|jsonl):/i, ''),
        format: kind,
        mapping: spec.mapping,
        since: spec.since,
        timeZone: spec.timeZone,
        pageSize: spec.pageSize,
        sha256: spec.sha256,
      });
  }
}
