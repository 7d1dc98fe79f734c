import { describe, expect, it } from 'vitest';
import { sqsText } from '../../../src/aws/sqs-text.ts';

/** SQS's documented set: #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF. */
const allowed = (s: string) =>
  [...s].every((c) => {
    const p = c.codePointAt(0)!;
    return (
      p === 0x9 ||
      p === 0xa ||
      p === 0xd ||
      (p >= 0x20 && p <= 0xd7ff) ||
      (p >= 0xe000 && p <= 0xfffd) ||
      (p >= 0x10000 && p <= 0x10ffff)
    );
  });

describe('sqsText', () => {
  it.each([
    ['NUL and other C0 controls', 'a\u0000b\u0001c\u001fd', 'a\uFFFDb\uFFFDc\uFFFDd'],
    ['a lone high surrogate', 'x\uD83D', 'x\uFFFD'],
    ['a lone low surrogate', '\uDE00y', '\uFFFDy'],
    ['the non-characters U+FFFE and U+FFFF', 'a\uFFFEb\uFFFF', 'a\uFFFDb\uFFFD'],
  ])('replaces %s, which SQS refuses', (_, input, expected) => {
    expect(sqsText(input, 100)).toBe(expected);
    expect(allowed(sqsText(input, 100))).toBe(true);
  });

  it('keeps tab, newline, carriage return, CJK and emoji as they are', () => {
    const text = 'line\tone\r\n积分 300 🎉';
    expect(sqsText(text, 100)).toBe(text);
  });

  it('cuts by code points, never inside a surrogate pair, and marks the cut', () => {
    const text = `${'a'.repeat(199)}🎉🎉`;
    expect(text.slice(0, 200).endsWith('\uD83C')).toBe(true); // what slice() used to leave
    const cut = sqsText(text, 200);
    expect([...cut]).toHaveLength(200);
    expect(cut.endsWith('a…')).toBe(true);
    expect(allowed(cut)).toBe(true);
    expect(sqsText(`${'a'.repeat(198)}🎉`, 200)).toBe(`${'a'.repeat(198)}🎉`);
  });
});
