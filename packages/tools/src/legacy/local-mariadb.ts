import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Connection, createConnection } from 'mysql2/promise';
import { freePort } from '../rocketmq/local-rocketmq.ts';
import { ensureMariaDb } from './mariadb-release.ts';
import { runToCompletion, spawnServer, stopServer, waitUntilReady } from './server-process.ts';

/**
 * A throw-away MariaDB on a free loopback port, with its own data directory in a temporary folder
 * that `stop()` removes: the legacy consumer's database in tests, benchmarks and the local run.
 * The server is the project's own MariaDB 11.4.5 (mariadb-release.ts, fetched on first use), never
 * a system package or service, so every machine tests against the same version and none needs root.
 *
 * The server runs in the time zone a legacy deployment in China would (`+08:00` by default), so
 * `DATETIME` columns written with `CURRENT_TIMESTAMP` hold local time, as they do there.
 */
export interface LocalMariaDbOptions {
  /** Database created at start (default `points`). */
  readonly database?: string;
  /** SQL run in that database at start; default: the article's schema (`legacy-schema.sql`). */
  readonly schema?: string;
  readonly timeZone?: string;
  readonly startTimeoutMs?: number;
  /** Also serve TLS with this certificate and key (PEM files): for tests of the import's certificate checks. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
}

export interface LocalMariaDb {
  /** `mysql://legacy:<password>@127.0.0.1:<port>/<database>`: what the import and the replica connect with. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  readonly password: string;
  readonly timeZone: string;
  /** A connection as the application user, for tests to read and plant rows. Closed by `stop()`. */
  connect(): Promise<Connection>;
  stop(): Promise<void>;
}

const INSTALL_HINT = 'the MariaDB server is unpacked into .mariadb/ on first use (npm run mariadb:fetch)';
const READY = /ready for connections/;
export const LEGACY_SCHEMA_FILE = fileURLToPath(new URL('./legacy-schema.sql', import.meta.url));

/** Where one server keeps its files, all under one temporary folder. */
interface ServerHome {
  readonly home: string;
  readonly dataDir: string;
  readonly socket: string;
  readonly log: string;
}

const USER = 'legacy';
const PASSWORD = 'legacy-secret';
const HOST = '127.0.0.1';

export async function startLocalMariaDb(options: LocalMariaDbOptions = {}): Promise<LocalMariaDb> {
  const database = options.database ?? 'points';
  const timeZone = options.timeZone ?? '+08:00';
  const home = mkdtempSync(join(tmpdir(), 'local-mariadb-'));
  const files: ServerHome = {
    home,
    dataDir: join(home, 'data'),
    socket: join(home, 'mariadb.sock'),
    log: join(home, 'mariadb.log'),
  };
  const connections: Connection[] = [];
  let server: ReturnType<typeof spawnServer>['child'] | undefined;
  const stop = async () => {
    await Promise.all(connections.map((c) => c.end().catch(() => undefined)));
    if (server) await stopServer(server);
    rmSync(home, { recursive: true, force: true });
  };
  try {
    const mariaDb = await ensureMariaDb();
    await runToCompletion(mariaDb.installDb, installArgs(mariaDb.basedir, files), INSTALL_HINT);
    const port = await freePort();
    const spawned = spawnServer(
      mariaDb.mariadbd,
      serverArgs(mariaDb.basedir, files, { port, timeZone, tls: options.tls }),
      files.log,
      INSTALL_HINT,
    );
    server = spawned.child;
    await spawned.spawned;
    await waitUntilReady(server, files.log, READY, options.startTimeoutMs ?? 60_000);
    await createApplicationDatabase(files.socket, database, options.schema);
    const login = { host: HOST, port, user: USER, password: PASSWORD, database };
    return {
      url: `mysql://${USER}:${PASSWORD}@${HOST}:${port}/${database}`,
      ...login,
      timeZone,
      connect: async () => {
        const connection = await createConnection({ ...login, multipleStatements: true });
        connections.push(connection);
        return connection;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

// mariadbd refuses to run as root unless told to; as anyone else it runs as that user.
const asUser = () => (process.getuid?.() === 0 ? ['--user=root'] : []);
const SMALL = ['--innodb-log-file-size=8M', '--innodb-buffer-pool-size=32M'];

/** `mariadb-install-db`'s arguments: a fresh data directory, root authenticated by password, no test database. */
function installArgs(basedir: string, files: ServerHome): string[] {
  return [
    '--no-defaults',
    `--basedir=${basedir}`,
    `--datadir=${files.dataDir}`,
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    ...asUser(),
    ...SMALL,
  ];
}

/** `mariadbd`'s arguments: loopback only, no binary log, no performance schema, in the deployment's time zone. */
function serverArgs(
  basedir: string,
  files: ServerHome,
  { port, timeZone, tls }: { port: number; timeZone: string; tls: LocalMariaDbOptions['tls'] },
): string[] {
  return [
    '--no-defaults',
    `--basedir=${basedir}`,
    `--datadir=${files.dataDir}`,
    `--socket=${files.socket}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--pid-file=${join(files.home, 'mariadb.pid')}`,
    '--skip-name-resolve',
    '--skip-log-bin',
    '--performance-schema=OFF',
    `--default-time-zone=${timeZone}`,
    ...(tls ? [`--ssl-cert=${tls.certFile}`, `--ssl-key=${tls.keyFile}`] : []),
    ...asUser(),
    ...SMALL,
  ];
}

/** As root over the socket: the database, the application user with every right on it, and the schema in it. */
async function createApplicationDatabase(socket: string, database: string, schema: string | undefined): Promise<void> {
  const root = await createConnection({ socketPath: socket, user: 'root', multipleStatements: true });
  try {
    await root.query(
      `CREATE DATABASE ${database} CHARACTER SET utf8mb4;
       CREATE USER '${USER}'@'127.0.0.1' IDENTIFIED BY '${PASSWORD}';
       GRANT ALL ON ${database}.* TO '${USER}'@'127.0.0.1';
       USE ${database};
       ${schema ?? readFileSync(LEGACY_SCHEMA_FILE, 'utf8')}`,
    );
  } finally {
    await root.end();
  }
}
