import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { DedupRecord } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { type LocalMariaDb, startLocalMariaDb } from '@rocketmq-lambda/tools/legacy/local-mariadb.ts';
import type { Connection } from 'mysql2/promise';
import { afterAll, beforeAll } from 'vitest';
import { ops, type PointsFixture } from '../operations/operations-fixture.ts';

const ROOT = resolve(import.meta.dirname, '../../../../..');

/** A throw-away MariaDB holding the article's table, for one test file: started before its tests, stopped after. */
export function mariaDbForFile(): { readonly url: string; readonly db: Connection } {
  let server: LocalMariaDb | undefined;
  let db: Connection | undefined;
  beforeAll(async () => {
    server = await startLocalMariaDb();
    db = await server.connect();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get url() {
      return server!.url;
    },
    get db() {
      return db!;
    },
  };
}

/** `ops migrate import` of the legacy consumer group's state, confirmed. */
export const migrateImportArgs = (source: string, ledger: 'moved' | 'kept', ...more: string[]) => [
  'migrate',
  'import',
  '--source',
  source,
  '--group',
  'point-consumer-group',
  '--ledger',
  ledger,
  '--yes',
  ...more,
];

/**
 * `--ledger moved` as an operator runs it: the dry run saves a plan (`--dry-run --plan <file>`),
 * and the arguments returned apply exactly that plan.
 */
export async function reviewedImport(f: PointsFixture, args: readonly string[]): Promise<string[]> {
  const file = join(await mkdtemp(join(tmpdir(), 'import-plan-')), 'plan.json');
  const planned = await ops(f, [...args.filter((a) => a !== '--json'), '--dry-run', '--plan', file]);
  if (planned.code > 1) throw new Error(`the dry run could not plan the import: ${planned.stderr}`);
  return [...args, '--plan', file];
}

/** The article's consumer's rows, as its transaction inserts them (create_time: the server's local time). */
export async function insertLegacyAwards(
  db: Connection,
  rows: ReadonlyArray<{ orderNo: string; userId: number | string; points: number; createTime?: string }>,
): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await db.query(
      `INSERT INTO t_point_record (order_no, user_id, point, create_time) VALUES ${chunk.map(() => '(?, ?, ?, COALESCE(?, NOW()))').join(', ')}`,
      chunk.flatMap((r) => [r.orderNo, r.userId, r.points, r.createTime ?? null]),
    );
  }
}

export async function recordsOf(f: PointsFixture): Promise<Array<DedupRecord & { importRun?: string }>> {
  const out: Array<DedupRecord & { importRun?: string }> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await f.dynamoDb.send(
      new ScanCommand({ TableName: f.resources.tables.idempotency, ExclusiveStartKey }),
    );
    out.push(...((page.Items ?? []) as Array<DedupRecord & { importRun?: string }>));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return out;
}

/**
 * `npm run ops -- …` as its own process, so that a test can kill it with SIGKILL in the middle of
 * a run: no handler, no flush, exactly a crash.
 */
export class OpsProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout = '';
  stderr = '';

  constructor(f: PointsFixture, argv: string[]) {
    this.child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'packages/ops/src/command/ops.ts',
        ...argv,
        '--endpoint',
        f.resources.endpoint,
        '--prefix',
        f.resources.prefix,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child.stdout!.on('data', (c: Buffer) => (this.stdout += c.toString()));
    this.child.stderr!.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.exited = new Promise((done) => this.child.once('exit', (code, signal) => done({ code, signal })));
  }

  /** Kills the run once its checkpoint shows `pages` settled pages: the next page is being written. */
  async killAfterPages(checkpoint: string, rowsPerPage: number, pages: number, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (existsSync(checkpoint)) {
        const read = (JSON.parse(readFileSync(checkpoint, 'utf8')) as { counts: { read: number } }).counts.read;
        if (read >= rowsPerPage * pages) {
          this.child.kill('SIGKILL');
          await this.exited;
          return read;
        }
      }
      if (this.child.exitCode !== null)
        throw new Error(`the import ended before it could be killed: ${this.stdout}${this.stderr}`);
      if (Date.now() > deadline) throw new Error('the import made no progress');
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
