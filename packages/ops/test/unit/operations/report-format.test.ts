import { describe, expect, it } from 'vitest';
import { type Cell, renderCsv, terminalSafe } from '../../../src/operations/report-format.ts';

const csvOf = (cell: Cell) =>
  renderCsv([{ header: 'v', value: (c: Cell) => c }], [cell])
    .split('\n')
    .slice(1)
    .join('\n');

describe('CSV cells a spreadsheet would run', () => {
  it.each([
    ['=', '=HYPERLINK("http://evil.example","x")', `"'=HYPERLINK(""http://evil.example"",""x"")"`],
    ['+', '+1+cmd|/c calc', `"'+1+cmd|/c calc"`],
    ['-', '-2+3', `"'-2+3"`],
    ['@', '@SUM(A1)', `"'@SUM(A1)"`],
    ['a tab', '\t=1+1', `"'\t=1+1"`],
    ['a carriage return', '\r=1+1', `"'\r=1+1"`],
  ])('are neutralised when they start with %s (OWASP: a leading quote, the cell quoted)', (_name, value, expected) => {
    expect(csvOf(value)).toBe(expected);
  });

  it.each([
    ['a value with = inside', 'a=b', 'a=b'],
    ['a negative number of ours', -50, '-50'],
    ['a value with ; (a separator in some locales)', 'x;=1+1', '"x;=1+1"'],
    ['an empty cell', undefined, ''],
  ])('leave %s as it is, quoted only where CSV needs it', (_name, value, expected) => {
    expect(csvOf(value)).toBe(expected);
  });
});

describe('terminalSafe', () => {
  it.each([
    ['an escape sequence that clears the screen', 'a\u001b[2Jb', 'a\\u001b[2Jb'],
    ['a window-title / hyperlink OSC ending in BEL', '\u001b]0;pwned\u0007', '\\u001b]0;pwned\\u0007'],
    ['a carriage return that overwrites the line', 'ok\rFAIL', 'ok\\u000dFAIL'],
    ['a C1 control sequence introducer', 'x\u009b31m', 'x\\u009b31m'],
    ['a bidi override', 'gnp\u202eexe', 'gnp\\u202eexe'],
    ['a zero-width space and a line separator', 'a\u200bb\u2028c', 'a\\u200bb\\u2028c'],
    ['a format character outside the BMP', 'tag\u{e0041}', 'tag\\udb40\\udc41'],
  ])('shows %s as escapes', (_name, raw, shown) => {
    expect(terminalSafe(raw)).toBe(shown);
  });

  it('keeps line breaks and plain text, and keeps JSON valid and equal in value', () => {
    const json = JSON.stringify({ body: 'line 1\u009b\u202e\u{e0041}', n: 1 }, null, 2);
    const safe = terminalSafe(json);
    expect(safe).toContain('\n  "n": 1');
    expect(safe.replaceAll('\n', '')).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(JSON.parse(safe)).toEqual(JSON.parse(json));
  });
});
