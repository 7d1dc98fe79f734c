import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { canonicalJson } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { z } from 'zod';
import { OperationsError } from '../operations/index.ts';

/**
 * Where an import stands: the source position after the last page whose every row is settled, the
 * counts up to there, and the run's id. Saved after each page (written to a temporary file, then
 * renamed over the old one, so a crash leaves the old or the new checkpoint, never half of one). A
 * run interrupted at any row resumes after the last saved page: the rows of the page it was in are
 * written again, and their conditional writes find what the interrupted run wrote (its run id
 * says so), so no row is written twice or counted twice, and none is missed.
 *
 * The file holds order numbers and user ids: it is written readable by its owner only (0600, its
 * folder 0700). It carries a digest of its fields, so a checkpoint edited by hand (a position moved
 * to skip rows) is refused rather than resumed; an export's position also hashes the bytes read
 * (sources/file-source.ts), so a rewritten export is refused too.
 */
const countsSchema = z.object({
  read: z.number(),
  imported: z.number(),
  alreadyPresent: z.number(),
  awardedNatively: z.number(),
  conflicting: z.number(),
  contended: z.number(),
  invalid: z.number(),
  pastHorizon: z.number(),
  unverified: z.number(),
});
export type ImportCounts = z.infer<typeof countsSchema>;

export const emptyCounts = (): ImportCounts => ({
  read: 0,
  imported: 0,
  alreadyPresent: 0,
  awardedNatively: 0,
  conflicting: 0,
  contended: 0,
  invalid: 0,
  pastHorizon: 0,
  unverified: 0,
});

const checkpointSchema = z.object({
  version: z.literal(2),
  /** Hash of what was imported where: a checkpoint never resumes another import. */
  importKey: z.string(),
  runId: z.string(),
  startedAt: z.string(),
  updatedAt: z.string(),
  position: z.string().optional(),
  complete: z.boolean(),
  counts: countsSchema,
  invalidReasons: z.record(z.string(), z.number()),
  /** The report's first rows not imported, so a resumed run's report still shows them. */
  rejected: z
    .array(
      z.object({
        kind: z.enum(['invalid', 'conflicting', 'awarded-natively', 'contended']),
        ref: z.string(),
        orderNo: z.string().optional(),
        userId: z.string().optional(),
        points: z.union([z.number(), z.string()]).optional(),
        reason: z.string(),
      }),
    )
    .default([]),
});
export type ImportCheckpoint = z.infer<typeof checkpointSchema>;

/** Owner only: the file names orders and users. */
export const PRIVATE_FILE_MODE = 0o600;
const PRIVATE_FOLDER_MODE = 0o700;

const digestOf = (fields: unknown) => createHash('sha256').update(canonicalJson(fields)).digest('hex');

export class CheckpointError extends OperationsError {
  override readonly name = 'CheckpointError';
}

/** What makes two runs the same import: source, mapping, `--since`, group, ledger mode and target tables. */
export function importKeyOf(what: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(what)).digest('hex').slice(0, 16);
}

export class CheckpointFile {
  constructor(readonly path: string) {}

  /** The checkpoint of an unfinished run of this import, if there is one; one of another unfinished import is refused. */
  async load(importKey: string): Promise<ImportCheckpoint | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new CheckpointError(`cannot read the checkpoint ${this.path}: ${(error as Error).message}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new CheckpointError(`${this.path} is not an import checkpoint`);
    }
    const { digest, ...fields } = (json ?? {}) as Record<string, unknown>;
    const parsed = checkpointSchema.safeParse(fields);
    if (!parsed.success)
      throw new CheckpointError(
        `${this.path} is not an import checkpoint of this version: start a new run (remove it, or give another --checkpoint)`,
      );
    if (digest !== digestOf(fields))
      throw new CheckpointError(
        `${this.path} was changed after the import wrote it (its fields no longer match its digest): ` +
          'a resumed run would start from a position no run recorded. Start a new run: remove it, or give another --checkpoint',
      );
    if (parsed.data.complete) return undefined;
    if (parsed.data.importKey !== importKey)
      throw new CheckpointError(
        `${this.path} is the checkpoint of another import (other source, mapping, --since, group or tables): ` +
          'give this import its own --checkpoint, or remove that file if its import is finished',
      );
    return parsed.data;
  }

  async save(checkpoint: ImportCheckpoint): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: PRIVATE_FOLDER_MODE });
    const temporary = `${this.path}.${process.pid}.tmp`;
    const signed = { ...checkpoint, digest: digestOf(checkpoint) };
    await rm(temporary, { force: true });
    // A new file each time (then renamed over the old one), so the mode is the one it is created with.
    await writeFile(temporary, `${JSON.stringify(signed, null, 2)}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    await rename(temporary, this.path);
  }
}
