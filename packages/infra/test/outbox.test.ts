import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  consumerGroup,
  DLQ_RETENTION_DAYS,
  OUTBOX_ENV,
  outboundQueueName,
  outboxDeadLetterQueueName,
  outboxTableName,
  queueName,
  STREAM_RETENTION_SECONDS,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { RocketMQConsumersStack, type RocketMQConsumersStackProps } from '../src/consumer-stack.ts';
import { stageSchema } from '../src/deployment-settings.ts';
import { RELAY_LAG_ALARM_SECONDS } from '../src/group-outbox.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

/**
 * Issue #36, the CDK side of the outbox: every group whose catalogue entry `publishes` gets its outbox table
 * (stream NEW_IMAGE, TTL, the stage's data key), a relay fed by the stream with the settings docs/outbox.md
 * states, the relay's DLQ, three alarms on the DingTalk route, least-privilege IAM; a group that publishes
 * nothing gets none of it. Lambda bundling is off in this lane (vitest.config.ts): nothing here reads code.
 */
const prefix = 'unit';
const POINTS = consumerGroup('point-consumer-group');
/** A group subscribed to what the points group publishes (the notification group's shape, for this test only). */
const LISTENER = {
  group: 'points-listener-group',
  strategy: 'transactional',
  functionName: 'points-listener',
  topic: 'POINTS_TOPIC',
  tagExpression: 'POINTS_AWARDED',
  entry: 'packages/consumers/functions/points-consumer/handler.ts',
  tables: ['idempotency'],
} as const satisfies ConsumerGroupDefinition;
/** Subscribed to the topic with another tag: gets nothing from the relay. */
const OTHER_TAG = { ...LISTENER, group: 'points-other-tag-group', functionName: 'points-other', tagExpression: 'X' };

const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const BRIDGE = stageSchema.parse({
  ...cdkJson.context.rocketmq.stages.test,
  bridge: {
    enabled: true,
    protocol: 'rocketmq5',
    endpoints: 'proxy1.mq.internal:8081',
    clusterName: 'trade-cluster',
    vpcId: 'vpc-0a1b2c3d4e5f60718',
    subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
    securityGroupIds: [],
  },
}).bridge;

function synth(props: Partial<RocketMQConsumersStackProps> = {}): Template {
  const stack = new RocketMQConsumersStack(new App(), 'Consumers', {
    prefix,
    runbookUrl: 'https://example.com/runbook.md',
    env: { account: '123456789012', region: 'ap-northeast-1' },
    operatorRoleArns: ['arn:aws:iam::123456789012:role/operator'],
    services: {
      'coupon-service': { url: 'https://coupons.example.com', auth: { kind: 'bearer', secretName: 'unit/token' } },
      'notification-service': {
        url: 'https://notifications.example.com',
        auth: { kind: 'bearer', secretName: 'unit/notification-token' },
      },
    },
    ...props,
  });
  return Template.fromStack(stack);
}

type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (resources: Resources, type: string, where: (p: Record<string, any>) => boolean): string => {
  const ids = Object.entries(resources)
    .filter(([, r]) => r.Type === type && where(r.Properties ?? {}))
    .map(([id]) => id);
  expect(ids, type).toHaveLength(1);
  return ids[0]!;
};
const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

/** Every (action, resource) a function's role is allowed, as `action resource-json` (merged statements split). */
function grantsOf(resources: Resources, functionId: string): string[] {
  const roleId = resources[functionId]!.Properties.Role['Fn::GetAtt'][0];
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: any) => role.Ref === roleId))
    .flatMap((r) => r.Properties.PolicyDocument.Statement)
    .flatMap((s: any) =>
      [s.Action]
        .flat()
        .flatMap((a: string) => [s.Resource].flat().map((res: unknown) => `${a} ${JSON.stringify(res)}`)),
    )
    .sort();
}
const grant = (action: string, resource: unknown) => `${action} ${JSON.stringify(resource)}`;

describe('a publishing group (points, POINTS_AWARDED to sqs) with a subscriber in the stack', () => {
  let resources: Resources;
  let template: Template;
  let tableId: string;
  let relayId: string;
  let dlqId: string;
  beforeAll(() => {
    // The listener is the one subscriber here: the catalogue's own (the notification group) is left out.
    template = synth({
      groups: [...CONSUMER_GROUPS.filter((g) => g.topic !== LISTENER.topic), LISTENER, OTHER_TAG],
    });
    resources = template.toJSON().Resources;
    tableId = idOf(resources, 'AWS::DynamoDB::Table', (p) => p.TableName === outboxTableName(prefix, POINTS.group));
    relayId = idOf(
      resources,
      'AWS::Lambda::Function',
      (p) => p.FunctionName === `${prefix}-points-consumer-outbox-relay`,
    );
    dlqId = idOf(resources, 'AWS::SQS::Queue', (p) => p.QueueName === outboxDeadLetterQueueName(prefix, POINTS.group));
  });

  it('gets an outbox table keyed by eventId, with its TTL, a NEW_IMAGE stream, the data key, PITR, retained', () => {
    const table = resources[tableId]! as any;
    expect(table.Properties.KeySchema).toEqual([{ AttributeName: 'eventId', KeyType: 'HASH' }]);
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    expect(table.Properties.StreamSpecification).toEqual({ StreamViewType: 'NEW_IMAGE' });
    const dataKey = idOf(resources, 'AWS::KMS::Key', (p) => p.Description?.endsWith('tables and function log groups'));
    expect(table.Properties.SSESpecification).toEqual({
      SSEEnabled: true,
      SSEType: 'KMS',
      KMSMasterKeyId: getAtt(dataKey),
    });
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
  });

  it('gives the consumer OUTBOX_TABLE and PutItem on that table, and nothing else on it', () => {
    const consumerId = idOf(resources, 'AWS::Lambda::Function', (p) => p.FunctionName === `${prefix}-points-consumer`);
    expect(resources[consumerId]!.Properties.Environment.Variables[OUTBOX_ENV.table]).toEqual({ Ref: tableId });
    const onTable = grantsOf(resources, consumerId).filter((g) => g.includes(tableId));
    expect(onTable).toEqual([grant('dynamodb:PutItem', getAtt(tableId))]);
  });

  it('runs the relay on nodejs24.x with its group, table, targets (the subscribers of its tag only), DLQ and signing key', () => {
    const fn = resources[relayId]!.Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    const env = fn.Environment.Variables;
    expect(env.CONSUMER_GROUP).toBe(POINTS.group);
    expect(env[OUTBOX_ENV.table]).toEqual({ Ref: tableId });
    expect(env[OUTBOX_ENV.deadLetterQueueUrl]).toEqual({ Ref: dlqId });
    const signingKey = idOf(
      resources,
      'AWS::SecretsManager::Secret',
      (p) => p.Name === `${prefix}/envelope-signing-key`,
    );
    expect(env.ENVELOPE_SIGNING_SECRET).toEqual({ Ref: signingKey });
    const listenerQueue = idOf(resources, 'AWS::SQS::Queue', (p) => p.QueueName === queueName(prefix, LISTENER.group));
    // Rendered as Fn::Join; its pieces name the listener's queue and nobody else's.
    const targets = JSON.stringify(env[OUTBOX_ENV.targets]);
    expect(targets).toContain(
      '\\"POINTS_TOPIC\\":{\\"kind\\":\\"sqs\\",\\"queues\\":[{\\"group\\":\\"points-listener-group\\"',
    );
    expect(targets).toContain(`{"Ref":"${listenerQueue}"}`);
    expect(targets).toContain('\\"tagExpression\\":\\"POINTS_AWARDED\\"');
    expect(targets).not.toContain(OTHER_TAG.group);
  });

  it('may read its stream, update its items, send to the subscriber queue and its DLQ, read the key: nothing wider', () => {
    const listenerQueue = idOf(resources, 'AWS::SQS::Queue', (p) => p.QueueName === queueName(prefix, LISTENER.group));
    const own = grantsOf(resources, relayId).filter((g) => !/^(logs|kms|secretsmanager):/.test(g));
    const stream = getAtt(tableId, 'StreamArn');
    expect(own).toEqual(
      [
        grant('dynamodb:DescribeStream', stream),
        grant('dynamodb:GetRecords', stream),
        grant('dynamodb:GetShardIterator', stream),
        grant('dynamodb:ListStreams', stream),
        grant('dynamodb:UpdateItem', getAtt(tableId)),
        grant('sqs:SendMessage', getAtt(dlqId)),
        grant('sqs:SendMessage', getAtt(listenerQueue)),
      ].sort(),
    );
    // The rest: its log group, the data key through DynamoDB, the signing key (read, list versions).
    const rest = grantsOf(resources, relayId).filter((g) => /^(kms|secretsmanager):/.test(g));
    expect(rest.map((g) => g.split(' ')[0])).toEqual(
      [
        'kms:Decrypt',
        'kms:DescribeKey',
        'kms:Encrypt',
        'kms:GenerateDataKey',
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
        'secretsmanager:ListSecretVersionIds',
      ].sort(),
    );
    expect(grantsOf(resources, relayId).join('\n')).not.toMatch(/"\*"/);
  });

  it('is admitted by the subscriber queue policy as a sender, and by no other group queue', () => {
    const relayRole = resources[relayId]!.Properties.Role['Fn::GetAtt'][0];
    const admitting = Object.values(resources)
      .filter((r) => r.Type === 'AWS::SQS::QueuePolicy' && JSON.stringify(r.Properties).includes(relayRole))
      .map((r) => JSON.stringify(r.Properties.Queues));
    const listenerQueue = idOf(resources, 'AWS::SQS::Queue', (p) => p.QueueName === queueName(prefix, LISTENER.group));
    // The listener's source queue (a sender) and the relay's own DLQ (a sender, no receiver).
    expect(admitting.sort()).toEqual(
      [JSON.stringify([{ Ref: dlqId }]), JSON.stringify([{ Ref: listenerQueue }])].sort(),
    );
  });

  it('reads the stream from TRIM_HORIZON, PENDING INSERT/MODIFY only, one batch per shard, bisecting, partial failures, bounded, to its DLQ', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: relayId },
      EventSourceArn: getAtt(tableId, 'StreamArn'),
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      ParallelizationFactor: 1,
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 10_000,
      MaximumRecordAgeInSeconds: STREAM_RETENTION_SECONDS - 3_600,
      DestinationConfig: { OnFailure: { Destination: getAtt(dlqId) } },
      FilterCriteria: {
        Filters: [
          {
            Pattern: JSON.stringify({
              eventName: ['INSERT', 'MODIFY'],
              dynamodb: { NewImage: { status: { S: ['PENDING'] } } },
            }),
          },
        ],
      },
    });
    expect(resources[dlqId]!.Properties.MessageRetentionPeriod).toBe(DLQ_RETENTION_DAYS * 86_400);
    expect(resources[dlqId]!.Properties.SqsManagedSseEnabled).toBe(true);
  });

  it('alarms on relay lag, its DLQ and its errors, to the alarm topic for ALARM and OK', () => {
    const topic = idOf(resources, 'AWS::SNS::Topic', () => true);
    const alarm = (suffix: string) =>
      resources[
        idOf(resources, 'AWS::CloudWatch::Alarm', (p) => p.AlarmName === `${prefix}-outbox-${POINTS.group}-${suffix}`)
      ]!.Properties;
    const lag = alarm('relay-lag');
    expect(lag).toMatchObject({ MetricName: 'IteratorAge', Namespace: 'AWS/Lambda', Statistic: 'Maximum' });
    expect(lag.Dimensions).toEqual([{ Name: 'FunctionName', Value: { Ref: relayId } }]);
    expect(lag.Threshold).toBe(RELAY_LAG_ALARM_SECONDS * 1000);
    expect(RELAY_LAG_ALARM_SECONDS).toBe(240);
    const dlq = alarm('dead-letters');
    expect(dlq).toMatchObject({ MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 1 });
    expect(dlq.Dimensions).toEqual([{ Name: 'QueueName', Value: getAtt(dlqId, 'QueueName') }]);
    const errors = alarm('relay-errors');
    expect(errors).toMatchObject({ MetricName: 'Errors', Threshold: 1 });
    for (const a of [lag, dlq, errors]) {
      expect(a.AlarmActions).toEqual([{ Ref: topic }]);
      expect(a.OKActions).toEqual([{ Ref: topic }]);
      expect(a.AlarmDescription).toContain('https://example.com/runbook.md#outbox-');
    }
    const dashboard = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    expect(dashboard).toContain(`${POINTS.group} outbox: relay lag`);
  });

  it('gives no other group an outbox, a relay or its alarms', () => {
    const outboxTables = Object.values(resources)
      .filter((r) => r.Type === 'AWS::DynamoDB::Table' && String(r.Properties.TableName).endsWith('-outbox'))
      .map((r) => r.Properties.TableName);
    expect(outboxTables).toEqual([outboxTableName(prefix, POINTS.group)]);
    expect(
      Object.values(resources).filter(
        (r) => r.Type === 'AWS::Lambda::EventSourceMapping' && r.Properties.StartingPosition,
      ),
    ).toHaveLength(1);
    const outboxAlarms = Object.values(resources)
      .filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && String(r.Properties.AlarmName).includes('-outbox-'))
      .map((r) => r.Properties.AlarmName);
    expect(outboxAlarms).toHaveLength(3);
    expect(outboxAlarms.every((n) => n.startsWith(`${prefix}-outbox-${POINTS.group}-`))).toBe(true);
    for (const group of [LISTENER.group, 'coupon-consumer-group']) {
      const fn = idOf(
        resources,
        'AWS::Lambda::Function',
        (p) => p.Environment?.Variables?.CONSUMER_GROUP === group && !p.Environment?.Variables?.[OUTBOX_ENV.targets],
      );
      expect(resources[fn]!.Properties.Environment.Variables[OUTBOX_ENV.table]).toBeUndefined();
    }
  });
});

describe('targets other than sqs', () => {
  const toBus = {
    ...POINTS,
    publishes: [{ topic: 'POINTS_TOPIC', tags: ['POINTS_AWARDED'], target: 'eventbridge' }],
  } as const;
  const toRocketMQ = {
    ...POINTS,
    publishes: [{ topic: 'POINTS_TOPIC', tags: ['POINTS_AWARDED'], target: 'rocketmq' }],
  } as const;

  it('eventbridge: the stage bus by name, PutEvents on it alone, and the bus admits the relay', () => {
    const resources: Resources = synth({ groups: [toBus] }).toJSON().Resources;
    const bus = idOf(resources, 'AWS::Events::EventBus', () => true);
    const relay = idOf(
      resources,
      'AWS::Lambda::Function',
      (p) => p.FunctionName === `${prefix}-points-consumer-outbox-relay`,
    );
    expect(JSON.stringify(resources[relay]!.Properties.Environment.Variables[OUTBOX_ENV.targets])).toContain(
      '{\\"POINTS_TOPIC\\":{\\"kind\\":\\"eventbridge\\",\\"eventBusName\\":\\"',
    );
    const sends = grantsOf(resources, relay).filter((g) => /^(events|sqs):/.test(g));
    const dlq = idOf(
      resources,
      'AWS::SQS::Queue',
      (p) => p.QueueName === outboxDeadLetterQueueName(prefix, POINTS.group),
    );
    expect(sends).toEqual([grant('events:PutEvents', getAtt(bus)), grant('sqs:SendMessage', getAtt(dlq))].sort());
    const busPolicy = JSON.stringify(
      resources[bus]!.Properties.Policy ??
        Object.values(resources).filter((r) => r.Type === 'AWS::Events::EventBusPolicy'),
    );
    expect(busPolicy).toContain(resources[relay]!.Properties.Role['Fn::GetAtt'][0]);
  });

  it('rocketmq without a bridge: refused at synth, naming the group and the missing bridge', () => {
    expect(() => synth({ groups: [toRocketMQ] })).toThrow(
      /consumer group point-consumer-group publishes POINTS_TOPIC to target 'rocketmq', but this stage has no bridge \(bridge.enabled\)/,
    );
  });

  it('rocketmq with the bridge: the outbound queue and its DLQ, the relay sends there alone, the bridge receives', () => {
    const resources: Resources = synth({ groups: [toRocketMQ], bridge: BRIDGE }).toJSON().Resources;
    const outbound = idOf(resources, 'AWS::SQS::Queue', (p) => p.QueueName === outboundQueueName(prefix));
    const outboundDlq = idOf(resources, 'AWS::SQS::Queue', (p) => p.QueueName === `${outboundQueueName(prefix)}-dlq`);
    expect(resources[outbound]!.Properties.RedrivePolicy).toEqual({
      deadLetterTargetArn: getAtt(outboundDlq),
      maxReceiveCount: 1000,
    });
    expect(resources[outbound]!.Properties.SqsManagedSseEnabled).toBe(true);
    const relay = idOf(
      resources,
      'AWS::Lambda::Function',
      (p) => p.FunctionName === `${prefix}-points-consumer-outbox-relay`,
    );
    expect(JSON.stringify(resources[relay]!.Properties.Environment.Variables[OUTBOX_ENV.targets])).toContain(
      `\\"kind\\":\\"rocketmq\\",\\"queueUrl\\":\\"",{"Ref":"${outbound}"}`,
    );
    const dlq = idOf(
      resources,
      'AWS::SQS::Queue',
      (p) => p.QueueName === outboxDeadLetterQueueName(prefix, POINTS.group),
    );
    expect(grantsOf(resources, relay).filter((g) => /^(events|sqs):/.test(g))).toEqual(
      [grant('sqs:SendMessage', getAtt(dlq)), grant('sqs:SendMessage', getAtt(outbound))].sort(),
    );
    // The bridge's outbound route reads the queue and dead-letters into its DLQ (packages/bridge outboundSchema).
    const task = Object.values(resources).find((r) => r.Type === 'AWS::ECS::TaskDefinition')!;
    const config = JSON.stringify(task.Properties.ContainerDefinitions[0].Environment);
    expect(config).toContain(`\\"outbound\\":{\\"queueUrl\\":\\"",{"Ref":"${outbound}"}`);
    expect(config).toContain(`\\"dlqUrl\\":\\"",{"Ref":"${outboundDlq}"}`);
    const bridgeGrants = Object.values(resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes('BridgeServiceTaskRole'),
      )
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      .filter((st: any) => JSON.stringify(st.Resource).includes(outbound));
    expect(bridgeGrants.flatMap((st: any) => [st.Action].flat()).sort()).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
    ]);
  });

  it('no publishing group: no outbound queue even with the bridge', () => {
    const resources: Resources = synth({ groups: [consumerGroup('coupon-consumer-group')], bridge: BRIDGE }).toJSON()
      .Resources;
    expect(
      Object.values(resources).some(
        (r) => r.Type === 'AWS::SQS::Queue' && r.Properties.QueueName === outboundQueueName(prefix),
      ),
    ).toBe(false);
    expect(
      Object.values(resources).some(
        (r) => r.Type === 'AWS::DynamoDB::Table' && String(r.Properties.TableName).endsWith('-outbox'),
      ),
    ).toBe(false);
  });
});
