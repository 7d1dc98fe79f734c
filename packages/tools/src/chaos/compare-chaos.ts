/**
 * Runs the same chaos command on this checkout and on a base commit, one after the other on
 * the same machine, alternating (base, this, base, this, …), and prints each run's wall time
 * and invariants, the medians and the ratio.
 *
 *   npx tsx packages/tools/src/chaos/compare-chaos.ts [--base <rev>] [--rounds n] [--json] [-- <chaos arguments>]
 *
 * Defaults: base = the commit this branch forked from `main` (`git merge-base HEAD main`),
 * one round, chaos arguments `--seed 42 --messages 3000 --consumers 4`. Both runs get
 * `--json --max-run-seconds 7200`, so a slow base still finishes and both are judged by the
 * same invariants. The base is checked out in a temporary `git worktree` (removed at the
 * end) that shares this checkout's node_modules when package-lock.json is unchanged, else
 * gets its own `npm ci`.
 *
 * Wall time is the whole `npx tsx packages/tools/src/chaos/chaos.ts …` process, emulator start included.
 * Exit code 0 when every run completed with its invariants holding, 1 otherwise.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const DEFAULT_CHAOS_ARGS = ['--seed', '42', '--messages', '3000', '--consumers', '4'];

interface ChaosRun {
  tree: 'base' | 'this';
  wallSeconds: number;
  exitCode: number;
  /** The chaos command's JSON summary line (the base's has no completed/neverSent/inFlight). */
  summary?: Record<string, unknown>;
}

function git(args: string[], cwd = ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
}

function runChaos(tree: ChaosRun['tree'], cwd: string, args: string[]): Promise<ChaosRun> {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const child = spawn(
      'npx',
      ['tsx', 'packages/tools/src/chaos/chaos.ts', ...args, '--json', '--max-run-seconds', '7200'],
      {
        cwd,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('close', (code) => {
      const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
      let summary: Record<string, unknown> | undefined;
      try {
        summary = JSON.parse(stdout.trimEnd().split('\n').at(-1) ?? '') as Record<string, unknown>;
      } catch {
        summary = undefined;
      }
      resolve({ tree, wallSeconds, exitCode: code ?? 1, summary });
    });
  });
}

const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Zero double, zero lost, zero unaccounted, every expected dead letter, and (where reported) completed. */
function invariantsHold(run: ChaosRun): boolean {
  const s = run.summary;
  return (
    run.exitCode === 0 &&
    s !== undefined &&
    s.invariantHolds === true &&
    s.doubleAwards === 0 &&
    s.lostAwards === 0 &&
    s.unaccounted === 0 &&
    s.deadLettered === s.expectedDeadLettered &&
    s.completed !== false
  );
}

function describe(run: ChaosRun): string {
  const s = run.summary ?? {};
  return (
    `${run.tree.padEnd(4)}  ${run.wallSeconds.toFixed(1).padStart(7)} s  exit ${run.exitCode}  deliveries ${s.deliveries}  ` +
    `double ${s.doubleAwards}  lost ${s.lostAwards}  unaccounted ${s.unaccounted}  dead letters ${s.deadLettered}/${s.expectedDeadLettered}  ` +
    `invariants ${invariantsHold(run) ? 'hold' : 'FAIL'}`
  );
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      base: { type: 'string' },
      rounds: { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
    },
  });
  const chaosArgs = positionals.length > 0 ? positionals : DEFAULT_CHAOS_ARGS;
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
  const base = git(['rev-parse', values.base ?? git(['merge-base', 'HEAD', 'main'])]);
  const head = git(['rev-parse', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';

  const baseTree = mkdtempSync(join(tmpdir(), 'compare-chaos-base-'));
  git(['worktree', 'add', '--detach', baseTree, base]);
  try {
    const sameLock = git(['diff', '--name-only', base, 'HEAD', '--', 'package-lock.json']) === '';
    if (sameLock && existsSync(join(ROOT, 'node_modules')))
      symlinkSync(join(ROOT, 'node_modules'), join(baseTree, 'node_modules'));
    else execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: baseTree, stdio: 'inherit' });

    console.log(
      `chaos ${chaosArgs.join(' ')}: base ${base.slice(0, 10)} vs this ${head.slice(0, 10)}${dirty ? ' (with uncommitted changes)' : ''}, ${rounds} round(s), alternating`,
    );
    const runs: ChaosRun[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const [tree, cwd] of [
        ['base', baseTree],
        ['this', ROOT],
      ] as const) {
        const run = await runChaos(tree, cwd, chaosArgs);
        runs.push(run);
        console.log(describe(run));
      }
    }
    const wall = (tree: ChaosRun['tree']) => median(runs.filter((r) => r.tree === tree).map((r) => r.wallSeconds));
    const [baseWall, thisWall] = [wall('base'), wall('this')];
    const allHold = runs.every(invariantsHold);
    console.log(
      `median wall: base ${baseWall.toFixed(1)} s, this ${thisWall.toFixed(1)} s; ratio ${(baseWall / thisWall).toFixed(2)}x; invariants ${allHold ? 'hold in every run' : 'FAILED in a run'}`,
    );
    if (values.json) {
      console.log(
        JSON.stringify({
          chaosArgs,
          base,
          head,
          rounds,
          baseWallSeconds: round1(baseWall),
          thisWallSeconds: round1(thisWall),
          ratio: Math.round((baseWall / thisWall) * 100) / 100,
          invariantsHold: allHold,
          runs,
        }),
      );
    }
    return allHold ? 0 : 1;
  } finally {
    git(['worktree', 'remove', '--force', baseTree]);
  }
}

const round1 = (n: number) => Math.round(n * 10) / 10;

process.exitCode = await main();
