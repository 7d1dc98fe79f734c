import { RocketMQBridgeService } from '@rocketmq-lambda/infra/index.ts';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { parseBridgeConfig } from '../src/bridge-config.ts';

function synth() {
  const stack = new Stack(new App(), 'BridgeTest', { env: { account: '111111111111', region: 'ap-northeast-1' } });
  const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 1 });
  const points = new sqs.Queue(stack, 'Points');
  const pointsDlq = new sqs.Queue(stack, 'PointsDlq');
  const audit = new sqs.Queue(stack, 'Audit', { fifo: true });
  const auditDlq = new sqs.Queue(stack, 'AuditDlq', { fifo: true });
  const unrelated = new sqs.Queue(stack, 'Unrelated');
  const bus = new events.EventBus(stack, 'Bus');
  const couponsDlq = new sqs.Queue(stack, 'CouponsDlq');
  new RocketMQBridgeService(stack, 'Bridge', {
    vpc,
    image: ecs.ContainerImage.fromRegistry('example/rocketmq-bridge:1'),
    proxyEndpoint: 'rocketmq-proxy.internal:8081',
    clusterName: 'prod',
    routes: [
      { group: 'point-consumer-group', topic: 'ORDER_TOPIC', tagExpression: 'PAID', queue: points, dlq: pointsDlq },
      { group: 'audit-fifo-group', topic: 'ORDER_FIFO_TOPIC', queue: audit, dlq: auditDlq, fifo: true },
      {
        group: 'coupon-consumer-group',
        topic: 'ORDER_TOPIC',
        tagExpression: 'FINISHED',
        eventBus: bus,
        dlq: couponsDlq,
      },
    ],
  });
  return { template: Template.fromStack(stack), stack, unrelated };
}

describe('RocketMQBridgeService', () => {
  const { template } = synth();

  it('lets the task send only to its routes’ queues and DLQs and put events only on its bus', () => {
    const policies = template.findResources('AWS::IAM::Policy', {
      Properties: { PolicyName: Match.stringLikeRegexp('TaskTaskRole') },
    });
    const statements = Object.values(policies).flatMap(
      (p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
    );
    const actions = statements.flatMap((s) => [s.Action].flat());
    expect(new Set(actions)).toEqual(new Set(['sqs:SendMessage', 'events:PutEvents']));
    const sqsResources = statements.find((s) => s.Action === 'sqs:SendMessage')!.Resource as {
      'Fn::GetAtt': [string, string];
    }[];
    const logicalIds = sqsResources.map((r) => r['Fn::GetAtt'][0].replace(/[0-9A-F]{8}$/, ''));
    expect(logicalIds.sort()).toEqual(['Audit', 'AuditDlq', 'CouponsDlq', 'Points', 'PointsDlq']);
    expect(JSON.stringify(sqsResources)).not.toContain('Unrelated');
  });

  it('passes a configuration the bridge accepts, with health check and drain time', () => {
    const [taskDef] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
    const container = taskDef!.Properties.ContainerDefinitions[0];
    const raw = container.Environment.find((e: { Name: string }) => e.Name === 'BRIDGE_CONFIG').Value;
    // Queue URLs are CloudFormation references; stand-ins keep the FIFO suffix rule checkable.
    const rendered =
      typeof raw === 'string'
        ? raw
        : (raw['Fn::Join'][1] as unknown[])
            .map((part) => {
              if (typeof part === 'string') return part;
              const ref = JSON.stringify(part);
              return ref.includes('Audit') ? 'https://sqs/audit.fifo' : ref.includes('Bus') ? 'bus' : 'https://sqs/q';
            })
            .join('');
    const config = parseBridgeConfig(JSON.parse(rendered));
    expect(config).toMatchObject({
      proxyEndpoint: 'rocketmq-proxy.internal:8081',
      clusterName: 'prod',
      invisibleDurationMs: 60_000,
      health: { host: '127.0.0.1', port: 8080 },
    });
    expect(config.routes.map((r) => [r.group, r.tagExpression, r.fifo, r.target.kind])).toEqual([
      ['point-consumer-group', 'PAID', false, 'sqs'],
      ['audit-fifo-group', '*', true, 'sqs'],
      ['coupon-consumer-group', 'FINISHED', false, 'eventbridge'],
    ]);
    expect(container.HealthCheck.Command.join(' ')).toContain('/health/ready');
    expect(container.StopTimeout).toBe(60);
    expect(container.ReadonlyRootFilesystem).toBe(true);
    template.hasResourceProperties('AWS::ECS::Service', {
      LaunchType: 'FARGATE',
      DesiredCount: 1,
      NetworkConfiguration: { AwsvpcConfiguration: { AssignPublicIp: 'DISABLED' } },
    });
  });

  it('refuses a route with neither or both of queue and event bus', () => {
    const stack = new Stack();
    const dlq = new sqs.Queue(stack, 'Dlq');
    expect(
      () =>
        new RocketMQBridgeService(stack, 'B', {
          image: ecs.ContainerImage.fromRegistry('x'),
          proxyEndpoint: 'p:8081',
          routes: [{ group: 'g', topic: 't', dlq }],
        }),
    ).toThrow(/exactly one of queue or eventBus/);
  });
});
