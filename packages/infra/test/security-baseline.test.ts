import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { App, cx_api, type IPolicyValidationContext } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';
import {
  differences,
  guardedStatements,
  readSecurityBaseline,
  SECURITY_BASELINE_UPDATE,
  SecurityBaselineCheck,
} from '../src/security-baseline.ts';

/**
 * Issue #37, item 7: the synth fails when a Deny statement or the bus policy differs from the
 * committed baseline (packages/infra/src/security-baseline.json), and says how to accept the change. The
 * security diff before the approval does not list the bus policy at all, and it runs after the
 * pipeline has updated itself; this check runs in the synth step, before anything is deployed.
 */
const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const base = cdkJson.context.rocketmq;
const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

/** The app as `cdk synth` builds it, with the check; Lambda bundling skipped (no policy depends on code). */
function checkedApp(rocketmq: unknown = base) {
  const outdir = mkdtempSync(path.join(tmpdir(), 'security-baseline-test-'));
  outdirs.push(outdir);
  const app = new App({ outdir, context: { rocketmq, [cx_api.BUNDLING_STACKS]: [] }, stackTraces: false });
  return buildApp(app, { securityBaseline: new SecurityBaselineCheck() });
}

describe('the security baseline check', () => {
  let stacks: Array<{ stackConstructPath: string; templatePath: string }>;
  /** The committed app's templates, one of them changed as a commit would change it. */
  function changed(stack: string, change: (resources: Record<string, any>) => void) {
    return stacks.map((s) => {
      if (s.stackConstructPath !== stack) return s;
      const template = JSON.parse(readFileSync(s.templatePath, 'utf8'));
      change(template.Resources);
      const templatePath = path.join(path.dirname(s.templatePath), `changed-${path.basename(s.templatePath)}`);
      writeFileSync(templatePath, JSON.stringify(template));
      return { ...s, templatePath };
    });
  }
  const check = (changedStacks: typeof stacks) =>
    new SecurityBaselineCheck().validate({ stackTemplates: changedStacks } as unknown as IPolicyValidationContext);
  const ofType = (resources: Record<string, any>, type: string) =>
    Object.entries(resources).filter(([, r]) => r.Type === type);
  /** The bus policy statement that keeps everyone but the bridge and the senders from putting events. */
  const bridgePutsEvents = (resources: Record<string, any>) =>
    ofType(resources, 'AWS::Events::EventBusPolicy').find(
      ([, r]) => r.Properties.StatementId === 'cdk-OnlyTheBridgePutsEvents',
    )!;

  beforeAll(() => {
    // The stage stacks are synthesised when the pipeline adds them, so a changed template is what
    // a changed commit looks like to the check.
    const assembly = checkedApp().app.synth();
    stacks = assembly.stacksRecursively.map((s) => ({
      stackConstructPath: s.hierarchicalId,
      templatePath: s.templateFullPath,
    }));
  }, 120_000);

  it('passes the committed settings, whose baseline guards every Deny and the bus policies', () => {
    expect(check(stacks)).toEqual({ success: true, violations: [] });
    const baseline = readSecurityBaseline();
    expect(Object.keys(baseline).sort()).toEqual(stacks.map((s) => s.stackConstructPath).sort());
    const prod = baseline['RocketMqConsumersPipeline/Prod/Consumers']!;
    const busStatements = Object.values(prod)
      .filter((r) => r.type === 'AWS::Events::EventBusPolicy')
      .flatMap((r) => r.statements.map((s) => s.Sid));
    expect(busStatements).toContain('cdk-OnlyTheBridgePutsEvents');
    const queuePolicies = Object.values(prod).filter((r) => r.type === 'AWS::SQS::QueuePolicy');
    expect(queuePolicies.flatMap((r) => r.statements.map((s) => s.Sid))).toContain('OnlyTheBridgeSends');
    for (const resource of Object.values(prod).filter((r) => r.type !== 'AWS::Events::EventBusPolicy'))
      for (const statement of resource.statements) expect(statement.Effect).toBe('Deny');
  });

  it('fails when a bus policy is opened to everyone, naming it and how to accept the change', () => {
    const report = check(
      changed('RocketMqConsumersPipeline/Prod/Consumers', (resources) => {
        const [, policy] = bridgePutsEvents(resources);
        policy.Properties.Statement = { ...policy.Properties.Statement, Effect: 'Allow', Condition: undefined };
      }),
    );
    expect(report.success).toBe(false);
    expect(report.violations).toHaveLength(1);
    const [violation] = report.violations;
    expect(violation!.description).toMatch(
      /^RocketMqConsumersPipeline\/Prod\/Consumers RocketMqBus\w+ \(AWS::Events::EventBusPolicy\): a bus policy statement differs from packages\/infra\/src\/security-baseline\.json/,
    );
    expect(violation!.description).toContain(
      'synthesised, not in the baseline: {"Action":"events:PutEvents","Effect":"Allow","Principal":"*"',
    );
    expect(violation!.fix).toContain(
      `run ${SECURITY_BASELINE_UPDATE} and commit packages/infra/src/security-baseline.json`,
    );
    expect(violation!.violatingResources[0]!.locations).toEqual(['Properties/Statement']);
  });

  it('fails when a Deny statement is removed, or a bus policy is dropped', () => {
    const report = check(
      changed('RocketMqConsumersPipeline/Test/Consumers', (resources) => {
        const [, queuePolicy] = ofType(resources, 'AWS::SQS::QueuePolicy').find(([id]) =>
          id.startsWith('PointConsumerGroupQueue'),
        )!;
        const statements = queuePolicy.Properties.PolicyDocument.Statement as Array<{ Sid?: string }>;
        queuePolicy.Properties.PolicyDocument.Statement = statements.filter((s) => s.Sid !== 'OnlyTheBridgeSends');
        delete resources[bridgePutsEvents(resources)[0]];
      }),
    );
    const [queue, bus] = report.violations.map((v) => v.description).sort();
    expect(report.violations).toHaveLength(2);
    expect(bus).toMatch(
      /^RocketMqConsumersPipeline\/Test\/Consumers RocketMqBus\w+ \(AWS::Events::EventBusPolicy\): a bus/,
    );
    expect(queue).toMatch(
      /^RocketMqConsumersPipeline\/Test\/Consumers PointConsumerGroupQueuePolicy\w+ \(AWS::SQS::QueuePolicy\): a Deny/,
    );
    expect(queue).toMatch(/in the baseline, not synthesised: \{[^\n]*"Sid":"OnlyTheBridgeSends"/);
  });

  it('fails `cdk synth` itself (packages/infra/src/app.ts) when settings change who a Deny exempts', () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'security-baseline-cli-'));
    outdirs.push(outdir);
    const senders = [`arn:aws:iam::${base.stages.prod.account}:role/bridge-elsewhere`];
    const rocketmq = { ...base, stages: { ...base.stages, prod: { ...base.stages.prod, senderRoleArns: senders } } };
    // As the CLI runs the app: context and output directory through the environment.
    const run = spawnSync('npx', ['tsx', 'packages/infra/src/app.ts'], {
      cwd: REPOSITORY_ROOT,
      encoding: 'utf8',
      env: {
        ...process.env,
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify({ rocketmq, [cx_api.BUNDLING_STACKS]: [] }),
      },
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/Prod\/Consumers \w*QueuePolicy\w* \(AWS::SQS::QueuePolicy\): a Deny statement differs/);
    expect(run.stderr).toContain('bridge-elsewhere');
    expect(run.stderr).toContain(SECURITY_BASELINE_UPDATE);
  }, 180_000);
});

describe('guarded statements', () => {
  const template = {
    Resources: {
      Queue: {
        Type: 'AWS::SQS::QueuePolicy',
        Properties: { PolicyDocument: { Statement: [ALLOW(), DENY('b'), DENY('a')] } },
      },
      Role: { Type: 'AWS::IAM::Role', Properties: { Policies: [{ PolicyDocument: { Statement: [ALLOW()] } }] } },
      BusPolicy: { Type: 'AWS::Events::EventBusPolicy', Properties: { Statement: ALLOW() } },
      Bus: { Type: 'AWS::Events::EventBus', Properties: { Policy: { Statement: [ALLOW(), DENY('c')] } } },
      Topic: { Type: 'AWS::SNS::Topic', Properties: {} },
    },
  };

  it('are every Deny wherever it sits, and every bus policy statement, in a stable order', () => {
    const guarded = guardedStatements(template);
    expect(Object.keys(guarded).sort()).toEqual(['Bus', 'BusPolicy', 'Queue']);
    expect(guarded.Queue!.statements.map((s) => s.Sid)).toEqual(['a', 'b']);
    expect(guarded.BusPolicy!.statements).toEqual([ALLOW()]);
    expect(guarded.Bus!.statements).toHaveLength(2);
  });

  it('differ per resource by the statements added and removed, not by their order', () => {
    const before = { stack: guardedStatements(template) };
    const reordered = structuredClone(template);
    reordered.Resources.Queue.Properties.PolicyDocument.Statement.reverse();
    expect(differences(before, { stack: guardedStatements(reordered) })).toEqual([]);
    const changed = structuredClone(template);
    changed.Resources.Queue.Properties.PolicyDocument.Statement = [DENY('a'), DENY('b2')];
    delete (changed.Resources as Record<string, unknown>).BusPolicy;
    expect(differences(before, { stack: guardedStatements(changed) })).toEqual([
      { stack: 'stack', logicalId: 'Queue', type: 'AWS::SQS::QueuePolicy', added: [DENY('b2')], removed: [DENY('b')] },
      { stack: 'stack', logicalId: 'BusPolicy', type: 'AWS::Events::EventBusPolicy', added: [], removed: [ALLOW()] },
    ]);
  });
});

function ALLOW() {
  return { Effect: 'Allow', Principal: '*', Action: 'events:PutEvents', Resource: '*' };
}
function DENY(sid: string) {
  return { Sid: sid, Effect: 'Deny', Principal: '*', Action: 'sqs:SendMessage', Resource: '*' };
}
