import { readdirSync, readFileSync } from 'node:fs';
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
/** Where a relative import lands, as a path from the repository root (`lib/…`, `scripts/…`). */
const landing = (file: string, spec: string) => relative(ROOT, resolve(dirname(file), spec));
const relativeImportsOf = (file: string) =>
  importsOf(file)
    .filter((s) => s.startsWith('.'))
    .map((s) => landing(file, s));

const LIB_PACKAGES = readdirSync(join(ROOT, 'lib'), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name);
/** The `lib/` package a repository path belongs to, if any. */
const packageOf = (path: string) => /^lib\/([\w-]+)\//.exec(path)?.[1];
const EVERY_TS_FILE = ['lib', 'functions', 'bridge', 'infra', 'scripts', 'test'].flatMap(tsFilesUnder);

/**
 * The only places allowed to reach past a package's entry point, each with its reason. A unit test
 * proves one module of a package on its own (a runner without Middy, a step over an explicit state),
 * which the entry point deliberately does not export.
 */
const PAST_THE_ENTRY_POINT: readonly { from: RegExp; to: (fromPackage: string) => RegExp; reason: string }[] = [
  {
    from: /^test\/unit\/([\w-]+)\//,
    to: (pkg) => new RegExp(`^lib/${pkg}/`),
    reason: "a unit test under test/unit/<pkg>/ proves that package's own modules one by one",
  },
];

describe('production code stands apart from tooling', () => {
  // lib/ is what runs in Lambda, the bridge and the ops commands. The local run, the chaos run,
  // benchmark instrumentation and fixtures live under scripts/; handler modules under functions/
  // import lib/, never the other way round.
  it.each(tsFilesUnder('lib'))('%s imports only lib/ and packages', (file) => {
    for (const target of relativeImportsOf(file))
      expect(target, `${relative(ROOT, file)} imports ${target}`).toMatch(/^lib\//);
  });

  it.each([...tsFilesUnder('functions'), ...tsFilesUnder('bridge')])('%s imports no tooling or tests', (file) => {
    for (const target of relativeImportsOf(file))
      expect(target, `${relative(ROOT, file)} imports ${target}`).not.toMatch(/^(scripts|test)\//);
  });
});

describe('each lib/ package is imported through its entry point', () => {
  it.each(LIB_PACKAGES)('lib/%s has an index.ts', (pkg) => {
    expect(tsFilesUnder(`lib/${pkg}`).map((f) => relative(ROOT, f))).toContain(`lib/${pkg}/index.ts`);
  });

  it.each(EVERY_TS_FILE)('%s imports another lib/ package only through lib/<pkg>/index.ts', (file) => {
    const from = relative(ROOT, file);
    const allowed = PAST_THE_ENTRY_POINT.map((rule) => ({ pkg: rule.from.exec(from)?.[1], rule })).filter(
      (a): a is { pkg: string; rule: (typeof PAST_THE_ENTRY_POINT)[number] } => a.pkg !== undefined,
    );
    for (const target of relativeImportsOf(file)) {
      const pkg = packageOf(target);
      if (pkg === undefined || pkg === packageOf(from) || target === `lib/${pkg}/index.ts`) continue;
      if (allowed.some(({ pkg: own, rule }) => rule.to(own).test(target))) continue;
      expect.fail(`${from} imports ${target}: import lib/${pkg}/index.ts instead`);
    }
  });

  it('no two lib/ packages import each other, directly or through others', () => {
    const uses = new Map(LIB_PACKAGES.map((pkg) => [pkg, new Set<string>()]));
    for (const file of tsFilesUnder('lib')) {
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

describe('the CDK app reads names and constants from lib/config and lib/rocketmq, not from runtime modules', () => {
  /**
   * What infra/ may import from the code that runs, each with its reason. Everything else of lib/
   * and bridge/ runs in Lambda or the bridge's container, and the CDK app must not load it at synth.
   */
  const INFRA_MAY_IMPORT: readonly { target: string; reason: string }[] = [
    { target: 'lib/config/index.ts', reason: 'the catalogue, resource names and delivery lifetimes' },
    { target: 'lib/rocketmq/index.ts', reason: 'tag expressions, message-group sources, the CloudEvent type' },
    {
      target: 'bridge/bridge-config.ts',
      reason:
        "the bridge's configuration input type, which the bridge's service construct writes; and fifoTargetRefusal " +
        'and rocketmqGroupRefusal, so that the synth refuses a FIFO route to EventBridge, two routes in one RocketMQ ' +
        'group and a takeover on RocketMQ 5 with the rules and the words the bridge refuses them with at start; and ' +
        'takeOverSchema, so that a stage accepts the takeovers the bridge accepts',
    },
  ];
  /** What infra/ takes from bridge/bridge-config.ts (a module of zod schemas and pure checks, nothing that runs). */
  const FROM_BRIDGE_CONFIG = ['type BridgeConfigInput', 'fifoTargetRefusal', 'rocketmqGroupRefusal', 'takeOverSchema'];

  it.each(tsFilesUnder('infra'))('%s imports from lib/ and bridge/ only the named entries', (file) => {
    for (const target of relativeImportsOf(file).filter((t) => /^(lib|bridge)\//.test(t)))
      expect(INFRA_MAY_IMPORT.map((e) => e.target)).toContain(target);
  });

  it('infra/ takes from bridge/bridge-config.ts only the named type and refusal', () => {
    for (const file of tsFilesUnder('infra'))
      for (const m of readFileSync(file, 'utf8').matchAll(
        /import(\s+type)?\s+\{([^}]*)\}\s+from\s+'[^']*bridge-config\.ts'/g,
      ))
        for (const name of m[2]!
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean))
          expect(FROM_BRIDGE_CONFIG, relative(ROOT, file)).toContain(m[1] ? `type ${name}` : name);
  });

  it.each(tsFilesUnder('lib/config'))('%s imports nothing from outside lib/config but lib/rocketmq', (file) => {
    for (const target of relativeImportsOf(file)) expect(target).toMatch(/^lib\/(config\/[\w-]+|rocketmq\/index)\.ts$/);
  });
});

/** The longest a function in lib/ may be, nested functions and factory closures included. */
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

describe(`no function in lib/ is over ${MAX_FUNCTION_LINES} lines`, () => {
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

  it.each(tsFilesUnder('lib'))('%s', (file) => {
    const tooLong = functionsOf(file).filter((f) => f.lines > MAX_FUNCTION_LINES);
    expect(tooLong.map((f) => `${f.name} at line ${f.line}: ${f.lines} lines`)).toEqual([]);
  });
});
