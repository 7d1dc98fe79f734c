/**
 * Does a resource policy's explicit Deny stop a request? The emulator does not enforce SQS or
 * EventBridge resource policies, so the synthesized policies are judged here, by IAM's documented
 * evaluation: a statement applies when its principal, action, resource and every condition match;
 * a condition key missing from the request matches a negated operator (`StringNotEquals`,
 * `ArnNotLike`, …) and any `…IfExists` operator, and no other. Only the operators the project's
 * policies use are known; any other fails the evaluation rather than be guessed.
 *
 * Why not a library: the maintained IAM simulator for Node (@cloud-copilot/iam-simulate) is AGPL,
 * which a dependency of this project must not be; AWS's own simulator needs an account.
 */
export interface PolicyRequest {
  /** `arn:aws:iam::…:role/…` for an IAM principal, or a service principal such as `events.amazonaws.com`. */
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  /** Condition keys present in the request (`aws:PrincipalArn`, `aws:SourceArn`, `aws:PrincipalIsAWSService`, …). */
  readonly context: Readonly<Record<string, string>>;
}

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Principal?: unknown;
  readonly Action: string | readonly string[];
  readonly Resource?: string | readonly string[];
  readonly Condition?: Readonly<Record<string, Readonly<Record<string, string | readonly string[]>>>>;
}

export class UnknownConditionOperatorError extends Error {
  override readonly name = 'UnknownConditionOperatorError';
}

/** The Sids of the Deny statements that apply to the request (empty: the resource policy denies nothing). */
export function denyingStatements(statements: readonly PolicyStatement[], request: PolicyRequest): string[] {
  return statements.filter((s) => s.Effect === 'Deny' && applies(s, request)).map((s, i) => s.Sid ?? `#${i}`);
}

/**
 * Whether some Allow statement grants the request (a service principal needs one; an IAM role of the account may use
 * its identity policy).
 */
export function allowingStatements(statements: readonly PolicyStatement[], request: PolicyRequest): string[] {
  return statements.filter((s) => s.Effect === 'Allow' && applies(s, request)).map((s, i) => s.Sid ?? `#${i}`);
}

function applies(statement: PolicyStatement, request: PolicyRequest): boolean {
  return (
    principalMatches(statement.Principal, request.principal) &&
    list(statement.Action).some((a) => wildcard(a, request.action)) &&
    (statement.Resource === undefined || list(statement.Resource).some((r) => wildcard(r, request.resource))) &&
    Object.entries(statement.Condition ?? {}).every(([operator, keys]) =>
      Object.entries(keys).every(([key, values]) => conditionMatches(operator, request.context[key], list(values))),
    )
  );
}

function principalMatches(principal: unknown, requester: string): boolean {
  if (principal === '*') return true;
  if (typeof principal !== 'object' || principal === null) return false;
  const { AWS, Service } = principal as { AWS?: string | string[]; Service?: string | string[] };
  const service = !requester.startsWith('arn:');
  return service
    ? list(Service ?? []).includes(requester)
    : list(AWS ?? []).some((p) => p === '*' || p === requester || accountOf(p) === requester.split(':')[4]);
}

/** An account principal (`123456789012` or `arn:aws:iam::123456789012:root`) stands for every principal of the account. */
function accountOf(principal: string): string | undefined {
  return /^(?:arn:[\w-]+:iam::)?(\d{12})(?::root)?$/.exec(principal)?.[1];
}

function conditionMatches(operator: string, value: string | undefined, expected: readonly string[]): boolean {
  const ifExists = operator.endsWith('IfExists');
  const base = ifExists ? operator.slice(0, -'IfExists'.length) : operator;
  const negated = base.includes('Not');
  if (value === undefined) return ifExists || negated;
  const positive = base.replace('Not', '');
  let matched: boolean;
  switch (positive) {
    case 'StringEquals':
    case 'ArnEquals':
      matched = expected.includes(value);
      break;
    case 'StringLike':
    case 'ArnLike':
      matched = expected.some((pattern) => wildcard(pattern, value));
      break;
    case 'Bool':
      if (negated) throw new UnknownConditionOperatorError(operator);
      matched = expected.includes(value);
      break;
    default:
      throw new UnknownConditionOperatorError(`condition operator ${operator} is not known to this evaluator`);
  }
  return negated ? !matched : matched;
}

/** IAM's `*` (any run of characters) and `?` (one character), case-sensitive. */
function wildcard(pattern: string, value: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return regex.test(value);
}

function list<T>(value: T | readonly T[]): readonly T[] {
  return Array.isArray(value) ? value : [value as T];
}
