import { Redis } from 'ioredis';
import { messageOf } from '../../operations/index.ts';
import { type LegacySource, LegacySourceError, redactedUrl, type SourcePage } from '../legacy-source.ts';
import { legacyTransport } from '../legacy-transport.ts';

export interface RedisSourceOptions {
  /** `rediss://host:6379/0` (`redis://` on loopback only); the password from `LEGACY_PASSWORD` (in the URL on loopback only). */
  readonly url: URL;
  readonly password?: string;
  /** PEM file of the CAs the server's certificate must chain to (packages/ops/src/migration/legacy-transport.ts). */
  readonly caFile?: string;
  /** `mq:dedup:point:*`: the keys' literal prefix, then `*`; the order number is what follows the prefix. */
  readonly pattern: string;
  /** The TTL the legacy consumer set (`EX 86400`): with a key's remaining TTL it tells when the key was set. */
  readonly keyTtlSeconds: number;
  readonly pageSize?: number;
  readonly now?: () => number;
}

/**
 * The high-rate consumer's `SET <prefix><orderNo> 1 NX EX 86400` keys, read with SCAN (never
 * KEYS, which blocks the server for the whole keyspace): a page is one SCAN call, and the cursor it
 * returns is where an interrupted run resumes. SCAN returns every key that exists for the whole
 * scan at least once, and may return one twice; the import's conditional writes absorb the second.
 * A key carries no content: its record has no fingerprint.
 */
export async function openRedisSource(options: RedisSourceOptions): Promise<LegacySource> {
  const star = options.pattern.indexOf('*');
  if (star < 1 || star !== options.pattern.length - 1 || /[?[\\]/.test(options.pattern))
    throw new LegacySourceError(
      `--pattern ${options.pattern}: give the keys' prefix followed by one *, e.g. mq:dedup:point:*`,
    );
  const prefix = options.pattern.slice(0, -1);
  const now = options.now ?? Date.now;
  const tls = legacyTransport(options.url, options.caFile);
  const redis = new Redis(options.url.href, {
    lazyConnect: true,
    maxRetriesPerRequest: 3,
    enableOfflineQueue: false,
    ...(options.url.password || options.password === undefined ? {} : { password: options.password }),
    ...(tls ? { tls } : {}),
  });
  // Surfaced by the failing command; a TLS failure only here ("Connection is closed" is all connect() says).
  let lastError: unknown;
  redis.on('error', (error) => {
    lastError = error;
  });
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw new LegacySourceError(`cannot connect to ${redactedUrl(options.url)}: ${messageOf(lastError ?? error)}`);
  }
  const ttlMs = options.keyTtlSeconds * 1000;
  /** When the key was set: its TTL minus what remains. A key without expiry, or longer than the TTL: now. */
  const setAt = (remainingMs: number) =>
    new Date(remainingMs >= 0 && remainingMs <= ttlMs ? now() - (ttlMs - remainingMs) : now());

  return {
    kind: 'redis',
    description: `Redis keys ${options.pattern} at ${redactedUrl(options.url)}`,
    carriesContent: false,
    async estimateRows() {
      return await redis.dbsize();
    },
    async endPosition(): Promise<string> {
      throw new LegacySourceError('a Redis SCAN has no end to plan an import to: keys carry no award to move');
    },
    async *pages(position): AsyncGenerator<SourcePage> {
      let cursor = position ?? '0';
      do {
        let keys: string[];
        let remaining: number[];
        try {
          [cursor, keys] = await redis.scan(cursor, 'MATCH', options.pattern, 'COUNT', options.pageSize ?? 1_000);
          const pipeline = redis.pipeline();
          for (const key of keys) pipeline.pttl(key);
          remaining = ((await pipeline.exec()) ?? []).map(([, ms]) => Number(ms));
        } catch (error) {
          throw new LegacySourceError(`scanning ${options.pattern} failed: ${messageOf(error)}`);
        }
        const rows = keys.map((key, i) => ({
          ref: key,
          orderNo: key.slice(prefix.length),
          // -2: the key expired between SCAN and PTTL; it was set a whole TTL ago.
          awardedAt: remaining[i] === -2 ? new Date(now() - ttlMs) : setAt(remaining[i]!),
        }));
        yield { rows, position: cursor };
      } while (cursor !== '0');
    },
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
