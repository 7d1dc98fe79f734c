import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type {
  IPolicyValidationContext,
  IPolicyValidationPlugin,
  PolicyValidationPluginReport,
  PolicyViolation,
} from 'aws-cdk-lib';
import canonicalize from 'canonicalize';
import { REPOSITORY_ROOT } from './project-function.ts';

/**
 * What no commit may change without a reviewer seeing it in the same commit: every `Deny`
 * statement of every template (queue, bus, topic, secret, key and identity policies alike) and
 * every statement of the EventBridge bus policies, Allow ones too. `cdk diff --security-only`
 * does not parse `AWS::Events::EventBusPolicy` at all, and its run before the approval is
 * advisory and comes after the pipeline has updated itself; this check runs in the synth, so a
 * commit that changes one of these statements without its baseline fails before anything is
 * deployed, the pipeline included.
 */
export const SECURITY_BASELINE_PATH = path.join(REPOSITORY_ROOT, 'packages', 'infra', 'src', 'security-baseline.json');
export const SECURITY_BASELINE_UPDATE = 'npm run security-baseline:update';

type Statement = Record<string, unknown>;

/** Per resource: its type and the guarded statements, sorted by their canonical JSON. */
export interface GuardedResource {
  readonly type: string;
  readonly statements: readonly Statement[];
}

/** Per stack (by construct path), per logical id. */
export type SecurityBaseline = Record<string, Record<string, GuardedResource>>;

/** The bus policy's statements: `AWS::Events::EventBusPolicy` (one statement, or a whole policy) and a bus's own `Policy`. */
function busPolicyStatements(type: string, properties: Statement): Statement[] | undefined {
  const policy =
    type === 'AWS::Events::EventBusPolicy'
      ? (properties.Statement ?? properties.Policy)
      : type === 'AWS::Events::EventBus'
        ? properties.Policy
        : undefined;
  if (policy === undefined) return type === 'AWS::Events::EventBusPolicy' ? [] : undefined;
  const statements = isObject(policy) && 'Statement' in policy ? policy.Statement : policy;
  return [statements].flat().filter(isObject);
}

/** The guarded statements of one template. */
export function guardedStatements(template: {
  Resources?: Record<string, { Type: string; Properties?: Statement }>;
}): Record<string, GuardedResource> {
  const guarded: Record<string, GuardedResource> = {};
  for (const [logicalId, { Type, Properties = {} }] of Object.entries(template.Resources ?? {})) {
    const found = busPolicyStatements(Type, Properties) ?? denyStatements(Properties);
    if (found.length > 0) guarded[logicalId] = { type: Type, statements: sortedByCanonicalJson(found) };
  }
  return guarded;
}

/** Every object with `Effect: Deny`, wherever it sits in the resource's properties. */
function denyStatements(value: unknown): Statement[] {
  if (Array.isArray(value)) return value.flatMap(denyStatements);
  if (!isObject(value)) return [];
  if (value.Effect === 'Deny') return [value];
  return Object.values(value).flatMap(denyStatements);
}

function isObject(value: unknown): value is Statement {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const canonical = (value: unknown) => canonicalize(value) as string;

function sortedByCanonicalJson(statements: Statement[]): Statement[] {
  return [...statements].sort((a, b) => canonical(a).localeCompare(canonical(b)));
}

/** The baseline of every stack the validation context holds. */
export function baselineOf(
  stacks: ReadonlyArray<{ stackConstructPath: string; templatePath: string }>,
): SecurityBaseline {
  return Object.fromEntries(
    [...stacks]
      .sort((a, b) => a.stackConstructPath.localeCompare(b.stackConstructPath))
      .map(({ stackConstructPath, templatePath }) => [
        stackConstructPath,
        guardedStatements(JSON.parse(readFileSync(templatePath, 'utf8'))),
      ]),
  );
}

export function readSecurityBaseline(file = SECURITY_BASELINE_PATH): SecurityBaseline {
  return JSON.parse(readFileSync(file, 'utf8')).stacks;
}

export function writeSecurityBaseline(baseline: SecurityBaseline, file = SECURITY_BASELINE_PATH): void {
  const document = {
    $comment: `Every Deny statement and every bus policy statement the app synthesises. A synth whose templates differ fails; to accept a change, run ${SECURITY_BASELINE_UPDATE} and commit this file with it, for review.`,
    stacks: baseline,
  };
  writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
}

export interface BaselineDifference {
  readonly stack: string;
  readonly logicalId: string;
  readonly type: string;
  readonly added: readonly Statement[];
  readonly removed: readonly Statement[];
}

/** Where the templates differ from the baseline: per resource, the statements added and removed. */
export function differences(baseline: SecurityBaseline, actual: SecurityBaseline): BaselineDifference[] {
  const found: BaselineDifference[] = [];
  for (const stack of new Set([...Object.keys(baseline), ...Object.keys(actual)])) {
    const was = baseline[stack] ?? {};
    const is = actual[stack] ?? {};
    for (const logicalId of new Set([...Object.keys(was), ...Object.keys(is)])) {
      const before = (was[logicalId]?.statements ?? []).map(canonical);
      const after = (is[logicalId]?.statements ?? []).map(canonical);
      const added = after.filter((s) => !before.includes(s)).map((s) => JSON.parse(s));
      const removed = before.filter((s) => !after.includes(s)).map((s) => JSON.parse(s));
      const type = (is[logicalId] ?? was[logicalId])!.type;
      if (added.length + removed.length > 0) found.push({ stack, logicalId, type, added, removed });
    }
  }
  return found;
}

/**
 * The synth-time check, as a CDK validation plugin: a difference is a violation, and the
 * violation's fix says how to accept it.
 */
export class SecurityBaselineCheck implements IPolicyValidationPlugin {
  readonly name = 'SecurityBaseline';
  readonly ruleIds = ['DenyOrBusPolicyChanged'];

  constructor(private readonly file = SECURITY_BASELINE_PATH) {}

  validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const actual = baselineOf(context.stackTemplates);
    const paths = new Map(context.stackTemplates.map((s) => [s.stackConstructPath, s.templatePath]));
    const violations: PolicyViolation[] = differences(readSecurityBaseline(this.file), actual).map((d) => ({
      ruleName: 'DenyOrBusPolicyChanged',
      description: describe(d, path.relative(REPOSITORY_ROOT, this.file)),
      fix: `If the change is intended, run ${SECURITY_BASELINE_UPDATE} and commit ${path.relative(REPOSITORY_ROOT, this.file)} with it: the reviewer of the commit then sees the statements change.`,
      violatingResources: [
        {
          resourceLogicalId: d.logicalId,
          templatePath: paths.get(d.stack) ?? d.stack,
          locations: [d.type === 'AWS::Events::EventBusPolicy' ? 'Properties/Statement' : 'Properties'],
        },
      ],
    }));
    return { success: violations.length === 0, violations };
  }
}

function describe({ stack, logicalId, type, added, removed }: BaselineDifference, file: string): string {
  const what = type.startsWith('AWS::Events::EventBus') ? 'bus policy statement' : 'Deny statement';
  const lines = [
    `${stack} ${logicalId} (${type}): a ${what} differs from ${file}.`,
    ...removed.map((s) => `  in the baseline, not synthesised: ${JSON.stringify(s)}`),
    ...added.map((s) => `  synthesised, not in the baseline: ${JSON.stringify(s)}`),
  ];
  return lines.join('\n');
}
