import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../../../..');

/** The longest a function may be, nested functions and factory closures included. */
const MAX_FUNCTION_LINES = 80;

/** Every function-like node with a body in a file, with its first line and its length in lines. */
function functionsOf(file: string, text = readFileSync(file, 'utf8')): { name: string; line: number; lines: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; line: number; lines: number }[] = [];
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const nameOf = (node: ts.FunctionLikeDeclaration) => {
    if (ts.isConstructorDeclaration(node))
      return `constructor of ${node.parent.name?.getText(source) ?? '(anonymous)'}`;
    const named = node.name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
    return named?.getText(source) ?? '(anonymous)';
  };
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const line = lineOf(node.getStart(source));
      found.push({ name: nameOf(node), line, lines: lineOf(node.getEnd()) - line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every wing's src/ and functions/: what the wings are made of, the tools wing's included. */
const SOURCE_FILES = readdirSync(join(ROOT, 'packages'), { withFileTypes: true, recursive: true })
  .filter((e) => e.isFile() && /\.m?ts$/.test(e.name))
  .map((e) => relative(ROOT, join(e.parentPath, e.name)))
  .filter((path) => /^packages\/[\w-]+\/(src|functions)\//.test(path));

describe(`no function in any wing's src/ or functions/ is over ${MAX_FUNCTION_LINES} lines`, () => {
  it('the measure counts a nested function and the factory closure around it, and names a constructor', () => {
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
      'class Built {',
      '  constructor() {}',
      '}',
    ].join('\n');
    const lengths = functionsOf('long-factory.ts', factory).map(({ name, lines }) => [name, lines]);
    expect(lengths).toEqual([
      ['longFactory', 88],
      ['short', 3],
      ['inner', 82],
      ['constructor of Built', 1],
    ]);
  });

  it('every function is at most the limit', () => {
    const offenders = SOURCE_FILES.flatMap((file) =>
      functionsOf(join(ROOT, file))
        .filter((f) => f.lines > MAX_FUNCTION_LINES)
        .map((f) => `${file}:${f.line} ${f.name}: ${f.lines} lines`),
    );
    expect(offenders).toEqual([]);
  });
});
