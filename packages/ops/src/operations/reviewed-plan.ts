import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import type { z } from 'zod';

/**
 * What a write command's dry run saves for review and its apply run may write, nothing more
 * (`ops reverse --plan`, `ops dlq resign --plan`): a JSON file whose digest covers the items, so
 * an item added, removed or changed after the review is refused.
 */

/** The digest of a plan's items, each given by the line that identifies it; order does not matter. */
export function planDigest(lines: readonly string[]): string {
  const hash = createHash('sha256');
  for (const line of [...lines].sort()) hash.update(`${line}\n`);
  return hash.digest('hex').slice(0, 16);
}

export async function writePlanFile(path: string, plan: object): Promise<void> {
  await writeFile(path, `${JSON.stringify(plan, null, 2)}\n`);
}

/**
 * The plan in `path`, checked against `schema` and its digest (`digestOf` recomputes it from the
 * items); `refuse` builds the error naming what is wrong.
 */
export async function readPlanFile<P extends { digest: string }>(
  path: string,
  options: {
    schema: z.ZodType<P>;
    digestOf: (plan: P) => string;
    writtenBy: string;
    refuse: (message: string) => Error;
  },
): Promise<P> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw options.refuse(`cannot read the plan ${path}: ${(error as Error).message}`);
  }
  const parsed = options.schema.safeParse(json);
  if (!parsed.success) throw options.refuse(`${path} is not a plan written by ${options.writtenBy}`);
  if (options.digestOf(parsed.data) !== parsed.data.digest)
    throw options.refuse(
      `${path} was edited after the dry run wrote it (its items no longer match digest ${parsed.data.digest})`,
    );
  return parsed.data;
}
