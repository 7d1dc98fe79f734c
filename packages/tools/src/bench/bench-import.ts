/**
 * The import benchmark: `ops migrate import` of a generated export of the article's table
 * (`order_no,user_id,point,create_time,id`) into fresh tables on the emulator, once with
 * `--ledger kept` and once with `--ledger moved`, each run twice (the second run finds every row
 * already there: the cost of a re-run or of a resume over rows written before a crash). Then a
 * `--dry-run` over a larger export in a process of its own, for its peak RSS: the import streams.
 *
 *   npm run bench -- import [--rows 100000] [--dry-run-rows 1000000] [--concurrency 16] [--json]
 *
 * Round trips are counted by a middleware on the SDK client; write units come from DynamoDB's
 * documented rules (packages/tools/src/instrumentation/write-units.ts: a cancelled transaction counts 0
 * there, so a re-run's `moved` figure is a lower bound; plan with 6 per row, as docs/strategies.md
 * says). Rows per second are the emulator's, on this machine: what scales with DynamoDB is the
 * write units and round trips per row, not the rate.
 *
 * With --json the last line of standard output is the machine-readable result.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { runOps } from '@rocketmq-lambda/ops/command/ops.ts';
import { startEmulator } from '../emulator/emulator.ts';
import { type RoundTrip, RoundTripCounter } from '../instrumentation/round-trip-counter.ts';
import { writeUnitsOf } from '../instrumentation/write-units.ts';
import { provisionLocal } from '../local/provision.ts';

process.env.AWS_REGION ??= 'us-east-1';

interface PassFigures {
  rowsPerSecond: number;
  imported: number;
  alreadyPresent: number;
  roundTripsPerRow: number;
  writeUnitsPerRow: number;
  byCommand: Record<string, number>;
}

/** The legacy table as an export: distinct orders, 5,000 users, awards of 1 to 50 points over the last day. */
async function writeExport(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  const start = Date.now() - 86_400_000;
  out.write('order_no,user_id,point,create_time,id\n');
  for (let i = 1; i <= rows; i++) {
    const time = new Date(start + Math.floor((i / rows) * 86_000_000)).toISOString();
    const line = `SO${String(i).padStart(12, '0')},${1 + (i % 5_000)},${1 + (i % 50)},${time},${i}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

async function importPass(argv: string[], client: DynamoDBDocumentClient, trips: RoundTrip[]): Promise<PassFigures> {
  trips.length = 0;
  let stdout = '';
  let stderr = '';
  const t0 = performance.now();
  const code = await runOps(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { isTTY: false, write: (s: string) => (stderr += s) },
    dynamoDb: client,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`ops migrate import exited ${code}: ${stderr.trim()}`);
  const report = JSON.parse(stdout);
  const byCommand: Record<string, number> = {};
  for (const t of trips) byCommand[t.command] = (byCommand[t.command] ?? 0) + 1;
  const rows = report.counts.read as number;
  return {
    rowsPerSecond: Math.round(rows / seconds),
    imported: report.counts.imported,
    alreadyPresent: report.counts.alreadyPresent,
    roundTripsPerRow: round(trips.length / rows),
    writeUnitsPerRow: round(trips.reduce((s, t) => s + writeUnitsOf(t), 0) / rows),
    byCommand,
  };
}

async function ledgerMode(endpoint: string, ledger: 'kept' | 'moved', csv: string, dir: string, concurrency: number) {
  const resources = await provisionLocal(endpoint, `bench-import-${ledger}-${Date.now().toString(36)}`, {
    groups: [POINTS_GROUP],
  });
  const base = new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const trips: RoundTrip[] = [];
  new RoundTripCounter().attach(base).onRoundTrip((t) => trips.push(t));
  const client = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  const argv = (run: string) => [
    ...['migrate', 'import', '--source', csv, '--group', POINTS_GROUP, '--ledger', ledger],
    ...['--concurrency', String(concurrency), '--checkpoint', join(dir, `${ledger}-${run}.json`)],
    ...['--yes', '--json', '--quiet', '--endpoint', endpoint, '--prefix', resources.prefix],
    ...(ledger === 'moved' ? ['--plan', join(dir, 'moved-plan.json')] : []),
  ];
  // --ledger moved applies a reviewed plan: the dry run that saves it touches no AWS resource.
  if (ledger === 'moved') await importPass([...argv('plan'), '--dry-run'], client, trips);
  const first = await importPass(argv('first'), client, trips);
  const rerun = await importPass(argv('rerun'), client, trips);
  base.destroy();
  return { first, rerun };
}

/** `--dry-run` in a process of its own, so that its peak RSS is the import's alone. */
async function dryRun(csv: string, rows: number) {
  const child = spawn(
    process.execPath,
    [
      ...['--import', 'tsx', 'packages/ops/src/command/ops.ts', 'migrate', 'import', '--source', csv],
      ...['--group', POINTS_GROUP, '--ledger', 'moved', '--dry-run', '--json', '--quiet'],
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const [code] = await once(child, 'exit');
  if (code !== 0 && code !== 1) throw new Error(`the dry run exited ${code}`);
  const report = JSON.parse(stdout);
  if (report.counts.read !== rows) throw new Error(`the dry run read ${report.counts.read} of ${rows} rows`);
  return {
    rows,
    rowsPerSecond: report.rowsPerSecond as number,
    seconds: round(report.elapsedMs / 1000),
    peakRssMb: Math.round(report.peakRssBytes / 1_048_576),
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;

export async function importBench(argv: readonly string[]): Promise<void> {
  const { values: args } = parseArgs({
    args: [...argv],
    options: {
      rows: { type: 'string', default: '100000' },
      'dry-run-rows': { type: 'string', default: '1000000' },
      concurrency: { type: 'string', default: '16' },
      json: { type: 'boolean', default: false },
    },
  });
  const rows = Number(args.rows);
  const dryRunRows = Number(args['dry-run-rows']);
  const concurrency = Number(args.concurrency);
  const dir = await mkdtemp(join(tmpdir(), 'bench-import-'));
  const emulator = await startEmulator();
  try {
    const csv = join(dir, 'legacy.csv');
    await writeExport(csv, rows);
    const kept = await ledgerMode(emulator.endpoint, 'kept', csv, dir, concurrency);
    const moved = await ledgerMode(emulator.endpoint, 'moved', csv, dir, concurrency);
    let dry: Awaited<ReturnType<typeof dryRun>> | undefined;
    if (dryRunRows > 0) {
      const big = join(dir, 'legacy-dry-run.csv');
      await writeExport(big, dryRunRows);
      dry = await dryRun(big, dryRunRows);
    }
    const result = { rows, concurrency, kept, moved, dryRun: dry };
    print(result);
    if (args.json) console.log(JSON.stringify(result));
  } finally {
    await emulator.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function print(r: {
  rows: number;
  concurrency: number;
  kept: { first: PassFigures; rerun: PassFigures };
  moved: { first: PassFigures; rerun: PassFigures };
  dryRun?: { rows: number; rowsPerSecond: number; seconds: number; peakRssMb: number };
}) {
  const line = (name: string, p: PassFigures) =>
    `${name.padEnd(22)} ${String(p.rowsPerSecond).padStart(8)} ${String(p.roundTripsPerRow).padStart(12)} ${String(p.writeUnitsPerRow).padStart(13)}   imported ${p.imported}, already present ${p.alreadyPresent}`;
  console.log(`Import of ${r.rows} legacy rows (CSV export) into the emulator, concurrency ${r.concurrency}:`);
  console.log(
    `${'run'.padEnd(22)} ${'rows/s'.padStart(8)} ${'round trips'.padStart(12)} ${'write units'.padStart(13)}`,
  );
  console.log(line('--ledger kept', r.kept.first));
  console.log(line('--ledger kept, re-run', r.kept.rerun));
  console.log(line('--ledger moved', r.moved.first));
  console.log(line('--ledger moved, re-run', r.moved.rerun));
  console.log('(round trips and write units per row; a cancelled transaction counts 0 write units here)');
  if (r.dryRun)
    console.log(
      `--dry-run over ${r.dryRun.rows} rows: ${r.dryRun.seconds} s, ${r.dryRun.rowsPerSecond} rows/s, peak RSS ${r.dryRun.peakRssMb} MB`,
    );
}
