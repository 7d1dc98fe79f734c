/**
 * A RocketMQ tag subscription expression: `*`, empty or absent match every message;
 * otherwise tags joined by `||` (whitespace around them ignored). A message without a
 * tag matches only the match-all expression, as on the broker.
 */
export class TagExpression {
  private constructor(
    readonly source: string,
    private readonly tags: ReadonlySet<string> | 'ALL',
  ) {}

  static parse(expression: string | null | undefined): TagExpression {
    const trimmed = (expression ?? '').trim();
    if (trimmed === '' || trimmed === '*') return new TagExpression('*', 'ALL');
    const tags = trimmed
      .split('||')
      .map((t) => t.trim())
      .filter((t) => t.length > 0);
    if (tags.length === 0) throw new InvalidTagExpressionError(expression ?? '');
    return new TagExpression(tags.join(' || '), new Set(tags));
  }

  get matchesAll(): boolean {
    return this.tags === 'ALL';
  }

  /** The tags the expression names (empty for match-all): used to build event filters. */
  get tagList(): string[] {
    return this.tags === 'ALL' ? [] : [...this.tags];
  }

  matches(tag: string | undefined): boolean {
    if (this.tags === 'ALL') return true;
    return tag !== undefined && this.tags.has(tag);
  }
}

export class InvalidTagExpressionError extends Error {
  override readonly name = 'InvalidTagExpressionError';
  constructor(readonly expression: string) {
    super(`invalid tag expression: ${JSON.stringify(expression)}`);
  }
}
