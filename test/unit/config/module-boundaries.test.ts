import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Every static or dynamic import specifier of a TypeScript file. */
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

describe('the CDK app reads names and constants from lib/config, not from runtime modules', () => {
  it.each(tsFilesUnder('infra'))('%s imports from lib/ only lib/config and named pure modules', (file) => {
    const fromLib = relativeImportsOf(file).filter((t) => t.startsWith('lib/'));
    for (const target of fromLib)
      expect(target).toMatch(
        /^lib\/(config\/[\w-]+|rocketmq\/envelope|rocketmq\/tag-expression|rocketmq\/message-group)\.ts$/,
      );
  });

  it.each(tsFilesUnder('lib/config'))(
    '%s imports nothing from outside lib/config but the retry schedule and the message group source',
    (file) => {
      for (const target of relativeImportsOf(file))
        expect(target).toMatch(/^lib\/(config\/[\w-]+|rocketmq\/retry-schedule|rocketmq\/message-group)\.ts$/);
    },
  );
});
