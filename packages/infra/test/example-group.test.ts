import { CONSUMER_GROUPS, deadLetterQueueName, queueName } from '@rocketmq-lambda/runtime/config/index.ts';
import { consumer, REFUNDS } from '@rocketmq-lambda/tools/testing/example-group/handler.ts';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { RocketMQConsumersStack } from '../src/consumer-stack.ts';

/**
 * docs/adding-a-consumer-group.md, proven: a catalogue entry and its handler module, and the
 * CDK app builds everything a group has (queue, DLQ, function, filter, IAM, alarms, dashboard)
 * with no other edit.
 */
describe('adding a consumer group: the CDK app picks up a new catalogue entry with no other edit', () => {
  let template: Template;
  const prefix = 'unit';
  beforeAll(() => {
    const stack = new RocketMQConsumersStack(new App(), 'Consumers', {
      prefix,
      runbookUrl: 'https://example.com/runbook.md',
      groups: [...CONSUMER_GROUPS, REFUNDS],
      services: {
        'coupon-service': {
          url: 'https://coupons.example.com',
          auth: { kind: 'bearer', secretName: 'unit/coupon-service-token' },
        },
        'notification-service': {
          url: 'https://notifications.example.com',
          auth: { kind: 'bearer', secretName: 'unit/notification-service-token' },
        },
      },
    });
    template = Template.fromStack(stack);
  });

  it('declares its entry in its handler module', () => {
    expect(consumer.definition).toBe(REFUNDS);
  });

  it('gets a source queue that redrives to its own DLQ', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: queueName(prefix, REFUNDS.group),
      RedrivePolicy: { maxReceiveCount: 17, deadLetterTargetArn: Match.anyValue() },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { QueueName: deadLetterQueueName(prefix, REFUNDS.group) });
  });

  it('gets a function deployed for its group, fed by its queue with a filter on its tag, with its catalogue tuning', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ CONSUMER_GROUP: REFUNDS.group, ORDERS_TABLE: Match.anyValue() }) },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FilterCriteria: { Filters: Match.arrayWith([{ Pattern: '{"body":{"data":{"tags":["REFUNDED"]}}}' }]) },
      ScalingConfig: { MaximumConcurrency: 4 },
    });
  });

  it('may touch only the orders table', () => {
    const fn = Object.entries(template.findResources('AWS::Lambda::Function')).find(
      ([, f]) => f.Properties.Environment?.Variables?.CONSUMER_GROUP === REFUNDS.group,
    )!;
    const roleId = fn[1].Properties.Role['Fn::GetAtt'][0];
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId),
    );
    const dynamo = policies
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s: { Action: string | string[] }) => [s.Action].flat().some((a) => a.startsWith('dynamodb:')));
    const tables = JSON.stringify(dynamo.map((s: { Resource: unknown }) => s.Resource));
    expect(tables).toContain('Orders');
    expect(tables).not.toMatch(/Idempotency|PointLedger|PointAccounts/);
  });

  it('gets its seven alarms and a dashboard row', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    expect(alarms.filter((n) => n.startsWith(`${prefix}-${REFUNDS.group}-`)).sort()).toEqual(
      [
        'dead-letters',
        'filtered-out',
        'function-errors',
        'function-throttles',
        'oldest-message-age',
        'payload-conflicts',
        'permanent-errors',
      ].map((a) => `${prefix}-${REFUNDS.group}-${a}`),
    );
    const dashboard = JSON.stringify(
      Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]!.Properties.DashboardBody,
    );
    expect(dashboard).toContain(`### ${REFUNDS.group}`);
  });

  it('every group gets the alarms docs/adding-a-consumer-group.md counts: 7 with a tag filter, orderly or not', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    const countOf = (group: string) => alarms.filter((n) => n.startsWith(`${prefix}-${group}-`)).length;
    expect(Object.fromEntries([...CONSUMER_GROUPS, REFUNDS].map((g) => [g.group, countOf(g.group)]))).toEqual({
      'point-consumer-group': 7,
      'coupon-consumer-group': 7,
      'order-status-consumer-group': 7,
      'notification-consumer-group': 7,
      'refund-consumer-group': 7,
    });
  });

  it('a group that publishes gets 3 more, its outbox relay’s, named apart (docs/adding-a-consumer-group.md)', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    const outboxAlarms = (group: string) => alarms.filter((n) => n.startsWith(`${prefix}-outbox-${group}-`)).sort();
    expect(
      Object.fromEntries([...CONSUMER_GROUPS, REFUNDS].map((g) => [g.group, outboxAlarms(g.group).length])),
    ).toEqual({
      'point-consumer-group': 3,
      'coupon-consumer-group': 0,
      'order-status-consumer-group': 0,
      'notification-consumer-group': 0,
      'refund-consumer-group': 0,
    });
    expect(outboxAlarms('point-consumer-group')).toEqual(
      ['dead-letters', 'relay-errors', 'relay-lag'].map((a) => `${prefix}-outbox-point-consumer-group-${a}`),
    );
  });
});
