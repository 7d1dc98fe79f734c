import { describe, expect, it } from 'vitest';
import { InvalidTagExpressionError, TagExpression } from '../../../src/rocketmq/tag-expression.ts';

describe('TagExpression', () => {
  it.each([null, undefined, '', '   ', '*', ' * '])('%j matches every message, tagged or not', (expr) => {
    const e = TagExpression.parse(expr);
    expect(e.matchesAll).toBe(true);
    expect(e.matches('PAID')).toBe(true);
    expect(e.matches(undefined)).toBe(true);
    expect(e.tagList).toEqual([]);
    expect(e.source).toBe('*');
  });

  it('matches any of the tags joined by || with surrounding whitespace ignored', () => {
    const e = TagExpression.parse('PAID || FINISHED');
    expect(e.matches('PAID')).toBe(true);
    expect(e.matches('FINISHED')).toBe(true);
    expect(e.matches('REFUNDED')).toBe(false);
    expect(TagExpression.parse('PAID||FINISHED').tagList).toEqual(['PAID', 'FINISHED']);
    expect(TagExpression.parse('  PAID||FINISHED || ').source).toBe('PAID || FINISHED');
    expect(e.matchesAll).toBe(false);
  });

  it('is case-sensitive, as on the broker', () => {
    expect(TagExpression.parse('PAID').matches('paid')).toBe(false);
  });

  it('never matches an untagged message unless it is match-all', () => {
    expect(TagExpression.parse('PAID').matches(undefined)).toBe(false);
  });

  it('rejects an expression with no tag in it', () => {
    expect(() => TagExpression.parse('||')).toThrow(InvalidTagExpressionError);
  });
});
