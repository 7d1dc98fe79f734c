import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Every `from '…'` of a TypeScript file. */
const importsOf = (file: string) => [...readFileSync(file, 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
const tsFilesUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));

describe('the CDK app reads names and constants from lib/config, not from runtime modules', () => {
  it.each(tsFilesUnder('infra'))('%s imports from lib/ only lib/config and the pure tag expression', (file) => {
    const fromLib = importsOf(file).filter((i) => i.includes('/lib/'));
    for (const spec of fromLib) expect(spec).toMatch(/\/lib\/(config\/[\w-]+|rocketmq\/tag-expression|dingtalk\/alarm-storm-table)\.ts$/);
  });

  it.each(tsFilesUnder('lib/config'))('%s imports nothing from outside lib/config but the retry schedule', (file) => {
    for (const spec of importsOf(file)) expect(spec).toMatch(/^\.\/[\w-]+\.ts$|^\.\.\/rocketmq\/retry-schedule\.ts$/);
  });
});
