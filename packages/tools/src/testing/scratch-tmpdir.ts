import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Every temporary file of a test run in one folder of its own, removed when the run ends: the workers
 * and every process they start inherit `TMPDIR`, so what they make under `os.tmpdir()` lands there.
 * Without it each `npm test` left its CDK apps' assemblies behind (an `App` without an `outdir`
 * synthesizes into a new `cdk.out*` folder of the system's temporary directory and never removes it:
 * some 150 folders a run, the committed app's with its bundles at 170 MB each), besides the plans,
 * imports and captures the command tests write, until the disk filled.
 */
export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const scratch = mkdtempSync(join(tmpdir(), 'rocketmq-lambda-tests-'));
  process.env.TMPDIR = scratch;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(scratch, { recursive: true, force: true });
  };
}
