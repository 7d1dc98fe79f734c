import { appendFile, chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  IncoherentLifetimesError,
  type LegacyLifetimeSettings,
  legacyHorizonOf,
  tableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import {
  ARTICLE_KEY_TTL_SECONDS,
  CheckpointFile,
  checkAgainstPlan,
  checkPlanImport,
  columnMappingOf,
  ImportInterruptedError,
  type ImportPlan,
  type ImportReport,
  importKeyOf,
  LEGACY_PASSWORD_VARIABLE,
  LedgerMode,
  type LegacySource,
  type LegacySourceSpec,
  legacySourceKind,
  openLegacySource,
  PlanTally,
  PRIVATE_FILE_MODE,
  readImportPlan,
  renderImport,
  runLegacyImport,
  tallySource,
  writeImportPlan,
} from '../migration/index.ts';
import type { OutputFormat } from '../operations/index.ts';
import {
  type ConfirmationChannel,
  confirmWrite,
  ProgressBar,
  type ProgressStream,
  pointTablesOf,
  type TargetOptions,
  tableLocation,
  UsageError,
} from '../operations/index.ts';

/** What `ops migrate import` reads from the command line (ops.ts parses it). */
export interface MigrateImportValues {
  source?: string;
  group?: string;
  ledger?: string;
  table?: string;
  map?: string;
  pattern?: string;
  since?: string;
  'time-zone'?: string;
  'legacy-ca'?: string;
  sha256?: string;
  'key-ttl'?: string;
  'accept-expired-keys'?: boolean;
  'legacy-max-reconsume-times'?: string;
  'legacy-delay-levels'?: string;
  'legacy-file-reserved-hours'?: string;
  checkpoint?: string;
  plan?: string;
  rejects?: string;
  concurrency?: string;
  'page-size'?: string;
  'idempotency-table'?: string;
  'dry-run'?: boolean;
  quiet?: boolean;
}

export interface MigrateContext {
  format: OutputFormat;
  target: TargetOptions;
  dynamoDb: () => DynamoDBDocumentClient;
  print: (text: string) => void;
  stderr: ProgressStream;
  confirmation: ConfirmationChannel;
  now: () => Date;
}

const number = (value: string | undefined, name: string): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a number, got "${value}"`);
  return n;
};

function catalogueGroup(group: string | undefined): ConsumerGroupDefinition {
  if (!group) throw new UsageError('name the consumer group whose records the import writes: --group <group>');
  const found = (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).find((g) => g.group === group);
  if (!found)
    throw new UsageError(`consumer group ${group} is not in the catalogue (packages/runtime/src/config/resources.ts)`);
  return found;
}

/** The legacy group's and broker's settings from the command line; absent ones are RocketMQ 4.x's defaults. */
export function legacySettingsOf(v: MigrateImportValues, keyTtlSeconds?: number): LegacyLifetimeSettings {
  return {
    maxReconsumeTimes: number(v['legacy-max-reconsume-times'], 'legacy-max-reconsume-times'),
    messageDelayLevel: v['legacy-delay-levels'],
    fileReservedTimeHours: number(v['legacy-file-reserved-hours'], 'legacy-file-reserved-hours'),
    dedupKeyTtlSeconds: keyTtlSeconds,
  };
}

/** The source as `--source`, `--table`, `--map`, `--pattern`, `--since`, `--time-zone` and `--key-ttl` describe it. */
export function sourceSpecOf(v: MigrateImportValues): LegacySourceSpec {
  if (!v.source)
    throw new UsageError('name the legacy store: --source mysql://…, redis://… or an export .csv / .jsonl');
  const since = v.since === undefined ? undefined : new Date(v.since);
  if (since && Number.isNaN(since.getTime()))
    throw new UsageError(`--since wants a time like 2026-12-01T09:00:00Z, got "${v.since}"`);
  return {
    source: v.source,
    mapping: columnMappingOf(v.table, v.map),
    since,
    timeZone: v['time-zone'],
    pattern: v.pattern,
    keyTtlSeconds: number(v['key-ttl'], 'key-ttl'),
    password: process.env[LEGACY_PASSWORD_VARIABLE],
    caFile: v['legacy-ca'],
    ...(v.sha256 === undefined ? {} : { sha256: v.sha256 }),
    pageSize: number(v['page-size'], 'page-size'),
  };
}

/**
 * `ops migrate import`: the legacy dedup state into the group's records (and, `--ledger moved`,
 * its awards into the ledger, after a reviewed plan). Exit 0 when every row is imported or
 * already there, 1 when rows were conflicting, contended, invalid or awarded natively (each
 * listed), 2 on an error.
 */
export async function migrateImport(v: MigrateImportValues, ctx: MigrateContext): Promise<number> {
  const run = importRunOf(v, ctx);
  const source = await openLegacySource(run.spec);
  try {
    const plan = await movedPlan(v, run, source, ctx);
    if (!run.dryRun) await confirmImport(run, source, plan.reviewed, ctx);
    const bar = new ProgressBar(ctx.stderr, { quiet: v.quiet });
    const table = `${source.kind} source`;
    let report: ImportReport;
    try {
      report = await runLegacyImport({
        source,
        group: run.group.group,
        ledger: run.ledger,
        horizon: run.horizon,
        ...(run.dryRun
          ? {}
          : {
              target: {
                dynamoDb: ctx.dynamoDb(),
                idempotencyTable: run.idempotencyTable!,
                ...(run.pointTables ? { pointTables: run.pointTables } : {}),
                now: () => ctx.now().getTime(),
              },
            }),
        checkpoint: run.checkpoint,
        importKey: run.importKey,
        concurrency: number(v.concurrency, 'concurrency'),
        // A resumed run adds to the rejects file of the run it continues; a new run starts it afresh.
        // It names orders and users: owner only, whoever created it first.
        onBegin: async (resumed) => {
          if (!v.rejects) return;
          if (!resumed) await writeFile(v.rejects, '', { mode: PRIVATE_FILE_MODE });
          await chmod(v.rejects, PRIVATE_FILE_MODE);
        },
        onRejected: v.rejects ? (row) => appendFile(v.rejects!, `${JSON.stringify(row)}\n`) : undefined,
        onProgress: (p) => bar.update({ table, scanned: p.read, estimatedTotal: p.estimatedTotal }),
        ...(plan.upTo === undefined ? {} : { upTo: plan.upTo, upToAt: plan.upToAt }),
        ...(plan.tally ? { onPage: (rows) => plan.tally!.add(rows) } : {}),
        now: () => ctx.now().getTime(),
      });
    } catch (error) {
      if (error instanceof ImportInterruptedError) ctx.print(renderImport(error.report, ctx.format));
      throw error;
    }
    bar.done({ table, scanned: report.counts.read, estimatedTotal: undefined });
    const saved = plan.tally ? await saveImportPlan(v.plan!, plan.tally, run, source, plan) : undefined;
    ctx.print(renderImport(saved ? { ...report, plan: saved } : report, ctx.format));
    const c = report.counts;
    return c.conflicting + c.invalid + c.awardedNatively + c.contended > 0 ? 1 : 0;
  } finally {
    await source.close();
  }
}

type ImportRun = ReturnType<typeof importRunOf>;

/** The import the command line describes, checked before anything is read. */
function importRunOf(v: MigrateImportValues, ctx: MigrateContext) {
  const group = catalogueGroup(v.group);
  const ledger = v.ledger;
  if (ledger !== LedgerMode.MOVED && ledger !== LedgerMode.KEPT)
    throw new UsageError(
      '--ledger moved (legacy awards enter the ledger and the balances here) or --ledger kept (dedup records only; the legacy ledger keeps its awards): say which',
    );
  const spec = sourceSpecOf(v);
  const kind = legacySourceKind(spec.source);
  if (ledger === LedgerMode.MOVED && (kind === 'redis' || spec.mapping.user === undefined))
    throw new UsageError(
      '--ledger moved needs the user and the points of each award; this source keeps only keys: use --ledger kept',
    );
  const keyTtl = kind === 'redis' ? (spec.keyTtlSeconds ?? ARTICLE_KEY_TTL_SECONDS) : undefined;
  // Refused here, before anything is read, when the settings disagree.
  const horizon = legacyHorizonOf(group, legacySettingsOf(v, keyTtl), { acceptExpiredKeys: v['accept-expired-keys'] });
  if (ledger === LedgerMode.MOVED && !group.tables.includes('ledger'))
    throw new IncoherentLifetimesError(`--ledger moved: consumer group ${group.group} writes no point ledger`);
  const dryRun = v['dry-run'] === true;
  const idempotencyTable =
    v['idempotency-table'] ?? (ctx.target.prefix ? tableName(ctx.target.prefix, 'idempotency') : undefined);
  if (!dryRun && !idempotencyTable)
    throw new UsageError(
      'name the tables: --prefix <deployment prefix>, or --idempotency-table (and the point tables)',
    );
  const pointTables = ledger === LedgerMode.MOVED && !dryRun ? pointTablesOf(ctx.target) : undefined;
  const what = {
    source: spec.source.replace(/:\/\/[^@/]*@/, '://'),
    mapping: spec.mapping,
    pattern: spec.pattern,
    since: spec.since?.toISOString(),
    group: group.group,
    ledger,
  };
  const importKey = importKeyOf({ ...what, idempotencyTable, pointTables });
  const checkpoint = dryRun
    ? undefined
    : new CheckpointFile(v.checkpoint ?? join('.ops-checkpoints', `import-${importKey}.json`));
  return {
    group,
    ledger,
    spec,
    horizon,
    dryRun,
    idempotencyTable,
    pointTables,
    importKey,
    checkpoint,
    planKey: importKeyOf(what),
  };
}

/**
 * `--ledger moved` raises balances only as an operator reviewed (packages/ops/src/migration/import-plan.ts): a
 * dry run with `--plan <file>` tallies the awards as it reads them and saves the plan; the applying
 * run reads the source up to the plan's end and refuses, before writing, unless it holds exactly
 * the reviewed awards.
 */
type MovedPlan = { upTo?: string; upToAt?: string; tally?: PlanTally; reviewed?: ImportPlan & { file: string } };

async function movedPlan(
  v: MigrateImportValues,
  run: ImportRun,
  source: LegacySource,
  ctx: MigrateContext,
): Promise<MovedPlan> {
  if (run.ledger !== LedgerMode.MOVED) {
    if (v.plan) throw new UsageError('--plan is for --ledger moved: --ledger kept raises no balance');
    return {};
  }
  if (run.dryRun) {
    if (!v.plan) return {};
    const upToAt = ctx.now().toISOString();
    return { upTo: await source.endPosition(), upToAt, tally: new PlanTally() };
  }
  if (!v.plan)
    throw new UsageError(
      '--ledger moved raises balances: review a plan first. Run the same command with --dry-run --plan <file>, ' +
        'review the file (awards and points per user), then run it with --plan <file>',
    );
  const reviewed = await readImportPlan(v.plan);
  checkPlanImport(reviewed, run.planKey, v.plan);
  const now = (await tallySource(source, reviewed.upTo)).plan({ ...reviewed });
  checkAgainstPlan(reviewed, now);
  return { upTo: reviewed.upTo, upToAt: reviewed.createdAt, reviewed: { ...reviewed, file: v.plan } };
}

async function saveImportPlan(
  file: string,
  tally: PlanTally,
  run: ImportRun,
  source: LegacySource,
  at: MovedPlan,
): Promise<NonNullable<ImportReport['plan']>> {
  // Dated when the source's end was taken: the delta import after it reads from before then.
  const plan = tally.plan({ createdAt: at.upToAt!, planKey: run.planKey, source: source.description, upTo: at.upTo! });
  await writeImportPlan(file, plan);
  return { file, digest: plan.digest, awards: plan.awards, points: plan.points, users: plan.users.length };
}

async function confirmImport(
  run: ImportRun,
  source: LegacySource,
  reviewed: (ImportPlan & { file: string }) | undefined,
  ctx: MigrateContext,
): Promise<void> {
  const location = await tableLocation(ctx.dynamoDb(), run.idempotencyTable!);
  const { pointTables, spec } = run;
  await confirmWrite(
    {
      location,
      resources: [
        ['idempotency table', run.idempotencyTable!],
        ...(pointTables
          ? ([
              ['ledger table', pointTables.ledger],
              ['accounts table', pointTables.accounts],
            ] as const)
          : []),
      ],
      details: [
        `from ${source.description}`,
        `records of consumer group ${run.group.group}, ledger ${run.ledger}${spec.since ? `, rows since ${spec.since.toISOString()}` : ''}`,
        ...(reviewed
          ? [
              `the reviewed plan ${reviewed.digest} (${reviewed.file}): ${reviewed.awards} awards, ${reviewed.points} points to ${reviewed.users.length} user(s); the source still holds exactly these`,
            ]
          : []),
        `each record lives ${run.horizon.importedRecordLifetimeSeconds}s after its legacy award`,
        'every write is conditional: nothing already there is overwritten',
        `checkpoint: ${run.checkpoint!.path}`,
      ],
    },
    ctx.confirmation,
  );
}
