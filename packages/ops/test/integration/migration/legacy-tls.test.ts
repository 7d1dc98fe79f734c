import { type LocalMariaDb, startLocalMariaDb } from '@rocketmq-lambda/tools/legacy/local-mariadb.ts';
import { type LocalRedis, startLocalRedis } from '@rocketmq-lambda/tools/legacy/local-redis.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ops } from '../operations/operations-fixture.ts';
import { loopbackCertificate, type TestCertificate, tlsTerminator } from './legacy-tls-fixture.ts';
import { insertLegacyAwards, migrateImportArgs, recordsOf } from './migration-fixture.ts';

/**
 * The import reads balances from the legacy store, so it reads them over TLS with the server's
 * certificate checked: a real MariaDB serving a test certificate, and a real redis-server behind a
 * TLS endpoint on loopback. A certificate of the CA given passes; one of another CA is refused
 * before anything is read.
 */
let mariaDb: LocalMariaDb;
let db: Connection;
let redis: LocalRedis;
let redisTls: Awaited<ReturnType<typeof tlsTerminator>>;
let trusted: TestCertificate;
let stranger: TestCertificate;

beforeAll(async () => {
  trusted = await loopbackCertificate('legacy store');
  stranger = await loopbackCertificate('someone else');
  mariaDb = await startLocalMariaDb({ tls: trusted });
  db = await mariaDb.connect();
  redis = await startLocalRedis();
  redisTls = await tlsTerminator(trusted, redis.port);
}, 120_000);

afterAll(async () => {
  await redisTls?.close();
  await redis?.stop();
  await mariaDb?.stop();
});

const tlsAccepted = async () =>
  Number((await db.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'"))[0][0]!.Value);

describe('ops migrate import over TLS', () => {
  it('MariaDB: reads over TLS with --legacy-ca, and refuses a server whose certificate another CA signed', async () => {
    // Prepare
    const f = await pointsFixture();
    await insertLegacyAwards(db, [{ orderNo: 'SO-TLS-1', userId: 1, points: 10 }]);
    const before = await tlsAccepted();

    // Act
    const refused = await ops(f, [...migrateImportArgs(mariaDb.url, 'kept', '--legacy-ca', stranger.certFile)]);
    const afterRefusal = await ops(f, ['audit', '--json']);
    const imported = await ops(f, [
      ...migrateImportArgs(mariaDb.url, 'kept', '--legacy-ca', trusted.certFile, '--json'),
    ]);

    // Assess: the unknown CA stopped it before anything was read; the trusted one read over TLS
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/cannot connect to mysql:\/\/legacy:\*\*\*@127\.0\.0\.1:\d+\/points: .*certificate/);
    expect(afterRefusal.code).toBe(0);
    expect(imported.code).toBe(0);
    expect(imported.json().counts).toMatchObject({ read: 1, imported: 1 });
    expect((await recordsOf(f)).map((r) => r.key)).toEqual(['SO-TLS-1']);
    expect(await tlsAccepted()).toBeGreaterThan(before);
  }, 60_000);

  it('MariaDB: takes the password from LEGACY_PASSWORD, as the help says', async () => {
    // Prepare
    const f = await pointsFixture();
    const withoutPassword = mariaDb.url.replace(/:[^:@/]+@/, '@');
    const saved = process.env.LEGACY_PASSWORD;
    process.env.LEGACY_PASSWORD = mariaDb.password;

    // Act
    const dryRun = await ops(f, [...migrateImportArgs(withoutPassword, 'kept', '--dry-run', '--json')]).finally(() => {
      if (saved === undefined) delete process.env.LEGACY_PASSWORD;
      else process.env.LEGACY_PASSWORD = saved;
    });

    // Assess
    expect(dryRun.code).toBe(0);
    expect(dryRun.json().source).toMatch(/^MySQL table t_point_record at mysql:\/\/legacy@127\.0\.0\.1:\d+\/points$/);
  }, 60_000);

  it('Redis: reads rediss:// with --legacy-ca, refuses another CA, and refuses redis:// when TLS is asked for', async () => {
    // Prepare
    const f = await pointsFixture();
    const client = redis.connect();
    await client.set('mq:dedup:point:SO-TLS-R', '1', 'EX', 86_400);
    const rediss = `rediss://127.0.0.1:${redisTls.port}/0`;
    const keys = (source: string, ca: TestCertificate) => [
      ...migrateImportArgs(source, 'kept', '--legacy-ca', ca.certFile, '--accept-expired-keys'),
    ];

    // Act
    const refused = await ops(f, keys(rediss, stranger));
    const clear = await ops(f, keys(redis.url, trusted));
    const imported = await ops(f, [...keys(rediss, trusted), '--json']);

    // Assess
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/cannot connect to rediss:\/\/127\.0\.0\.1:\d+\/0: .*certificate/);
    expect(clear.code).toBe(2);
    expect(clear.stderr).toMatch(/--legacy-ca asks for TLS: use rediss:\/\//);
    expect(imported.code).toBe(0);
    expect((await recordsOf(f)).map((r) => r.key)).toEqual(['SO-TLS-R']);
  }, 60_000);
});

describe('a legacy store off this machine', () => {
  it('is refused with a password in its URL, and as redis:// (clear text), before any connection', async () => {
    // Prepare
    const f = await pointsFixture();

    // Act
    const password = await ops(f, migrateImportArgs('mysql://legacy:secret@10.255.255.1:3306/points', 'kept'));
    const clearRedis = await ops(f, migrateImportArgs('redis://10.255.255.1:6379/0', 'kept', '--accept-expired-keys'));

    // Assess
    expect(password.code).toBe(2);
    expect(password.stderr).toMatch(
      /mysql:\/\/legacy:\*\*\*@10\.255\.255\.1:3306\/points: a password in the URL is refused for a store off this machine .*LEGACY_PASSWORD/,
    );
    expect(password.stderr).not.toContain('secret');
    expect(clearRedis.code).toBe(2);
    expect(clearRedis.stderr).toMatch(/Redis off this machine is read over TLS only: use rediss:\/\//);
  }, 60_000);
});
