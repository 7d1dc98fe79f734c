import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../../../..');

/** Every static or dynamic import (or re-export) specifier of a TypeScript file. */
const importsOf = (file: string) =>
  [...readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'([^']+)'/g)].map((m) => m[1]!);
const tsFilesUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
/** Where a relative import lands, as a path from the repository root (`packages/runtime/src/…`, `packages/tools/src/…`). */
const landing = (file: string, spec: string) =>
  relative(ROOT, spec.startsWith('.') ? resolve(dirname(file), spec) : createRequire(file).resolve(spec));
/** Imports of the tree's own files: relative ones, and another wing's by its package name (through its exports). */
const relativeImportsOf = (file: string) =>
  importsOf(file)
    .filter((s) => s.startsWith('.') || s.startsWith('@rocketmq-lambda/'))
    .map((s) => landing(file, s));

/**
 * The library packages (what runs in Lambda, the bridge and the ops commands), each by its folder in
 * its wing, and the unit tests that prove each one's modules.
 */
const LIB_PACKAGE_DIRS: Record<string, { dir: string; unitTests: string }> = {
  aws: { dir: 'packages/runtime/src/aws', unitTests: 'packages/runtime/test/unit/aws' },
  config: { dir: 'packages/runtime/src/config', unitTests: 'packages/runtime/test/unit/config' },
  consumer: { dir: 'packages/runtime/src/consumer', unitTests: 'packages/runtime/test/unit/consumer' },
  rocketmq: { dir: 'packages/runtime/src/rocketmq', unitTests: 'packages/runtime/test/unit/rocketmq' },
  tracing: { dir: 'packages/runtime/src/tracing', unitTests: 'packages/runtime/test/unit/tracing' },
  points: { dir: 'packages/consumers/src/points', unitTests: 'packages/consumers/test/unit/points' },
  orders: { dir: 'packages/consumers/src/orders', unitTests: 'packages/consumers/test/unit/orders' },
  coupons: { dir: 'packages/consumers/src/coupons', unitTests: 'packages/consumers/test/unit/coupons' },
  dingtalk: { dir: 'packages/notifier/src', unitTests: 'packages/notifier/test/unit' },
  operations: { dir: 'packages/ops/src/operations', unitTests: 'packages/ops/test/unit/operations' },
  migration: { dir: 'packages/ops/src/migration', unitTests: 'packages/ops/test/unit/migration' },
};
const LIB_PACKAGES = Object.keys(LIB_PACKAGE_DIRS);
const within = (path: string, dir: string) => path.startsWith(`${dir}/`);
/** The library package a repository path belongs to, if any. */
const packageOf = (path: string) => LIB_PACKAGES.find((pkg) => within(path, LIB_PACKAGE_DIRS[pkg]!.dir));
const isLib = (path: string) => packageOf(path) !== undefined;
const LIB_FILES = LIB_PACKAGES.flatMap((pkg) => tsFilesUnder(LIB_PACKAGE_DIRS[pkg]!.dir));
/** Handler modules: every packages/<wing>/functions/. */
const FUNCTION_FILES = readdirSync(join(ROOT, 'packages'))
  .filter((wing) => existsSync(join(ROOT, 'packages', wing, 'functions')))
  .flatMap((wing) => tsFilesUnder(`packages/${wing}/functions`));
/** Tooling and tests: the tools wing, the ops command, every packages/<wing>/test/. */
const isToolingOrTest = (path: string) =>
  within(path, 'packages/tools') || within(path, 'packages/ops/src/command') || /^packages\/[\w-]+\/test\//.test(path);
const EVERY_TS_FILE = tsFilesUnder('packages');

/**
 * The only places allowed to reach past a package's entry point, each with its reason. A unit test
 * proves one module of a package on its own (a runner without Middy, a step over an explicit state),
 * which the entry point deliberately does not export.
 */
const PAST_THE_ENTRY_POINT: readonly {
  from: (path: string) => string | undefined;
  to: (fromPackage: string) => string;
  reason: string;
}[] = [
  {
    from: (path) => LIB_PACKAGES.find((pkg) => within(path, LIB_PACKAGE_DIRS[pkg]!.unitTests)),
    to: (pkg) => LIB_PACKAGE_DIRS[pkg]!.dir,
    reason: "a unit test under its package's unit-test folder proves that package's own modules one by one",
  },
];

describe('production code stands apart from tooling', () => {
  // The library packages are what runs in Lambda, the bridge and the ops commands. The local run, the
  // chaos run, benchmark instrumentation and fixtures live in the tools wing (and the ops command's
  // entry in packages/ops/src/command/); handler modules under packages/<wing>/functions/ import the
  // library packages, never the other way round.
  it.each(LIB_FILES)('%s imports only library packages and npm packages', (file) => {
    for (const target of relativeImportsOf(file))
      expect(isLib(target), `${relative(ROOT, file)} imports ${target}`).toBe(true);
  });

  it.each([...FUNCTION_FILES, ...tsFilesUnder('packages/bridge/src')])('%s imports no tooling or tests', (file) => {
    for (const target of relativeImportsOf(file))
      expect(isToolingOrTest(target), `${relative(ROOT, file)} imports ${target}`).toBe(false);
  });
});

describe('each library package is imported through its entry point', () => {
  it.each(LIB_PACKAGES)('library package %s has an index.ts', (pkg) => {
    const { dir } = LIB_PACKAGE_DIRS[pkg]!;
    expect(tsFilesUnder(dir).map((f) => relative(ROOT, f))).toContain(`${dir}/index.ts`);
  });

  it.each(EVERY_TS_FILE)('%s imports another library package only through its index.ts', (file) => {
    const from = relative(ROOT, file);
    const allowed = PAST_THE_ENTRY_POINT.map((rule) => ({ pkg: rule.from(from), rule })).filter(
      (a): a is { pkg: string; rule: (typeof PAST_THE_ENTRY_POINT)[number] } => a.pkg !== undefined,
    );
    for (const target of relativeImportsOf(file)) {
      const pkg = packageOf(target);
      if (pkg === undefined || pkg === packageOf(from) || target === `${LIB_PACKAGE_DIRS[pkg]!.dir}/index.ts`) continue;
      if (allowed.some(({ pkg: own, rule }) => within(target, rule.to(own)))) continue;
      expect.fail(`${from} imports ${target}: import ${LIB_PACKAGE_DIRS[pkg]!.dir}/index.ts instead`);
    }
  });

  it('no two library packages import each other, directly or through others', () => {
    const uses = new Map(LIB_PACKAGES.map((pkg) => [pkg, new Set<string>()]));
    for (const file of LIB_FILES) {
      const own = packageOf(relative(ROOT, file))!;
      for (const target of relativeImportsOf(file)) {
        const pkg = packageOf(target);
        if (pkg !== undefined && pkg !== own) uses.get(own)!.add(pkg);
      }
    }
    expect(cyclesIn(uses)).toEqual([]);
  });
});

/** Every cycle of a directed graph, each as the path that closes it (`a → b → a`). */
function cyclesIn(graph: Map<string, Set<string>>): string[] {
  const cycles: string[] = [];
  const done = new Set<string>();
  const walk = (node: string, path: string[]) => {
    if (path.includes(node)) {
      cycles.push([...path.slice(path.indexOf(node)), node].join(' → '));
      return;
    }
    if (done.has(node)) return;
    for (const next of graph.get(node) ?? []) walk(next, [...path, node]);
    done.add(node);
  };
  for (const node of graph.keys()) walk(node, []);
  return cycles;
}

describe("the CDK app reads names and constants from the runtime's config and rocketmq, not from runtime modules", () => {
  /**
   * What the CDK app (packages/infra/src/) may import from the code that runs, each with its reason.
   * Everything else of the library packages and packages/bridge/src/ runs in Lambda or the bridge's
   * container, and the CDK app must not load it at synth.
   */
  const INFRA_MAY_IMPORT: readonly { target: string; reason: string }[] = [
    { target: 'packages/runtime/src/config/index.ts', reason: 'the catalogue, resource names and delivery lifetimes' },
    {
      target: 'packages/runtime/src/rocketmq/index.ts',
      reason: 'tag expressions, message-group sources, the CloudEvent type',
    },
    {
      target: 'packages/bridge/src/bridge-config.ts',
      reason:
        "the bridge's configuration input type, which the bridge's service construct writes; and fifoTargetRefusal " +
        'and rocketmqGroupRefusal, so that the synth refuses a FIFO route to EventBridge, two routes in one RocketMQ ' +
        'group and a takeover on RocketMQ 5 with the rules and the words the bridge refuses them with at start; and ' +
        'takeOverSchema, so that a stage accepts the takeovers the bridge accepts',
    },
  ];
  /** What the CDK app takes from packages/bridge/src/bridge-config.ts (a module of zod schemas and pure checks, nothing that runs). */
  const FROM_BRIDGE_CONFIG = ['type BridgeConfigInput', 'fifoTargetRefusal', 'rocketmqGroupRefusal', 'takeOverSchema'];

  it.each(tsFilesUnder('packages/infra/src'))(
    '%s imports from the library packages and the bridge only the named entries',
    (file) => {
      for (const target of relativeImportsOf(file).filter((t) => isLib(t) || within(t, 'packages/bridge/src')))
        expect(INFRA_MAY_IMPORT.map((e) => e.target)).toContain(target);
    },
  );

  it('the CDK app takes from packages/bridge/src/bridge-config.ts only the named type and refusal', () => {
    for (const file of tsFilesUnder('packages/infra/src'))
      for (const m of readFileSync(file, 'utf8').matchAll(
        /import(\s+type)?\s+\{([^}]*)\}\s+from\s+'[^']*bridge-config\.ts'/g,
      ))
        for (const name of m[2]!
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean))
          expect(FROM_BRIDGE_CONFIG, relative(ROOT, file)).toContain(m[1] ? `type ${name}` : name);
  });

  it.each(tsFilesUnder('packages/runtime/src/config'))(
    '%s imports nothing from outside config but rocketmq',
    (file) => {
      for (const target of relativeImportsOf(file))
        expect(target).toMatch(/^packages\/runtime\/src\/(config\/[\w-]+|rocketmq\/index)\.ts$/);
    },
  );
});

/** The longest a function in a library package may be, nested functions and factory closures included. */
const MAX_FUNCTION_LINES = 80;

/** Every function-like node with a body in a file, with its first line and its length in lines. */
function functionsOf(file: string, text = readFileSync(file, 'utf8')): { name: string; line: number; lines: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; line: number; lines: number }[] = [];
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const line = lineOf(node.getStart(source));
      const named = node.name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
      found.push({ name: named?.getText(source) ?? '(anonymous)', line, lines: lineOf(node.getEnd()) - line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe(`no function in a library package is over ${MAX_FUNCTION_LINES} lines`, () => {
  it('the measure counts a nested function and the factory closure around it', () => {
    const body = Array.from({ length: 80 }, (_, i) => `    const v${i} = ${i};`).join('\n');
    const factory = [
      'export function longFactory() {',
      '  const short = () => {',
      '    return 1;',
      '  };',
      '  const inner = function () {',
      body,
      '  };',
      '  return { short, inner };',
      '}',
    ].join('\n');
    const lengths = functionsOf('long-factory.ts', factory).map(({ name, lines }) => [name, lines]);
    expect(lengths).toEqual([
      ['longFactory', 88],
      ['short', 3],
      ['inner', 82],
    ]);
  });

  it.each(LIB_FILES)('%s', (file) => {
    const tooLong = functionsOf(file).filter((f) => f.lines > MAX_FUNCTION_LINES);
    expect(tooLong.map((f) => `${f.name} at line ${f.line}: ${f.lines} lines`)).toEqual([]);
  });
});
