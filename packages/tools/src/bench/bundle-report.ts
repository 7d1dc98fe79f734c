/**
 * Cold-start report: each function's bundle as deployed (esbuild, minified ESM for
 * Node 24 with the SDK bundled: the options of `packages/infra/src/project-function.ts`) and the time
 * its module takes to initialise in a fresh Node process, next to a Powertools-idempotency
 * consumer doing the same work.
 *
 *   npm run bench -- bundle [--runs 7] [--json]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const COMPARISON = {
  name: 'powertools-idempotency (comparison)',
  entry: 'packages/tools/src/comparison/powertools-points-consumer.ts',
};

interface BundleFigures {
  name: string;
  entry: string;
  bytes: number;
  gzipBytes: number;
  /** Median over `runs` fresh processes of `await import(bundle)`, in ms. */
  initMs: number;
  initMsRuns: number[];
}

export async function bundleReport(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: { runs: { type: 'string', default: '7' }, json: { type: 'boolean', default: false } },
  });
  const runs = Number(values.runs);
  const functions = readdirSync(path.join(ROOT, 'packages'))
    .flatMap((wing) => {
      const dir = path.join(ROOT, 'packages', wing, 'functions');
      return existsSync(dir)
        ? readdirSync(dir).map((name) => ({ name, entry: `packages/${wing}/functions/${name}/handler.ts` }))
        : [];
    })
    .filter(({ entry }) => existsSync(path.join(ROOT, entry)))
    .sort((a, b) => a.name.localeCompare(b.name));
  const out = mkdtempSync(path.join(tmpdir(), 'bundle-report-'));
  try {
    const figures: BundleFigures[] = [];
    for (const fn of [...functions, COMPARISON]) figures.push(await measure(fn, out, runs));
    console.log(
      `bundles as deployed (esbuild ${(await import('esbuild')).version}, minified ESM, node24, SDK bundled); init = median of ${runs} fresh \`node\` processes importing the bundle (Node ${process.version})`,
    );
    console.log(`${'function'.padEnd(40)}${'bytes'.padStart(12)}${'gzip'.padStart(10)}${'init ms'.padStart(10)}`);
    for (const f of figures)
      console.log(
        `${f.name.padEnd(40)}${String(f.bytes).padStart(12)}${String(f.gzipBytes).padStart(10)}${f.initMs.toFixed(1).padStart(10)}`,
      );
    if (values.json) console.log(JSON.stringify({ node: process.version, runs, bundles: figures }));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

async function measure(fn: { name: string; entry: string }, outDir: string, runs: number): Promise<BundleFigures> {
  const outfile = path.join(outDir, `${fn.name.replace(/\W+/g, '-')}.mjs`);
  await build({
    entryPoints: [path.join(ROOT, fn.entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    mainFields: ['module', 'main'],
    minify: true,
    sourcemap: 'external',
    banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
    logLevel: 'error',
  });
  const code = readFileSync(outfile);
  const initMsRuns = Array.from({ length: runs }, () => initTime(outfile));
  return {
    name: fn.name,
    entry: fn.entry,
    bytes: code.length,
    gzipBytes: gzipSync(code).length,
    initMs: median(initMsRuns),
    initMsRuns: initMsRuns.map((x) => Math.round(x * 10) / 10),
  };
}

/**
 * Module evaluation of the bundle in a fresh process: what Lambda's init phase adds on top of the runtime's own start.
 */
function initTime(bundle: string): number {
  const script = `const t=performance.now();await import(${JSON.stringify(pathToFileURL(bundle).href)});process.stdout.write(String(performance.now()-t));`;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, AWS_REGION: 'us-east-1', POWERTOOLS_METRICS_DISABLED: 'true' },
    encoding: 'utf8',
  });
  return Number(stdout);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
