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
} from '../../lib/config/index.ts';
import {
  ARTICLE_KEY_TTL_SECONDS,
  CheckpointFile,
  columnMappingOf,
  ImportInterruptedError,
  type ImportReport,
  importKeyOf,
  LEGACY_PASSWORD_VARIABLE,
  LedgerMode,
  type LegacySourceSpec,
  legacySourceKind,
  openLegacySource,
  PRIVATE_FILE_MODE,
  renderImport,
  runLegacyImport,
} from '../../lib/migration/index.ts';
import type { OutputFormat } from '../../lib/operations/index.ts';
import {
  type ConfirmationChannel,
  confirmWrite,
  ProgressBar,
  type ProgressStream,
  pointTablesOf,
  type TargetOptions,
  tableLocation,
  UsageError,
} from '../../lib/operations/index.ts';

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
  'key-ttl'?: string;
  'accept-expired-keys'?: boolean;
  'legacy-max-reconsume-times'?: string;
  'legacy-delay-levels'?: string;
  'legacy-file-reserved-hours'?: string;
  checkpoint?: string;
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
  if (!found) throw new UsageError(`consumer group ${group} is not in the catalogue (lib/config/resources.ts)`);
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
    pageSize: number(v['page-size'], 'page-size'),
  };
}

/**
 * `ops migrate import`: the legacy dedup state into the group's records (and, `--ledger moved`,
 * its awards into the ledger). Exit 0 when every row is imported or already there, 1 when rows
 * were conflicting, invalid or awarded natively (each listed), 2 on an error.
 */
export async function migrateImport(v: MigrateImportValues, ctx: MigrateContext): Promise<number> {
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
  const importKey = importKeyOf({
    source: spec.source.replace(/:\/\/[^@/]*@/, '://'),
    mapping: spec.mapping,
    pattern: spec.pattern,
    since: spec.since?.toISOString(),
    group: group.group,
    ledger,
    idempotencyTable,
    pointTables,
  });
  const checkpoint = dryRun
    ? undefined
    : new CheckpointFile(v.checkpoint ?? join('.ops-checkpoints', `import-${importKey}.json`));

  const source = await openLegacySource(spec);
  try {
    if (!dryRun) {
      const dynamoDb = ctx.dynamoDb();
      const location = await tableLocation(dynamoDb, idempotencyTable!);
      await confirmWrite(
        {
          location,
          resources: [
            ['idempotency table', idempotencyTable!],
            ...(pointTables
              ? ([
                  ['ledger table', pointTables.ledger],
                  ['accounts table', pointTables.accounts],
                ] as const)
              : []),
          ],
          details: [
            `from ${source.description}`,
            `records of consumer group ${group.group}, ledger ${ledger}${spec.since ? `, rows since ${spec.since.toISOString()}` : ''}`,
            `each record lives ${horizon.importedRecordLifetimeSeconds}s after its legacy award`,
            'every write is conditional: nothing already there is overwritten',
            `checkpoint: ${checkpoint!.path}`,
          ],
        },
        ctx.confirmation,
      );
    }
    const bar = new ProgressBar(ctx.stderr, { quiet: v.quiet });
    const table = `${source.kind} source`;
    let report: ImportReport;
    try {
      report = await runLegacyImport({
        source,
        group: group.group,
        ledger,
        horizon,
        ...(dryRun
          ? {}
          : {
              target: {
                dynamoDb: ctx.dynamoDb(),
                idempotencyTable: idempotencyTable!,
                ...(pointTables ? { pointTables } : {}),
                now: () => ctx.now().getTime(),
              },
            }),
        checkpoint,
        importKey,
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
        now: () => ctx.now().getTime(),
      });
    } catch (error) {
      if (error instanceof ImportInterruptedError) ctx.print(renderImport(error.report, ctx.format));
      throw error;
    }
    bar.done({ table, scanned: report.counts.read, estimatedTotal: undefined });
    ctx.print(renderImport(report, ctx.format));
    const c = report.counts;
    return c.conflicting + c.invalid + c.awardedNatively + c.contended > 0 ? 1 : 0;
  } finally {
    await source.close();
  }
}
