import { randomUUID } from 'node:crypto';
import type { LegacyHorizon } from '@rocketmq-lambda/runtime/config/index.ts';
import { mapLimit } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { messageOf, OperationsError } from '../operations/index.ts';
import { type CheckpointFile, emptyCounts, type ImportCheckpoint, type ImportCounts } from './import-checkpoint.ts';
import {
  type ImportTarget,
  importedRecordExpiry,
  type LedgerMode,
  RowOutcome,
  type RowResult,
  writeLegacyAward,
} from './import-writes.ts';
import { checkLegacyRow, type LegacyAward, type LegacyRow } from './legacy-award.ts';
import type { LegacySource } from './legacy-source.ts';

/** A row the import did not write, for the report and the rejects file. */
export interface RejectedRow {
  readonly kind: 'invalid' | 'conflicting' | 'awarded-natively' | 'contended';
  readonly ref: string;
  readonly orderNo?: string;
  readonly userId?: string;
  /** As the source gave it (an invalid row's may be no number). */
  readonly points?: number | string;
  /** Invalid rows: what is wrong with it. Others: what the import found there. */
  readonly reason: string;
}

export interface ImportProgress {
  readonly read: number;
  readonly estimatedTotal: number | undefined;
}

export interface ImportReport {
  readonly runId: string;
  readonly source: string;
  readonly group: string;
  readonly ledger: LedgerMode;
  readonly dryRun: boolean;
  readonly startedAt: string;
  readonly finishedAt: string;
  /** Set when this run continued an interrupted one. */
  readonly resumedFrom?: { readonly position: string; readonly startedAt: string };
  readonly counts: ImportCounts;
  /** Dry run: rows that would be written (imported or found already there). */
  readonly wouldWrite: number;
  readonly invalidReasons: Readonly<Record<string, number>>;
  /** The first rows of each kind that were not imported (all of them are in the rejects file). */
  readonly rejected: readonly RejectedRow[];
  readonly horizon: { readonly importedRecordLifetimeSeconds: number; readonly legacy: string };
  /** For the delta import after the legacy consumers stop: this run's start, less a margin (see docs). */
  readonly deltaSince: string;
  readonly elapsedMs: number;
  readonly rowsPerSecond: number;
  readonly peakRssBytes: number;
  /** `--ledger moved --dry-run --plan <file>`: the plan saved for review (packages/ops/src/migration/import-plan.ts). */
  readonly plan?: {
    readonly file: string;
    readonly digest: string;
    readonly awards: number;
    readonly points: number;
    readonly users: number;
  };
}

export interface LegacyImportOptions {
  readonly source: LegacySource;
  readonly group: string;
  readonly ledger: LedgerMode;
  readonly horizon: LegacyHorizon;
  /** Absent in a dry run: nothing is read from or written to DynamoDB. */
  readonly target?: Omit<ImportTarget, 'runId' | 'group' | 'ledger' | 'horizon'>;
  readonly checkpoint?: CheckpointFile;
  readonly importKey: string;
  readonly concurrency?: number;
  /** Rows of each kind kept in the report; the rest only in `onRejected`. */
  readonly examples?: number;
  readonly onRejected?: (row: RejectedRow) => Promise<void>;
  /** Called once the checkpoint is read: `resumed` says whether this run continues an interrupted one. */
  readonly onBegin?: (resumed: boolean) => Promise<void>;
  readonly onProgress?: (progress: ImportProgress) => void;
  /** Each page's rows in the source's order, before they are written (a plan's tally). */
  readonly onPage?: (rows: readonly LegacyRow[]) => void;
  /** Read no further than this source position (an import plan's end). */
  readonly upTo?: string;
  /** When `upTo` was taken (the plan's dry run): rows after it are the delta import's, so `deltaSince` starts before it. */
  readonly upToAt?: string;
  readonly now?: () => number;
}

/** The import stopped on an unexpected failure; everything up to the last checkpoint is settled, and a re-run resumes. */
export class ImportInterruptedError extends OperationsError {
  override readonly name = 'ImportInterruptedError';
  constructor(
    readonly report: ImportReport,
    override readonly cause: unknown,
  ) {
    super(
      `import interrupted after ${report.counts.read} rows: ${messageOf(cause)}; run the same command again to resume`,
    );
  }
}

/**
 * A transaction left open across the backfill's start can commit a row stamped before it after the
 * backfill read past its place; the delta import reads from this much earlier (reading a row again
 * costs a refused conditional write, nothing else).
 */
export const DELTA_MARGIN_MS = 10 * 60_000;

/**
 * Reads the source page by page, validates each row as the consumer would, writes it (see
 * import-writes.ts) with `concurrency` writes in flight, and checkpoints after each page. Constant
 * memory: one page and the report's first rows of each kind. Resumes an unfinished run of the same
 * import from its checkpoint.
 *
 * Rows of a page that share a user or an order number are written one after another, in the
 * source's order (`lanesOf`): one user's rows would otherwise contend for the user's balance item,
 * and of two rows of one order the first by the source's cursor is the one imported (the other
 * meets it), the same on every run.
 */
export async function runLegacyImport(options: LegacyImportOptions): Promise<ImportReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const resumed = await options.checkpoint?.load(options.importKey);
  const state = {
    runId: resumed?.runId ?? randomUUID(),
    startedAt: resumed?.startedAt ?? new Date(started).toISOString(),
    counts: resumed ? { ...resumed.counts } : emptyCounts(),
    invalidReasons: { ...(resumed?.invalidReasons ?? {}) } as Record<string, number>,
    rejected: [...(resumed?.rejected ?? [])] as RejectedRow[],
    wouldWrite: 0,
    position: resumed?.position,
    readBefore: resumed?.counts.read ?? 0,
  };
  const target: ImportTarget | undefined = options.target && {
    ...options.target,
    runId: state.runId,
    group: options.group,
    ledger: options.ledger,
    horizon: options.horizon,
  };
  await options.onBegin?.(resumed !== undefined);
  const estimatedTotal = await options.source.estimateRows().catch(() => undefined);
  const report = (): ImportReport => reportOf(options, state, resumed, started, now());
  const save = (complete: boolean) => options.checkpoint?.save(checkpointOf(options.importKey, state, now(), complete));
  try {
    for await (const page of options.source.pages(state.position, options.upTo)) {
      options.onPage?.(page.rows);
      await mapLimit(lanesOf(page.rows), options.concurrency ?? 16, async (lane) => {
        for (const row of lane) await settleRow(row, options, target, state, now);
      });
      state.position = page.position;
      await save(false);
      options.onProgress?.({ read: state.counts.read, estimatedTotal });
    }
  } catch (error) {
    if (error instanceof OperationsError) throw error;
    throw new ImportInterruptedError(report(), error);
  }
  await save(true);
  return report();
}

type RunState = {
  counts: ImportCounts;
  invalidReasons: Record<string, number>;
  rejected: RejectedRow[];
  wouldWrite: number;
};

async function settleRow(
  row: LegacyRow,
  options: LegacyImportOptions,
  target: ImportTarget | undefined,
  state: RunState,
  now: () => number,
): Promise<void> {
  state.counts.read++;
  const check = checkLegacyRow(row);
  if (!check.ok) {
    state.counts.invalid++;
    state.invalidReasons[check.reason] = (state.invalidReasons[check.reason] ?? 0) + 1;
    return reject(options, state, {
      kind: 'invalid',
      ref: row.ref,
      ...asText({ orderNo: row.orderNo, userId: row.userId, points: row.points }),
      reason: check.reason,
    });
  }
  const award = check.award;
  if (award.fingerprint === undefined) state.counts.unverified++;
  const result: RowResult = target ? await writeLegacyAward(award, target) : dryRunResult(award, options, now());
  switch (result.outcome) {
    case RowOutcome.IMPORTED:
      if (target) state.counts.imported++;
      else state.wouldWrite++;
      return;
    case RowOutcome.ALREADY_PRESENT:
      state.counts.alreadyPresent++;
      return;
    case RowOutcome.PAST_HORIZON:
      state.counts.pastHorizon++;
      return;
    case RowOutcome.AWARDED_NATIVELY:
      state.counts.awardedNatively++;
      return reject(options, state, rejectedOf('awarded-natively', award, result));
    case RowOutcome.CONFLICTING:
      state.counts.conflicting++;
      return reject(options, state, rejectedOf('conflicting', award, result));
    case RowOutcome.CONTENDED:
      state.counts.contended++;
      return reject(options, state, rejectedOf('contended', award, result));
  }
}

/**
 * The page's rows in lanes: rows that share a user or an order number (directly, or through
 * another row) in one lane, in page order. A union-find over the two keys: linear in the page.
 */
export function lanesOf(rows: readonly LegacyRow[]): LegacyRow[][] {
  const parent: number[] = rows.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  const firstWith = new Map<string, number>();
  rows.forEach((row, i) => {
    const keys = [
      `order\u0000${String(row.orderNo)}`,
      ...(row.userId == null ? [] : [`user\u0000${String(row.userId)}`]),
    ];
    for (const key of keys) {
      const first = firstWith.get(key);
      if (first === undefined) firstWith.set(key, i);
      else parent[find(i)] = find(first);
    }
  });
  const lanes = new Map<number, LegacyRow[]>();
  rows.forEach((row, i) => {
    const lane = lanes.get(find(i));
    if (lane) lane.push(row);
    else lanes.set(find(i), [row]);
  });
  return [...lanes.values()];
}

/** An invalid row's values as text for the report (at most 64 characters each; absent ones left out). */
function asText(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => [k, String(v).slice(0, 64)]),
  );
}

/** A dry run decides only what the source and the horizon decide: DynamoDB's conditions are not asked. */
function dryRunResult(award: LegacyAward, options: LegacyImportOptions, nowMs: number): RowResult {
  const expired = importedRecordExpiry(award, options.horizon, nowMs) <= Math.floor(nowMs / 1000);
  const ledgerWrite = options.ledger === 'moved' && Boolean(award.points);
  return { outcome: expired && !ledgerWrite ? RowOutcome.PAST_HORIZON : RowOutcome.IMPORTED };
}

function rejectedOf(kind: RejectedRow['kind'], award: LegacyAward, result: RowResult): RejectedRow {
  const by = result.existingOrigin === 'legacy-import' ? 'an imported legacy row' : 'the consumer';
  return {
    kind,
    ref: award.ref,
    orderNo: award.orderNo,
    ...(award.userId === undefined ? {} : { userId: award.userId, points: award.points }),
    reason: {
      conflicting: `other content was written for ${award.orderNo} by ${by} (msgId ${result.existingMsgId ?? 'unknown'})`,
      'awarded-natively': `the consumer here awarded a copy first (msgId ${result.existingMsgId ?? 'unknown'}): see ops audit --legacy-source`,
      contended:
        'every commit met another transaction on the same item (TransactionConflict): nothing was written; run the import again',
    }[kind as Exclude<RejectedRow['kind'], 'invalid'>],
  };
}

async function reject(options: LegacyImportOptions, state: RunState, row: RejectedRow): Promise<void> {
  if (state.rejected.filter((r) => r.kind === row.kind).length < (options.examples ?? 20)) state.rejected.push(row);
  await options.onRejected?.(row);
}

function checkpointOf(
  importKey: string,
  state: RunState & { runId: string; startedAt: string; position?: string },
  nowMs: number,
  complete: boolean,
): ImportCheckpoint {
  return {
    version: 2,
    importKey,
    runId: state.runId,
    startedAt: state.startedAt,
    updatedAt: new Date(nowMs).toISOString(),
    ...(state.position === undefined ? {} : { position: state.position }),
    complete,
    counts: state.counts,
    invalidReasons: state.invalidReasons,
    rejected: state.rejected,
  };
}

function reportOf(
  options: LegacyImportOptions,
  state: RunState & { runId: string; startedAt: string; readBefore: number },
  resumed: ImportCheckpoint | undefined,
  started: number,
  finished: number,
): ImportReport {
  const elapsedMs = finished - started;
  const readNow = state.counts.read - state.readBefore;
  return {
    runId: state.runId,
    source: options.source.description,
    group: options.group,
    ledger: options.ledger,
    dryRun: options.target === undefined,
    startedAt: state.startedAt,
    finishedAt: new Date(finished).toISOString(),
    ...(resumed?.position === undefined
      ? {}
      : { resumedFrom: { position: resumed.position, startedAt: resumed.startedAt } }),
    counts: { ...state.counts },
    wouldWrite: state.wouldWrite,
    invalidReasons: { ...state.invalidReasons },
    rejected: state.rejected,
    horizon: {
      importedRecordLifetimeSeconds: options.horizon.importedRecordLifetimeSeconds,
      legacy: `${options.horizon.legacy.describe()}, then the group's record TTL ${options.horizon.recordTtlSeconds}s`,
    },
    deltaSince: new Date(
      Math.min(Date.parse(state.startedAt), Date.parse(options.upToAt ?? state.startedAt)) - DELTA_MARGIN_MS,
    ).toISOString(),
    elapsedMs,
    rowsPerSecond: elapsedMs > 0 ? Math.round((readNow / elapsedMs) * 1000) : 0,
    // The process's high-water mark (Linux: ru_maxrss), so a peak between two samples is not missed.
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
  };
}
