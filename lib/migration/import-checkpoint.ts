import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { OperationsError } from '../operations/index.ts';

/**
 * Where an import stands: the source position after the last page whose every row is settled, the
 * counts up to there, and the run's id. Saved after each page (written to a temporary file, then
 * renamed over the old one, so a crash leaves the old or the new checkpoint, never half of one). A
 * run interrupted at any row resumes after the last saved page: the rows of the page it was in are
 * written again, and their conditional writes find what the interrupted run wrote (its run id
 * says so), so no row is written twice or counted twice, and none is missed.
 */
const countsSchema = z.object({
  read: z.number(),
  imported: z.number(),
  alreadyPresent: z.number(),
  awardedNatively: z.number(),
  conflicting: z.number(),
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
  invalid: 0,
  pastHorizon: 0,
  unverified: 0,
});

const checkpointSchema = z.object({
  version: z.literal(1),
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
        kind: z.enum(['invalid', 'conflicting', 'awarded-natively']),
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
    const parsed = checkpointSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new CheckpointError(`${this.path} is not an import checkpoint`);
    if (parsed.data.complete) return undefined;
    if (parsed.data.importKey !== importKey)
      throw new CheckpointError(
        `${this.path} is the checkpoint of another import (other source, mapping, --since, group or tables): ` +
          'give this import its own --checkpoint, or remove that file if its import is finished',
      );
    return parsed.data;
  }

  async save(checkpoint: ImportCheckpoint): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(checkpoint, null, 2)}\n`);
    await rename(temporary, this.path);
  }
}
