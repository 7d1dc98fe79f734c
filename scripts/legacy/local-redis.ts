import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../rocketmq/local-rocketmq.ts';
import { firstExisting, spawnServer, stopServer, waitUntilReady } from './server-process.ts';

/**
 * A throw-away Redis (Debian's `redis-server`, 7.0) on a free loopback port, persistence off, its
 * working directory in a temporary folder that `stop()` removes: the high-rate legacy consumer's
 * `SET <prefix><orderNo> 1 NX EX 86400` store in tests and benchmarks. Never the system service.
 */
export interface LocalRedis {
  /** `redis://127.0.0.1:<port>/0` */
  readonly url: string;
  readonly port: number;
  /** A client for tests to plant keys; closed by `stop()`. */
  connect(): Redis;
  stop(): Promise<void>;
}

const INSTALL_HINT = "install Debian's redis-server (apt-get install -y redis-server; .ci/run does)";

export async function startLocalRedis(options: { startTimeoutMs?: number } = {}): Promise<LocalRedis> {
  const home = mkdtempSync(join(tmpdir(), 'local-redis-'));
  const log = join(home, 'redis.log');
  const clients: Redis[] = [];
  let server: ReturnType<typeof spawnServer>['child'] | undefined;
  const stop = async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    if (server) await stopServer(server);
    rmSync(home, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const spawned = spawnServer(
      firstExisting(['/usr/bin/redis-server', 'redis-server']),
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        home,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        '--protected-mode',
        'yes',
      ],
      log,
      INSTALL_HINT,
    );
    server = spawned.child;
    await spawned.spawned;
    await waitUntilReady(server, log, /Ready to accept connections/, options.startTimeoutMs ?? 30_000);
    const url = `redis://127.0.0.1:${port}/0`;
    return {
      url,
      port,
      connect: () => {
        const client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2 });
        clients.push(client);
        return client;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
