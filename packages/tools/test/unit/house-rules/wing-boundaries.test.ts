import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The boundaries between the wings (packages/<wing>/, each an npm workspace) and inside them. Each
 * wing's door is the `exports` of its package.json: Node, TypeScript, Vite and esbuild refuse an
 * import of anything else by the wing's name. These tests hold what `exports` cannot say, one test
 * per rule, each failing with the list of every offender.
 */
const ROOT = resolve(import.meta.dirname, '../../../../..');

interface Wing {
  readonly name: string;
  /** `@rocketmq-lambda/<name>` */
  readonly packageName: string;
  /** The door: subpath → file, each side possibly a pattern with one `*`. */
  readonly exports: Record<string, string>;
  readonly dependencies: readonly string[];
  readonly devDependencies: readonly string[];
}

const WINGS: readonly Wing[] = readdirSync(join(ROOT, 'packages'))
  .filter((name) => existsSync(join(ROOT, 'packages', name, 'package.json')))
  .map((name) => {
    const json = JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8'));
    return {
      name,
      packageName: json.name,
      exports: json.exports ?? {},
      dependencies: Object.keys(json.dependencies ?? {}),
      devDependencies: Object.keys(json.devDependencies ?? {}),
    };
  });
const wingNamed = (name: string) => WINGS.find((w) => w.name === name);

const within = (path: string, dir: string) => path.startsWith(`${dir}/`);
/** The wing a repository path belongs to (`packages/<wing>/…`). */
const wingOf = (path: string) => /^packages\/([\w-]+)\//.exec(path)?.[1];

const filesUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.m?[jt]s$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
const EVERY_FILE = filesUnder('packages');

/** Tooling and tests: the tools wing, the ops command, every wing's test/. */
const isTooling = (path: string) =>
  within(path, 'packages/tools') || within(path, 'packages/ops/src/command') || /^packages\/[\w-]+\/test\//.test(path);
/** What is deployed or run by operators: every wing's src/ and functions/, less the tooling. */
const isProduction = (path: string) => /^packages\/[\w-]+\/(src|functions)\//.test(path) && !isTooling(path);
const PRODUCTION_FILES = EVERY_FILE.filter(isProduction);
/** Every wing's src/ and functions/, the tooling's too: the code the wings are made of, without their tests. */
const SOURCE_FILES = EVERY_FILE.filter((path) => /^packages\/[\w-]+\/(src|functions)\//.test(path));

/**
 * The library packages (what runs in Lambda, the bridge and the ops command), each by its folder,
 * and the unit tests that prove each one's modules one by one; the consumer runtime has a second,
 * internal entry beside its index.ts, for operations, tools and tests.
 */
const LIBRARY: Record<string, { dir: string; unitTests: string; internal?: string }> = {
  aws: { dir: 'packages/runtime/src/aws', unitTests: 'packages/runtime/test/unit/aws' },
  config: { dir: 'packages/runtime/src/config', unitTests: 'packages/runtime/test/unit/config' },
  consumer: {
    dir: 'packages/runtime/src/consumer',
    unitTests: 'packages/runtime/test/unit/consumer',
    internal: 'packages/runtime/src/consumer/internal.ts',
  },
  rocketmq: { dir: 'packages/runtime/src/rocketmq', unitTests: 'packages/runtime/test/unit/rocketmq' },
  outbox: { dir: 'packages/runtime/src/outbox', unitTests: 'packages/runtime/test/unit/outbox' },
  tracing: { dir: 'packages/runtime/src/tracing', unitTests: 'packages/runtime/test/unit/tracing' },
  points: { dir: 'packages/consumers/src/points', unitTests: 'packages/consumers/test/unit/points' },
  orders: { dir: 'packages/consumers/src/orders', unitTests: 'packages/consumers/test/unit/orders' },
  coupons: { dir: 'packages/consumers/src/coupons', unitTests: 'packages/consumers/test/unit/coupons' },
  notifications: {
    dir: 'packages/consumers/src/notifications',
    unitTests: 'packages/consumers/test/unit/notifications',
  },
  'outside-service': {
    dir: 'packages/consumers/src/outside-service',
    unitTests: 'packages/consumers/test/unit/outside-service',
  },
  dingtalk: { dir: 'packages/notifier/src', unitTests: 'packages/notifier/test/unit' },
  operations: { dir: 'packages/ops/src/operations', unitTests: 'packages/ops/test/unit/operations' },
  migration: { dir: 'packages/ops/src/migration', unitTests: 'packages/ops/test/unit/migration' },
};
const libraryPackageOf = (path: string) => Object.keys(LIBRARY).find((pkg) => within(path, LIBRARY[pkg]!.dir));
const LIBRARY_FILES = EVERY_FILE.filter((path) => libraryPackageOf(path) !== undefined);

interface Import {
  /** `packages/<wing>/…:<line>` */
  readonly at: string;
  readonly from: string;
  /** How the file names it: `import`, `export`, `import type`, `export type`, `import()`, `typeof import()`, `vi.mock`, … */
  readonly how: string;
  readonly specifier: string;
  /** The repository path it lands on; undefined for an npm package, or for a wing's subpath that is no door. */
  readonly landing: string | undefined;
  /** Why it lands nowhere: the resolver's refusal of a wing's subpath. */
  readonly refusal?: string;
}

/** Calls that take a module specifier as their first argument, beside `import()`. */
const SPECIFIER_CALLS =
  /^(require|require\.resolve|import\.meta\.resolve|vi\.(mock|doMock|unmock|doUnmock|importActual|importMock))$/;

/** Where a specifier lands: a relative path as it is, a wing's by its exports (Node's own resolver). */
function land(from: string, specifier: string): Pick<Import, 'landing' | 'refusal'> {
  if (specifier.startsWith('.')) return { landing: relative(ROOT, resolve(ROOT, dirname(from), specifier)) };
  if (!specifier.startsWith('@rocketmq-lambda/')) return { landing: undefined };
  try {
    return { landing: relative(ROOT, createRequire(join(ROOT, from)).resolve(specifier)) };
  } catch (error) {
    return { landing: undefined, refusal: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
}

/**
 * Every module specifier of a file, in every form (static, type-only, dynamic with a literal,
 * `typeof import()`, `require`, Vitest's module mocks), read with the TypeScript compiler, not a regex.
 */
function importsOf(from: string): Import[] {
  const source = ts.createSourceFile(from, readFileSync(join(ROOT, from), 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (node: ts.Node, how: string, literal: ts.StringLiteralLike) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    const specifier = literal.text;
    found.push({ at: `${from}:${line}`, from, how, specifier, ...land(from, specifier) });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteralLike(node.moduleSpecifier))
      add(node, node.importClause?.isTypeOnly ? 'import type' : 'import', node.moduleSpecifier);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteralLike(node.moduleSpecifier))
      add(node, node.isTypeOnly ? 'export type' : 'export', node.moduleSpecifier);
    else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteralLike(node.argument.literal)
    )
      add(node, 'typeof import()', node.argument.literal);
    else if (ts.isCallExpression(node) && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      const callee =
        node.expression.kind === ts.SyntaxKind.ImportKeyword ? 'import()' : node.expression.getText(source);
      if (callee === 'import()' || SPECIFIER_CALLS.test(callee)) add(node, callee, node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const IMPORTS = new Map(EVERY_FILE.map((file) => [file, importsOf(file)]));
const importsFrom = (files: readonly string[]) => files.flatMap((file) => IMPORTS.get(file)!);
/** Imports that land in the repository's own files (not npm packages, not refused subpaths). */
const landed = (imports: readonly Import[]) =>
  imports.filter((i): i is Import & { landing: string } => i.landing !== undefined);
const describeImport = (i: Import) => `${i.at} ${i.how} '${i.specifier}'`;

/** Whether a door's target (a pattern's `*` standing for any path) is the file of the wing at `path`. */
function opensOn(wing: Wing, target: string, path: string): boolean {
  const inWing = `./${path.slice(`packages/${wing.name}/`.length)}`;
  const star = target.indexOf('*');
  if (star === -1) return target === inWing;
  const [head, tail] = [target.slice(0, star), target.slice(star + 1)];
  return inWing.length > head.length + tail.length && inWing.startsWith(head) && inWing.endsWith(tail);
}
const isDoor = (wing: Wing, path: string) => Object.values(wing.exports).some((target) => opensOn(wing, target, path));

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

/** Who imports whom among the groups `groupOf` puts files in, from the given files' imports. */
function importGraph(files: readonly string[], groupOf: (path: string) => string | undefined) {
  const graph = new Map<string, Set<string>>();
  for (const i of landed(importsFrom(files))) {
    const [own, other] = [groupOf(i.from), groupOf(i.landing)];
    if (own === undefined || other === undefined || own === other) continue;
    graph.set(own, (graph.get(own) ?? new Set()).add(other));
  }
  return graph;
}

describe('production code stands apart from tooling', () => {
  // Production is what is deployed or run by operators: every wing's src/ and functions/. The local
  // run, the chaos run, the benchmarks, instrumentation and test support live in the tools wing, the
  // ops command's entry in packages/ops/src/command/; they import production, never the reverse.
  it('production code never imports tooling: the tools wing, the ops command or any wing’s tests', () => {
    const offenders = landed(importsFrom(PRODUCTION_FILES))
      .filter((i) => isTooling(i.landing))
      .map((i) => `${describeImport(i)} → ${i.landing}`);
    expect(offenders).toEqual([]);
  });

  it('the library (what runs in Lambda, the bridge and the ops command) imports only the library', () => {
    const offenders = landed(importsFrom(LIBRARY_FILES))
      .filter((i) => libraryPackageOf(i.landing) === undefined)
      .map((i) => `${describeImport(i)} → ${i.landing}`);
    expect(offenders).toEqual([]);
  });
});

describe("each wing imports another only through its door, its package.json's exports", () => {
  it('every door opens on a module that exists', () => {
    const shut = WINGS.flatMap((wing) =>
      Object.entries(wing.exports)
        .filter(([, target]) => !EVERY_FILE.some((path) => wingOf(path) === wing.name && opensOn(wing, target, path)))
        .map(([key, target]) => `${wing.packageName}: "${key}" opens on ${target}, which is no module`),
    );
    expect(shut).toEqual([]);
  });

  // `exports` refuses a wing's internal by its package name; what it cannot see: a relative path that
  // climbs out of a wing; a subpath named where no compiler resolves it (a `vi.mock`, a dynamic import);
  // a wing that its importer's package.json does not list (npm hoists every workspace, so it resolves);
  // and a path to another wing's module written in a string, which the catalogue and the CDK app hand to
  // a dynamic import and to the bundler (a handler module) or a process (a command).
  it('no file reaches another wing but through the door, and only a wing its package.json lists', () => {
    const offenders: string[] = [];
    for (const i of importsFrom(EVERY_FILE)) {
      const own = wingNamed(wingOf(i.from)!)!;
      const target = i.specifier.startsWith('@rocketmq-lambda/')
        ? WINGS.find((w) => i.specifier.startsWith(`${w.packageName}/`) || i.specifier === w.packageName)
        : undefined;
      if (
        i.specifier.startsWith('.') &&
        i.landing !== undefined &&
        wingOf(i.landing) !== undefined &&
        wingOf(i.landing) !== own.name
      )
        offenders.push(`${describeImport(i)} climbs into ${i.landing}: import it by its wing's door`);
      else if (i.refusal !== undefined)
        offenders.push(
          `${describeImport(i)} is no door of its wing (${i.refusal}); the doors: ${doorsOf(i.specifier)}`,
        );
      else if (target !== undefined && target !== own) {
        const listed = isProduction(i.from) ? own.dependencies : [...own.dependencies, ...own.devDependencies];
        if (!listed.includes(target.packageName))
          offenders.push(
            `${describeImport(i)}: packages/${own.name}/package.json lists no ${target.packageName} in ` +
              (isProduction(i.from) ? 'dependencies' : 'dependencies or devDependencies'),
          );
      }
    }
    for (const { at, path } of modulePathsIn(SOURCE_FILES)) {
      const wing = wingNamed(wingOf(path)!);
      if (wing !== undefined && wing.name !== wingOf(at) && !isDoor(wing, path))
        offenders.push(`${at} names ${path}, which is no door of ${wing.packageName}`);
    }
    expect(offenders).toEqual([]);
  });

  it('a library package is imported from outside it only through its index.ts (or its internal entry)', () => {
    // A unit test proves one module of its package on its own (a runner without Middy, a step over an
    // explicit state), which the entry point deliberately does not export.
    const offenders = landed(importsFrom(EVERY_FILE))
      .filter((i) => {
        const pkg = libraryPackageOf(i.landing);
        if (pkg === undefined || pkg === libraryPackageOf(i.from)) return false;
        const { dir, unitTests, internal } = LIBRARY[pkg]!;
        return i.landing !== `${dir}/index.ts` && i.landing !== internal && !within(i.from, unitTests);
      })
      .map((i) => `${describeImport(i)} → ${i.landing}: import ${LIBRARY[libraryPackageOf(i.landing)!]!.dir}/index.ts`);
    expect(offenders).toEqual([]);
  });

  // A wing's `internal.ts` door opens on its parts, for the benches and the tests of other wings that
  // drive them one by one; what is deployed takes a wing through its index.
  it("production code takes another wing's internal.ts door never", () => {
    const offenders = landed(importsFrom(PRODUCTION_FILES))
      .filter((i) => wingOf(i.landing) !== wingOf(i.from) && /^packages\/[\w-]+\/src\/internal\.ts$/.test(i.landing))
      .map((i) => `${describeImport(i)} → ${i.landing}`);
    expect(offenders).toEqual([]);
  });
});

describe("the consumer runtime's public entry is what a team uses", () => {
  const ENTRY = 'packages/runtime/src/consumer/index.ts';
  /** The wings that are deployed or run beside the runtime: they use the consumer runtime as a team does. */
  const TEAM_WINGS = ['consumers', 'notifier', 'infra', 'bridge'];

  it('production code of the consumers, notifier, infra and bridge imports the consumer runtime only through its public entry', () => {
    const offenders = landed(importsFrom(PRODUCTION_FILES.filter((path) => TEAM_WINGS.includes(wingOf(path)!))))
      .filter((i) => within(i.landing, LIBRARY.consumer!.dir) && i.landing !== ENTRY)
      .map((i) => `${describeImport(i)} → ${i.landing}: import @rocketmq-lambda/runtime/consumer/index.ts`);
    expect(offenders).toEqual([]);
  });

  it('the public entry exports at most 25 names', () => {
    const names = exportedNames(ENTRY);
    expect(names.length, `${ENTRY} exports ${names.length} names: ${names.join(', ')}`).toBeLessThanOrEqual(25);
  });
});

/** The names a module exports, an `export *` followed to the names it lets through. */
function exportedNames(path: string): string[] {
  const source = ts.createSourceFile(path, readFileSync(join(ROOT, path), 'utf8'), ts.ScriptTarget.Latest, true);
  const names = source.statements.flatMap((node): string[] => {
    if (ts.isExportAssignment(node)) return ['default'];
    if (ts.isExportDeclaration(node)) {
      if (node.exportClause && ts.isNamedExports(node.exportClause))
        return node.exportClause.elements.map((e) => e.name.text);
      if (node.exportClause) return [node.exportClause.name.text];
      return exportedNames(
        relative(ROOT, resolve(ROOT, dirname(path), (node.moduleSpecifier as ts.StringLiteral).text)),
      );
    }
    const exported =
      ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) return [];
    if (ts.isVariableStatement(node)) return node.declarationList.declarations.map((d) => d.name.getText(source));
    const name = (node as ts.DeclarationStatement).name;
    return [name ? name.getText(source) : 'default'];
  });
  return [...new Set(names)].sort();
}

/** A wing's doors, for a message: `@rocketmq-lambda/<wing>/<key>` each. */
function doorsOf(specifier: string): string {
  const wing = WINGS.find((w) => specifier.startsWith(`${w.packageName}/`));
  return wing
    ? Object.keys(wing.exports)
        .map((key) => `${wing.packageName}${key.slice(1)}`)
        .join(', ')
    : 'none';
}

/** Every string literal in the files that is a path to a module of a wing (`packages/<wing>/….ts`). */
function modulePathsIn(files: readonly string[]): { at: string; path: string }[] {
  return files.flatMap((from) => {
    const source = ts.createSourceFile(from, readFileSync(join(ROOT, from), 'utf8'), ts.ScriptTarget.Latest, true);
    const found: { at: string; path: string }[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isStringLiteralLike(node) && /^packages\/[\w-]+\/.+\.m?[jt]s$/.test(node.text))
        found.push({
          at: `${from}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`,
          path: node.text,
        });
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  });
}

describe('no import cycles', () => {
  // Over the wings' code without their tests: a wing's tests may drive the wings built on it (the
  // runtime's tests run the real consumers), which is no cycle of the code itself.
  it('no two wings import each other, directly or through others', () => {
    expect(cyclesIn(importGraph(SOURCE_FILES, wingOf))).toEqual([]);
  });

  it('no two library packages import each other, directly or through others', () => {
    expect(cyclesIn(importGraph(LIBRARY_FILES, libraryPackageOf))).toEqual([]);
  });

  // Type-only imports count: a circle of types is still a circle a reader walks around; a word two modules
  // share belongs in a module of its own below both (the bridge's types.ts).
  it("no two modules of a wing's production code import each other, directly or through others", () => {
    const graph = new Map<string, Set<string>>();
    for (const i of landed(importsFrom(PRODUCTION_FILES)))
      if (wingOf(i.landing) === wingOf(i.from) && isProduction(i.landing))
        graph.set(i.from, (graph.get(i.from) ?? new Set()).add(i.landing));
    expect(cyclesIn(graph)).toEqual([]);
  });
});

describe("the CDK app reads names and constants from the runtime's config and rocketmq, not from runtime modules", () => {
  /**
   * The doors the CDK app (packages/infra/src/) may import from the other wings, each with its reason.
   * Everything else of the other wings runs in Lambda or the bridge's container, and the CDK app must
   * not load it (nor the SDK it loads) at synth.
   */
  const INFRA_MAY_IMPORT: readonly { door: string; reason: string }[] = [
    {
      door: '@rocketmq-lambda/runtime/config/index.ts',
      reason: 'the catalogue, resource names and delivery lifetimes',
    },
    {
      door: '@rocketmq-lambda/runtime/rocketmq/index.ts',
      reason: 'tag expressions, message-group sources, the CloudEvent type',
    },
    {
      door: '@rocketmq-lambda/bridge/index.ts',
      reason:
        "the bridge's door, its configuration: the input type the bridge's service construct writes; the refusals " +
        'with which the synth refuses a FIFO route to EventBridge, two routes in one RocketMQ group and a takeover on ' +
        'RocketMQ 5 with the rules and the words the bridge refuses them with at start; the takeover schema, so that a ' +
        'stage accepts the takeovers the bridge accepts',
    },
  ];
  const INFRA_FILES = EVERY_FILE.filter((path) => within(path, 'packages/infra/src'));
  /** The SDKs and RocketMQ clients the bridge's process runs on. */
  const PROCESS_CLIENTS =
    /^(@aws-sdk\/|@smithy\/|@opentelemetry\/|@aws-lambda-powertools\/|rocketmq-client-nodejs|ali-ons)/;

  it('the CDK app imports from the other wings only the named doors', () => {
    const allowed = INFRA_MAY_IMPORT.map(({ door }) => land('packages/infra/src/app.ts', door).landing);
    const offenders = landed(importsFrom(INFRA_FILES))
      .filter((i) => wingOf(i.landing) !== 'infra' && !allowed.includes(i.landing))
      .map((i) => `${describeImport(i)} → ${i.landing}`);
    expect(offenders).toEqual([]);
  });

  it("the bridge's door loads none of the clients its process talks to RocketMQ and AWS with", () => {
    // What the door's modules load, through every import the compiled code keeps (not `import type`, not
    // `export type`), into the runtime's doors too: the CDK app loads all of it at synth.
    const loaded = new Set<string>();
    const load = (file: string) => {
      if (loaded.has(file) || !IMPORTS.has(file)) return;
      loaded.add(file);
      for (const i of landed(IMPORTS.get(file)!)) if (!/^(import|export) type$/.test(i.how)) load(i.landing);
    };
    load(land('packages/infra/src/app.ts', '@rocketmq-lambda/bridge/index.ts').landing!);
    const offenders = importsFrom([...loaded])
      .filter((i) => /^(import|export)$/.test(i.how) && PROCESS_CLIENTS.test(i.specifier))
      .map(describeImport);
    expect(offenders).toEqual([]);
  });

  it("the runtime's config imports nothing from outside config but rocketmq's entry point", () => {
    const offenders = landed(importsFrom(EVERY_FILE.filter((path) => within(path, LIBRARY.config!.dir))))
      .filter((i) => !/^packages\/runtime\/src\/(config\/[\w-]+|rocketmq\/index)\.ts$/.test(i.landing))
      .map((i) => `${describeImport(i)} → ${i.landing}`);
    expect(offenders).toEqual([]);
  });
});
