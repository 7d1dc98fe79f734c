import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import { isConsumerFunction } from '@rocketmq-lambda/tools/testing/stage-policies.ts';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { RocketMQBridgeService } from '../src/bridge/bridge-service.ts';
import { buildApp } from '../src/consumers-app.ts';
import { ADOT_EXEC_WRAPPER } from '../src/function-tracing.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const base = cdkJson.context.rocketmq;
const ADOT_LAYER = 'arn:aws:lambda:ap-northeast-1:901920570463:layer:aws-otel-nodejs-arm64-ver-1-30-2:1';
const BRIDGE = {
  enabled: true,
  protocol: 'rocketmq5',
  endpoints: 'proxy1.mq.internal:8081',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
};
const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

/** The test stage with its bridge and the given tracing settings, synthesised as the CLI does (cdk-nag on). */
function synth(tracing: Record<string, unknown>) {
  const outdir = mkdtempSync(path.join(tmpdir(), 'cdk-tracing-test-'));
  outdirs.push(outdir);
  const test = { ...base.stages.test, bridge: BRIDGE, ...tracing };
  const built = buildApp(
    new App({ outdir, context: { rocketmq: { ...base, stages: { ...base.stages, test } } }, stackTraces: false }),
  );
  built.app.synth();
  const nag = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')).pluginReports.find(
    (p: { pluginName: string }) => p.pluginName === 'AwsSolutions',
  );
  const stack = built.pipeline.test.consumers;
  return { template: Template.fromStack(stack), nag, annotations: Annotations.fromStack(stack), region: stack.region };
}

const consumerFunctions = (template: Template) =>
  Object.values(template.findResources('AWS::Lambda::Function')).filter(isConsumerFunction);
const bridgeContainers = (template: Template): Array<Record<string, unknown>> =>
  Object.values(template.findResources('AWS::ECS::TaskDefinition'))[0]!.Properties.ContainerDefinitions;
const bridgeEnvironment = (template: Template): Array<{ Name: string; Value: unknown }> =>
  bridgeContainers(template)[0]!.Environment as Array<{ Name: string; Value: unknown }>;

/**
 * The bridge task with tracing on: the bridge's own container alone, which exports its spans to
 * X-Ray's OTLP endpoint itself; no other image (by tag or otherwise) runs with its task role.
 */
function expectNoSidecar(template: Template) {
  const containers = bridgeContainers(template);
  expect(containers.map((c) => c.Name)).toEqual(['Bridge']);
  expect(containers[0]!.DependsOn).toBeUndefined();
  const environment = bridgeEnvironment(template).map((e) => e.Name);
  expect(environment).not.toContain('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  expect(JSON.stringify(template.toJSON())).not.toMatch(/public\.ecr\.aws|aws-otel-collector|AOT_CONFIG_CONTENT/);
}

/** Every X-Ray statement of the bridge task role's policies. */
function bridgeXrayStatements(template: Template): unknown[] {
  const taskDefinition = Object.values(template.findResources('AWS::ECS::TaskDefinition'))[0]!;
  const role = taskDefinition.Properties.TaskRoleArn['Fn::GetAtt'][0] as string;
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: role }]))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[] }>)
    .filter((s) => [s.Action].flat().some((a) => a.startsWith('xray:')));
}

/** Lambda active tracing's grant on a consumer function's role. */
const xrayWrites = Match.objectLike({
  Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
  Effect: 'Allow',
  Resource: '*',
});

/** What X-Ray's OTLP endpoint is authorised as, and nothing else; in the stage's region only. */
const bridgeXrayGrant = (region: string) => ({
  Action: 'xray:PutTraceSegments',
  Effect: 'Allow',
  Resource: '*',
  Condition: { StringEquals: { 'aws:RequestedRegion': region } },
});

describe('the stage’s tracing back end switches on what it needs, and nothing when off', () => {
  it('off (the default): no active tracing, no layer, no TRACING_BACKEND, no X-Ray permission', () => {
    const { template } = synth({});
    for (const f of consumerFunctions(template)) {
      expect(f.Properties.TracingConfig).toBeUndefined();
      expect(f.Properties.Layers).toBeUndefined();
      expect(f.Properties.Environment.Variables).not.toHaveProperty('TRACING_BACKEND');
    }
    expect(consumerFunctions(template)).toHaveLength(CONSUMER_GROUPS.length);
    expect(JSON.stringify(template.toJSON())).not.toContain('xray:');
    expect(bridgeEnvironment(template).map((e) => e.Name)).not.toContain('TRACING_BACKEND');
    expect(bridgeContainers(template).map((c) => c.Name)).toEqual(['Bridge']);
    expect(bridgeXrayStatements(template)).toEqual([]);
  }, 180_000);

  it('xray: active tracing and X-Ray writes on every consumer, TRACING_BACKEND to functions and bridge, nag-clean', () => {
    const { template, nag, annotations, region } = synth({ tracing: 'xray' });
    annotations.hasInfo('*', Match.stringLikeRegexp('per-record spans .* are exported only with tracing: adot'));
    for (const f of consumerFunctions(template)) {
      expect(f.Properties.TracingConfig).toEqual({ Mode: 'Active' });
      expect(f.Properties.Layers).toBeUndefined();
      expect(f.Properties.Environment.Variables.TRACING_BACKEND).toBe('xray');
    }
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([xrayWrites]) },
    });
    const xrayPolicies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p).includes('xray:PutTraceSegments'),
    );
    // One per consumer function, one per outbox relay, one for the bridge's task role (it sends its spans to X-Ray's
    // OTLP endpoint).
    expect(xrayPolicies).toHaveLength(
      CONSUMER_GROUPS.length +
        (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).filter((g) => g.publishes).length +
        1,
    );
    expectNoSidecar(template);
    expect(bridgeXrayStatements(template)).toEqual([bridgeXrayGrant(region)]);
    expect(bridgeEnvironment(template)).toContainEqual({ Name: 'TRACING_BACKEND', Value: 'xray' });
    expect(nag.violations).toEqual([]);
    const tracingAcks = nag.suppressedViolations.filter((v: { reason: string }) =>
      v.reason.includes('Lambda active tracing'),
    );
    expect(tracingAcks.length).toBeGreaterThanOrEqual(CONSUMER_GROUPS.length);
    expect(nag.suppressedViolations.some((v: { reason: string }) => v.reason.includes("X-Ray's OTLP endpoint"))).toBe(
      true,
    );
  }, 180_000);

  it('adot: the layer and its wrapper besides active tracing', () => {
    const { template, nag, annotations, region } = synth({ tracing: 'adot', adotLayerArn: ADOT_LAYER });
    expect(annotations.findInfo('*', Match.stringLikeRegexp('per-record spans'))).toEqual([]);
    for (const f of consumerFunctions(template)) {
      expect(f.Properties.TracingConfig).toEqual({ Mode: 'Active' });
      expect(f.Properties.Layers).toEqual([ADOT_LAYER]);
      expect(f.Properties.Environment.Variables).toMatchObject({
        TRACING_BACKEND: 'adot',
        AWS_LAMBDA_EXEC_WRAPPER: ADOT_EXEC_WRAPPER,
      });
    }
    expect(bridgeEnvironment(template)).toContainEqual({ Name: 'TRACING_BACKEND', Value: 'adot' });
    expect(bridgeXrayStatements(template)).toEqual([bridgeXrayGrant(region)]);
    expectNoSidecar(template);
    expect(nag.violations).toEqual([]);
  }, 180_000);

  it('refuses adot without its layer, and a layer without adot, naming both settings', () => {
    expect(() => synth({ tracing: 'adot' })).toThrow(
      /stages\.test\.tracing: tracing is adot but adotLayerArn is not set/,
    );
    expect(() => synth({ tracing: 'xray', adotLayerArn: ADOT_LAYER })).toThrow(
      /stages\.test\.adotLayerArn: adotLayerArn is set but tracing is not adot/,
    );
    expect(() => synth({ tracing: 'jaeger' })).toThrow(/stages\.test\.tracing/);
  });
});

describe('the bridge construct runs no image but its own', () => {
  it('refuses traceCollectorImage at synth, saying why', () => {
    const stack = new Stack(new App(), 'Refusal', { env: { account: '111111111111', region: 'ap-northeast-1' } });
    const queue = new sqs.Queue(stack, 'Points');
    const build = (extra: object) =>
      new RocketMQBridgeService(stack, `Bridge${Object.keys(extra).length}`, {
        vpc: new ec2.Vpc(stack, `Vpc${Object.keys(extra).length}`, { natGateways: 0 }),
        image: ecs.ContainerImage.fromRegistry('example/rocketmq-bridge:1'),
        proxyEndpoint: 'rocketmq-proxy.internal:8081',
        routes: [{ group: 'point-consumer-group', topic: 'ORDER_TOPIC', queue, dlq: queue }],
        ...extra,
      });
    expect(() =>
      build({
        traceCollectorImage: ecs.ContainerImage.fromRegistry(
          'public.ecr.aws/aws-observability/aws-otel-collector:v0.49.0',
        ),
      }),
    ).toThrow(/traceCollectorImage is refused: the bridge sends its spans to X-Ray's OTLP endpoint itself/);
    expect(() => build({})).not.toThrow();
  });
});
