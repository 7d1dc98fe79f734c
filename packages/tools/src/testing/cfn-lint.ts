import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensurePythonEnvironment } from '../emulator/python-environment.ts';

/** Every CloudFormation template a synthesis wrote (the app's, and each stage assembly's). */
export function templatesIn(outdir: string): string[] {
  return readdirSync(outdir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.template.json'))
    .map((file) => path.join(outdir, file));
}

/**
 * cfn-lint as pinned in packages/tools/src/emulator/requirements.txt (from the project's .venv), over the
 * templates; resolves to its parseable output and exit code (non-zero only for errors).
 */
export async function cfnLint(templates: readonly string[]): Promise<{ code: number | string; out: string }> {
  const bin = path.join(path.dirname(await ensurePythonEnvironment()), 'cfn-lint');
  return promisify(execFile)(bin, ['--non-zero-exit-code', 'error', '--format', 'parseable', ...templates]).then(
    (r) => ({ code: 0, out: r.stdout }),
    (e: { code: number | string; stdout?: string; stderr?: string }) => ({
      code: e.code,
      out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
    }),
  );
}
