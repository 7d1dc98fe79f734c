import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_TRACE_COLLECTOR_IMAGE,
  TRACE_COLLECTOR_CONFIG,
  TRACE_COLLECTOR_ENDPOINT,
} from '../../infra/bridge/bridge-service.ts';
import { buildApp } from '../../infra/consumers-app.ts';
import { ADOT_EXEC_WRAPPER } from '../../infra/function-tracing.ts';
import { REPOSITORY_ROOT } from '../../infra/project-function.ts';
import { CONSUMER_GROUPS } from '../../lib/config/index.ts';

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
  return { template: Template.fromStack(stack), nag, annotations: Annotations.fromStack(stack) };
}

const consumerFunctions = (template: Template) =>
  Object.values(template.findResources('AWS::Lambda::Function')).filter(
    (f) => f.Properties.Environment?.Variables?.CONSUMER_GROUP !== undefined,
  );
const bridgeContainers = (template: Template): Array<Record<string, unknown>> =>
  Object.values(template.findResources('AWS::ECS::TaskDefinition'))[0]!.Properties.ContainerDefinitions;
const bridgeEnvironment = (template: Template): Array<{ Name: string; Value: unknown }> =>
  bridgeContainers(template)[0]!.Environment as Array<{ Name: string; Value: unknown }>;

/** The bridge task with tracing on: the collector sidecar beside the bridge, which exports to it and starts after it. */
function expectTraceCollector(template: Template) {
  const [bridge, collector, ...others] = bridgeContainers(template);
  expect(others).toEqual([]);
  expect(collector).toMatchObject({
    Name: 'TraceCollector',
    Image: DEFAULT_TRACE_COLLECTOR_IMAGE,
    Essential: false,
    ReadonlyRootFilesystem: true,
    Environment: [{ Name: 'AOT_CONFIG_CONTENT', Value: TRACE_COLLECTOR_CONFIG }],
  });
  expect(bridge!.Environment).toContainEqual({
    Name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    Value: TRACE_COLLECTOR_ENDPOINT,
  });
  expect(bridge!.DependsOn).toEqual([{ ContainerName: 'TraceCollector', Condition: 'START' }]);
  // The collector takes OTLP/HTTP on the endpoint the bridge is given, and nothing but X-Ray out.
  expect(TRACE_COLLECTOR_CONFIG).toContain(`endpoint: ${new URL(TRACE_COLLECTOR_ENDPOINT).host}`);
  expect(TRACE_COLLECTOR_CONFIG).toMatch(/exporters: \[awsxray\]/);
}
const xrayWrites = Match.objectLike({
  Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
  Effect: 'Allow',
  Resource: '*',
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
  }, 180_000);

  it('xray: active tracing and X-Ray writes on every consumer, TRACING_BACKEND to functions and bridge, nag-clean', () => {
    const { template, nag, annotations } = synth({ tracing: 'xray' });
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
    // One per consumer function, one for the bridge's task role (its collector sidecar writes to X-Ray).
    expect(xrayPolicies).toHaveLength(CONSUMER_GROUPS.length + 1);
    expect(bridgeEnvironment(template)).toContainEqual({ Name: 'TRACING_BACKEND', Value: 'xray' });
    expectTraceCollector(template);
    expect(nag.violations).toEqual([]);
    const tracingAcks = nag.suppressedViolations.filter((v: { reason: string }) =>
      v.reason.includes('Lambda active tracing'),
    );
    expect(tracingAcks.length).toBeGreaterThanOrEqual(CONSUMER_GROUPS.length);
    expect(nag.suppressedViolations.some((v: { reason: string }) => v.reason.includes('trace collector sidecar'))).toBe(
      true,
    );
  }, 180_000);

  it('adot: the layer and its wrapper besides active tracing', () => {
    const { template, nag, annotations } = synth({ tracing: 'adot', adotLayerArn: ADOT_LAYER });
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
    expectTraceCollector(template);
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
