import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { legacyTransport } from '../../../src/migration/legacy-transport.ts';

describe('legacyTransport: TLS off loopback, clear text only on this machine', () => {
  it('asks for TLS with certificate checks for every store off loopback, and on loopback when a CA is given', async () => {
    const ca = join(await mkdtemp(join(tmpdir(), 'legacy-ca-')), 'ca.pem');
    await writeFile(ca, '-----BEGIN CERTIFICATE-----\n…\n');
    expect(legacyTransport(new URL('mysql://reader@legacy-db.internal:3306/points'), undefined)).toEqual({
      rejectUnauthorized: true,
    });
    expect(legacyTransport(new URL('rediss://10.0.0.7:6379/0'), ca)).toEqual({
      ca: '-----BEGIN CERTIFICATE-----\n…\n',
      rejectUnauthorized: true,
    });
    expect(legacyTransport(new URL('mysql://legacy:secret@127.0.0.1:3306/points'), undefined)).toBeUndefined();
    expect(legacyTransport(new URL('redis://localhost:6379/0'), undefined)).toBeUndefined();
    expect(legacyTransport(new URL('rediss://[::1]:6379/0'), undefined)).toEqual({ rejectUnauthorized: true });
    expect(legacyTransport(new URL('mariadb://legacy@127.0.0.1:3306/points'), ca)).toMatchObject({
      rejectUnauthorized: true,
    });
  });

  it('refuses a password in the URL and clear-text Redis off loopback, and a CA file it cannot read', () => {
    expect(() => legacyTransport(new URL('mysql://reader:s3cret@legacy-db.internal/points'), undefined)).toThrow(
      /^mysql:\/\/reader:\*\*\*@legacy-db\.internal\/points: a password in the URL is refused .* LEGACY_PASSWORD$/,
    );
    expect(() => legacyTransport(new URL('redis://10.0.0.7:6379/0'), undefined)).toThrow(
      'Redis off this machine is read over TLS only: use rediss://',
    );
    expect(() => legacyTransport(new URL('rediss://10.0.0.7:6379/0'), '/nonexistent/ca.pem')).toThrow(
      /^--legacy-ca \/nonexistent\/ca\.pem: .*ENOENT/,
    );
  });
});
