import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureCheckov } from '../checkov/checkov-environment.ts';

export interface CheckovFinding {
  readonly check_id: string;
  readonly check_name: string;
  readonly resource: string;
  readonly file_path: string;
}

export interface CheckovSkipped extends CheckovFinding {
  readonly check_result: { readonly suppress_comment: string };
}

export interface CheckovReport {
  readonly summary: { passed: number; failed: number; skipped: number; parsing_errors: number };
  readonly failed: readonly CheckovFinding[];
  readonly skipped: readonly CheckovSkipped[];
}

/**
 * Checkov (packages/tools/src/checkov/requirements.txt, from `.venv-checkov`) over CloudFormation templates,
 * offline: `--skip-download` keeps it from asking Prisma Cloud for guidelines or policies.
 */
export async function checkov(templates: readonly string[]): Promise<CheckovReport> {
  const bin = await ensureCheckov();
  const args = [
    '--framework',
    'cloudformation',
    '--skip-download',
    '--compact',
    '--output',
    'json',
    ...templates.flatMap((t) => ['--file', t]),
  ];
  // Exit 1 is "something failed": the report says what.
  const stdout = await promisify(execFile)(bin, args, { maxBuffer: 64 * 1024 * 1024 }).then(
    (r) => r.stdout,
    (e: { code?: number; stdout?: string; stderr?: string }) => {
      if (e.code === 1 && e.stdout) return e.stdout;
      throw new Error(`checkov failed (exit ${e.code}): ${e.stderr ?? ''}`);
    },
  );
  const parsed = JSON.parse(stdout);
  const reports: Array<{ summary: CheckovReport['summary']; results: Record<string, unknown[]> }> = Array.isArray(
    parsed,
  )
    ? parsed
    : [parsed];
  const sum = (key: keyof CheckovReport['summary']) => reports.reduce((n, r) => n + r.summary[key], 0);
  return {
    summary: {
      passed: sum('passed'),
      failed: sum('failed'),
      skipped: sum('skipped'),
      parsing_errors: sum('parsing_errors'),
    },
    failed: reports.flatMap((r) => r.results.failed_checks as CheckovFinding[]),
    skipped: reports.flatMap((r) => r.results.skipped_checks as CheckovSkipped[]),
  };
}
