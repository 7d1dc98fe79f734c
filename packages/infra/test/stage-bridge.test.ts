import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseBridgeConfig } from '@rocketmq-lambda/bridge/index.ts';
import {
  BRIDGE_METRICS_NAMESPACE,
  BridgeMetric,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  deadLetterQueueName,
  orderingOf,
  queueName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { cfnLint, templatesIn } from '@rocketmq-lambda/tools/testing/cfn-lint.ts';
import { isConsumerFunction } from '@rocketmq-lambda/tools/testing/stage-policies.ts';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const base = cdkJson.context.rocketmq;

/** The test stage with a bridge, as a team would write it in cdk.json. */
const BRIDGE = {
  enabled: true,
  protocol: 'rocketmq5',
  endpoints: 'proxy1.mq.internal:8081;proxy2.mq.internal:8081',
  clusterName: 'trade-cluster',
  credentialsSecretName: 'rmq-test/rocketmq-acl',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [
    { id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' },
    { id: 'subnet-0a1b2c3d4e5f60712', availabilityZone: 'ap-northeast-1c' },
  ],
  securityGroupIds: ['sg-0a1b2c3d4e5f60719'],
  desiredCount: 2,
  maxCount: 6,
};

function synth(bridge: Record<string, unknown> | undefined, outdir?: string) {
  const context = {
    rocketmq: { ...base, stages: { ...base.stages, test: { ...base.stages.test, ...(bridge ? { bridge } : {}) } } },
  };
  // As the CLI synthesises (version reporting on), so cfn-lint sees the deployed templates.
  const built = buildApp(
    new App({ context, analyticsReporting: true, stackTraces: false, ...(outdir ? { outdir } : {}) }),
  );
  if (outdir) built.app.synth();
  return {
    test: Template.fromStack(built.pipeline.test.consumers),
    prod: Template.fromStack(built.pipeline.prod.consumers),
  };
}

let outdir: string;
let test: Template;
let prod: Template;
let config: ReturnType<typeof parseBridgeConfig>;

beforeAll(() => {
  outdir = mkdtempSync(path.join(tmpdir(), 'cdk-bridge-test-'));
  ({ test, prod } = synth(BRIDGE, outdir));
  const container = Object.values(test.findResources('AWS::ECS::TaskDefinition'))[0]!.Properties
    .ContainerDefinitions[0];
  const value = container.Environment.find((e: { Name: string }) => e.Name === 'BRIDGE_CONFIG').Value;
  // Queue URLs are tokens: the JSON is an Fn::Join whose parts include {Ref: queue}. Render each
  // Ref as a URL ending in the queue's name (a FIFO route's must end in .fifo), so the bridge's own parser reads the
  // result.
  const names: Record<string, string> = Object.fromEntries(
    Object.entries(test.findResources('AWS::SQS::Queue')).map(([id, q]) => [id, q.Properties.QueueName as string]),
  );
  const parts: unknown[] = value['Fn::Join'][1];
  const render = (ref: string) => (names[ref] ? `https://sqs.test/${names[ref]}` : `arn:test:${ref}`);
  config = parseBridgeConfig(
    JSON.parse(parts.map((p) => (typeof p === 'string' ? p : render((p as { Ref: string }).Ref))).join('')),
  );
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('a stage with its bridge enabled', () => {
  it('is off unless a stage enables it: the committed cdk.json deploys no bridge', () => {
    expect(prod.findResources('AWS::ECS::Service')).toEqual({});
    expect(Object.keys(test.findResources('AWS::ECS::Service'))).toHaveLength(1);
  });

  it('derives one route per catalogue group (topic, tag expression, its own queue and DLQ), never restated', () => {
    expect(config.protocol).toBe('rocketmq5');
    expect(config.proxyEndpoint).toBe(BRIDGE.endpoints);
    expect(config.clusterName).toBe('trade-cluster');
    expect(config.routes.map((r) => [r.group, r.topic, r.tagExpression])).toEqual(
      CONSUMER_GROUPS.map((g) => [g.group, g.topic, g.tagExpression]),
    );
    for (const route of config.routes) {
      expect(route.target).toEqual({
        kind: 'sqs',
        queueUrl: `https://sqs.test/${queueName(base.stages.test.prefix, route.group)}`,
      });
      expect(route.dlqUrl).toBe(`https://sqs.test/${deadLetterQueueName(base.stages.test.prefix, route.group)}`);
      // An orderly group's route is FIFO: message group and msgId travel with each message.
      expect(route.fifo).toBe(orderingOf(route.group) === 'orderly');
      // …with its messages' group taken where the catalogue says (order-status: the order number, the first key).
      expect(route.messageGroupFrom).toEqual(
        (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).find((g) => g.group === route.group)!.messageGroupFrom,
      );
    }
  });

  it('runs in the given private subnets with the given security group, no public IP, ACL credentials from the named secret', () => {
    test.hasResourceProperties('AWS::ECS::Service', {
      NetworkConfiguration: {
        AwsvpcConfiguration: {
          AssignPublicIp: 'DISABLED',
          Subnets: BRIDGE.subnets.map((s) => s.id),
          SecurityGroups: Match.arrayWith(['sg-0a1b2c3d4e5f60719']),
        },
      },
    });
    const container = Object.values(test.findResources('AWS::ECS::TaskDefinition'))[0]!.Properties
      .ContainerDefinitions[0];
    expect(container.Secrets.map((s: { Name: string }) => s.Name).sort()).toEqual([
      'ROCKETMQ_ACCESS_KEY',
      'ROCKETMQ_SECRET_KEY',
    ]);
    expect(JSON.stringify(container.Secrets)).toContain('rmq-test/rocketmq-acl');
  });

  it('talks TLS to the proxy, and signs every envelope with a key of its own that only it and the consumers can read', () => {
    expect(config.sslEnabled).toBe(true);
    const [secretId, ...more] = Object.keys(
      test.findResources('AWS::SecretsManager::Secret', {
        Properties: { Name: `${base.stages.test.prefix}/envelope-signing-key` },
      }),
    );
    expect(more).toEqual([]);
    expect(config.signing).toEqual({ secretId: `arn:test:${secretId}` });
    const consumers = Object.values(test.findResources('AWS::Lambda::Function')).filter(isConsumerFunction);
    expect(consumers.map((f) => f.Properties.Environment.Variables.CONSUMER_GROUP).sort()).toEqual(
      CONSUMER_GROUPS.map((g) => g.group).sort(),
    );
    for (const f of consumers)
      expect(f.Properties.Environment.Variables.ENVELOPE_SIGNING_SECRET).toEqual({ Ref: secretId });
    const readers = Object.values(test.findResources('AWS::IAM::Policy')).filter((p) =>
      p.Properties.PolicyDocument.Statement.some(
        (st: { Action: string[]; Resource: unknown }) =>
          [st.Action].flat().includes('secretsmanager:GetSecretValue') &&
          JSON.stringify(st.Resource) === JSON.stringify({ Ref: secretId }),
      ),
    );
    // One per consumer function, one per outbox relay (it signs what it relays), and the bridge's task role.
    const relays = (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).filter((g) => g.publishes).length;
    expect(readers).toHaveLength(CONSUMER_GROUPS.length + relays + 1);
    // Every deployed stage has the key, its own bridge or not (packages/infra/test/security-policies.test.ts).
    expect(
      Object.keys(
        prod.findResources('AWS::SecretsManager::Secret', {
          Properties: { Name: `${base.stages.prod.prefix}/envelope-signing-key` },
        }),
      ),
    ).toHaveLength(1);
  });

  it('scales on CPU between desiredCount and maxCount, and deployments keep the running count', () => {
    test.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 2,
      MaxCapacity: 6,
      ScalableDimension: 'ecs:service:DesiredCount',
    });
    test.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
      PolicyType: 'TargetTrackingScaling',
      TargetTrackingScalingPolicyConfiguration: Match.objectLike({
        TargetValue: 60,
        PredefinedMetricSpecification: { PredefinedMetricType: 'ECSServiceAverageCPUUtilization' },
      }),
    });
    const service = Object.values(test.findResources('AWS::ECS::Service'))[0]!;
    expect(service.Properties.DesiredCount).toBeUndefined();
  });

  it('alarms per route on forward failures, receive failures and lag, and on running tasks, into the stage alarm topic with runbook links', () => {
    const topic = Object.keys(test.findResources('AWS::SNS::Topic'))[0]!;
    const alarms = Object.values(test.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
      String(a.Properties.AlarmName).startsWith(`${base.stages.test.prefix}-bridge-`),
    );
    const names = alarms.map((a) => a.Properties.AlarmName as string).sort();
    expect(names).toEqual(
      [
        `${base.stages.test.prefix}-bridge-running-tasks`,
        ...CONSUMER_GROUPS.flatMap((g) =>
          ['forward-failures', 'receive-failures', 'lag'].map(
            (w) => `${base.stages.test.prefix}-bridge-${g.group}-${w}`,
          ),
        ),
      ].sort(),
    );
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topic }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topic }]);
      expect(alarm.Properties.AlarmDescription).toMatch(/Runbook: https:\/\/\S+#bridge-/);
    }
    const [points] = CONSUMER_GROUPS;
    const lag = alarms.find(
      (a) => a.Properties.AlarmName === `${base.stages.test.prefix}-bridge-${points.group}-lag`,
    )!.Properties;
    expect(lag).toMatchObject({
      Namespace: BRIDGE_METRICS_NAMESPACE,
      MetricName: BridgeMetric.forwardLag,
      Statistic: 'Maximum',
      Threshold: 300_000,
    });
    expect(lag.Dimensions).toEqual(
      expect.arrayContaining([
        { Name: 'ConsumerGroup', Value: points.group },
        { Name: 'Topic', Value: points.topic },
      ]),
    );
    const tasks = alarms.find((a) => a.Properties.AlarmName.endsWith('-running-tasks'))!.Properties;
    expect(tasks).toMatchObject({
      Namespace: 'ECS/ContainerInsights',
      MetricName: 'RunningTaskCount',
      Threshold: 2,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });

  it('passes cdk-nag (synthesis throws on an unacknowledged finding) and cfn-lint', async () => {
    const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8'));
    expect(
      report.pluginReports.find((p: { pluginName: string }) => p.pluginName === 'AwsSolutions').violations,
    ).toEqual([]);
    const result = await cfnLint(templatesIn(outdir));
    expect(result.out, 'cfn-lint output').not.toMatch(/:E\d{4}:/);
  });

  it('refuses settings that cannot work, naming them', () => {
    expect(() => synth({ ...BRIDGE, maxCount: 1 })).toThrow(
      'rocketmq.stages.test.bridge.maxCount: maxCount must be at least desiredCount',
    );
    expect(() => synth({ ...BRIDGE, endpoints: 'http://ns1:9876' })).toThrow('rocketmq.stages.test.bridge.endpoints');
    expect(() => synth({ ...BRIDGE, subnets: [] })).toThrow('rocketmq.stages.test.bridge.subnets');
    expect(() => synth({ ...BRIDGE, protocol: 'rocketmq4', endpoints: 'ns1.mq.internal:9876' })).toThrow(
      'rocketmq.stages.test.bridge.tls: protocol is rocketmq4, whose remoting client has no TLS, but tls is true (the default): set tls to false',
    );
  });

  it('feeds the orderly group from a RocketMQ 4 cluster too: its route is FIFO on the remoting protocol', () => {
    const v4 = synth({ ...BRIDGE, protocol: 'rocketmq4', endpoints: 'ns1.mq.internal:9876', tls: false }).test;
    const container = Object.values(v4.findResources('AWS::ECS::TaskDefinition'))[0]!.Properties
      .ContainerDefinitions[0];
    const json = JSON.stringify(container.Environment.find((e: { Name: string }) => e.Name === 'BRIDGE_CONFIG').Value);
    expect(json).toContain('\\"protocol\\":\\"rocketmq4\\"');
    expect(json).toContain('\\"nameServer\\":\\"ns1.mq.internal:9876\\"');
    expect(json).toMatch(/\\"group\\":\\"order-status-consumer-group\\"[^}]*\\"fifo\\":true/);
  });

  it('consumes a route as the legacy RocketMQ group it takes over, named per stage; the catalogue group keeps its queues', () => {
    // Prepare
    const v4 = {
      ...BRIDGE,
      protocol: 'rocketmq4',
      endpoints: 'ns1.mq.internal:9876',
      tls: false,
      routes: { 'point-consumer-group': { rocketmqGroup: 'POINT_CONSUMER_GROUP', takeOver: {} } },
    };

    // Act
    const template = synth(v4).test;

    // Assess
    const container = Object.values(template.findResources('AWS::ECS::TaskDefinition'))[0]!.Properties
      .ContainerDefinitions[0];
    const json = JSON.stringify(container.Environment.find((e: { Name: string }) => e.Name === 'BRIDGE_CONFIG').Value);
    expect(json).toMatch(
      /\\"group\\":\\"point-consumer-group\\",[^}]*\\"rocketmqGroup\\":\\"POINT_CONSUMER_GROUP\\",\\"takeOver\\":\{\\"startWithoutOffset\\":\\"refuse\\"\}/,
    );
    expect(json).not.toMatch(/\\"group\\":\\"coupon-consumer-group\\",[^}]*rocketmqGroup/);
    expect(() => synth({ ...v4, routes: { 'no-such-group': { rocketmqGroup: 'X' } } })).toThrow(
      'rocketmq.stages.test.bridge.routes.no-such-group: not a consumer group of the catalogue',
    );
    expect(() =>
      synth({ ...v4, routes: { 'point-consumer-group': { rocketmqGroup: 'coupon-consumer-group' } } }),
    ).toThrow(
      'routes point-consumer-group and coupon-consumer-group both consume as RocketMQ group coupon-consumer-group',
    );
    expect(() => synth({ ...BRIDGE, routes: v4.routes })).toThrow(
      'route point-consumer-group: takeOver is built for protocol rocketmq4',
    );
    const at = { rocketmqGroup: 'POINT_CONSUMER_GROUP', takeOver: { startWithoutOffset: { timestamp: 'yesterday' } } };
    expect(() => synth({ ...v4, routes: { 'point-consumer-group': at } })).toThrow(
      'rocketmq.stages.test.bridge.routes.point-consumer-group.takeOver.startWithoutOffset',
    );
  }, 120_000);
});
