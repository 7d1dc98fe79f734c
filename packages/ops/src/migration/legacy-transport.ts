import { readFileSync } from 'node:fs';
import { isLoopbackUrl } from '@rocketmq-lambda/runtime/config/index.ts';
import { messageOf } from '../operations/index.ts';
import { LegacySourceError, redactedUrl } from './legacy-source.ts';

/**
 * How a legacy store is reached. What the import reads becomes balances, so it is read over TLS,
 * the server's certificate checked against the CAs given (`--legacy-ca <pem>`, else Node's
 * roots) and its name or address against the certificate; clear text only to loopback, the rule
 * the DingTalk and coupon clients follow (packages/runtime/src/config/loopback-url.ts). A password in the URL is
 * refused off loopback: it would be in `ps` and the shell history; `LEGACY_PASSWORD` carries it.
 */
export interface LegacyTls {
  /** PEM of the CAs the server's certificate must chain to; absent: Node's root CAs. */
  readonly ca?: string;
  readonly rejectUnauthorized: true;
}

export const LEGACY_PASSWORD_VARIABLE = 'LEGACY_PASSWORD';

/** The TLS settings for the store at `url`, or `undefined` for clear text (loopback only); refuses what the rule above refuses. */
export function legacyTransport(url: URL, caFile: string | undefined): LegacyTls | undefined {
  const loopback = isLoopbackUrl(url.href);
  if (url.password && !loopback)
    throw new LegacySourceError(
      `${redactedUrl(url)}: a password in the URL is refused for a store off this machine (it shows in ps and the shell history); give it in ${LEGACY_PASSWORD_VARIABLE}`,
    );
  const redis = /^rediss?:$/.test(url.protocol);
  if (redis && url.protocol === 'redis:' && (!loopback || caFile !== undefined))
    throw new LegacySourceError(
      `${redactedUrl(url)}: ${loopback ? '--legacy-ca asks for TLS' : 'Redis off this machine is read over TLS only'}: use rediss://`,
    );
  const tls = !loopback || caFile !== undefined || url.protocol === 'rediss:';
  if (!tls) return undefined;
  return { ...(caFile === undefined ? {} : { ca: readCa(caFile) }), rejectUnauthorized: true };
}

function readCa(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new LegacySourceError(`--legacy-ca ${path}: ${messageOf(error)}`);
  }
}
