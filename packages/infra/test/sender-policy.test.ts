import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONSUMER_GROUPS, orderingOf, queueName } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  allowingStatements,
  denyingStatements,
  type PolicyRequest,
  type PolicyStatement,
  UnknownConditionOperatorError,
} from '@rocketmq-lambda/tools/testing/resource-policy.ts';
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

const base = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8')).context.rocketmq;
const ACCOUNT = base.stages.test.account as string;
const OPERATOR = `arn:aws:iam::${ACCOUNT}:role/rmq-operators`;
const SSO_ROLES = `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_RedriveOperator_*`;
const BRIDGE = {
  enabled: true,
  endpoints: 'proxy1.mq.internal:8081',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
};

function synth(stage: Record<string, unknown>) {
  const context = { rocketmq: { ...base, stages: { ...base.stages, test: { ...base.stages.test, ...stage } } } };
  const built = buildApp(new App({ context }));
  return built.pipeline.test.consumers;
}

/** Tokens as ARNs a request can name: `{Fn::GetAtt: [id, Arn]}` → `arn:test:id`. */
function resolve(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(resolve);
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  if ('Fn::GetAtt' in record) return `arn:test:${(record['Fn::GetAtt'] as string[])[0]}`;
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, resolve(v)]));
}

function logicalId(template: Template, type: string, props: Record<string, unknown>): string {
  const found = Object.keys(template.findResources(type, { Properties: props }));
  expect(found, `${type} ${JSON.stringify(props)}`).toHaveLength(1);
  return found[0]!;
}

function queuePolicy(template: Template, queueId: string): PolicyStatement[] {
  const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy')).filter(
    (p) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: queueId }]),
  );
  expect(policies).toHaveLength(1);
  return resolve(policies[0]!.Properties.PolicyDocument.Statement) as PolicyStatement[];
}

const role = (arn: string, action: string, resource: string): PolicyRequest => ({
  principal: arn,
  action,
  resource,
  context: { 'aws:PrincipalArn': arn, 'aws:PrincipalIsAWSService': 'false', 'aws:SecureTransport': 'true' },
});
const service = (name: string, sourceArn: string, resource: string): PolicyRequest => ({
  principal: name,
  action: 'sqs:SendMessage',
  resource,
  context: { 'aws:PrincipalIsAWSService': 'true', 'aws:SourceArn': sourceArn, 'aws:SecureTransport': 'true' },
});

describe('only the bridge (and the roles a stage lists) can put a message where a consumer acts on it', () => {
  let template: Template;
  let bridgeRole: string;
  beforeAll(() => {
    template = Template.fromStack(synth({ bridge: BRIDGE, senderRoleArns: [OPERATOR, SSO_ROLES] }));
    const [task] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
    bridgeRole = `arn:test:${task!.Properties.TaskRoleArn['Fn::GetAtt'][0]}`;
  });

  it.each(CONSUMER_GROUPS.map((g) => [g.group]))(
    '%s: another principal of the account is refused; the bridge, the listed roles and the own rule are not',
    (group) => {
      const queueId = logicalId(template, 'AWS::SQS::Queue', {
        QueueName: queueName(base.stages.test.prefix, group, orderingOf(group)),
      });
      const statements = queuePolicy(template, queueId);
      const queueArn = `arn:test:${queueId}`;
      const send = (arn: string) => denyingStatements(statements, role(arn, 'sqs:SendMessage', queueArn));

      expect(send(`arn:aws:iam::${ACCOUNT}:role/Admin`)).toEqual(['OnlyTheBridgeSends']);
      expect(send(`arn:aws:iam::999999999999:role/elsewhere`)).toEqual(['OnlyTheBridgeSends']);
      expect(send(bridgeRole)).toEqual([]);
      expect(send(OPERATOR)).toEqual([]);
      expect(
        send(
          `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/ap-northeast-1/AWSReservedSSO_RedriveOperator_0123abcd`,
        ),
      ).toEqual([]);
      // A sender is not a receiver: receiving is the group's own consumer's and the operators' alone
      // (packages/infra/test/store-policies.test.ts holds who may).
      expect(
        denyingStatements(statements, role(`arn:aws:iam::${ACCOUNT}:role/Admin`, 'sqs:ReceiveMessage', queueArn)),
      ).toEqual(['OnlyItsConsumersReceive']);

      const rules = Object.keys(
        template.findResources('AWS::Events::Rule', {
          Properties: { Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [queueId, 'Arn'] } })] },
        }),
      );
      const otherRule = 'arn:aws:events:ap-northeast-1:222222222222:rule/rmq-test-rocketmq/someone-elses-rule';
      expect(denyingStatements(statements, service('events.amazonaws.com', otherRule, queueArn))).toEqual([
        'OnlyTheOwnRuleDelivers',
      ]);
      expect(
        denyingStatements(
          statements,
          service('sns.amazonaws.com', 'arn:aws:sns:ap-northeast-1:222222222222:any-topic', queueArn),
        ),
      ).toEqual(['OnlyTheOwnRuleDelivers']);
      if (orderingOf(group) === 'orderly') {
        // EventBridge does not keep order: no rule feeds an orderly group.
        expect(rules).toEqual([]);
      } else {
        expect(rules).toHaveLength(1);
        const own = service('events.amazonaws.com', `arn:test:${rules[0]}`, queueArn);
        expect(denyingStatements(statements, own)).toEqual([]);
        expect(allowingStatements(statements, own)).toHaveLength(1);
      }
    },
  );

  it('the bus takes events only from the bridge and the listed roles; the rules match only what a bridge puts there', () => {
    const busId = logicalId(template, 'AWS::Events::EventBus', { Name: `${base.stages.test.prefix}-rocketmq` });
    const policies = Object.values(
      template.findResources('AWS::Events::EventBusPolicy', { Properties: { EventBusName: { Ref: busId } } }),
    );
    // One policy per statement: who may put events, and who may change the bus's rules (the deployment alone).
    const statements = policies.map((p) => resolve(p.Properties.Statement)) as PolicyStatement[];
    expect(statements.map((s) => s.Sid)).toContain('cdk-OnlyTheBridgePutsEvents');
    const put = (arn: string) => denyingStatements(statements, role(arn, 'events:PutEvents', `arn:test:${busId}`));
    // CDK prefixes an event bus statement's id with `cdk-`.
    expect(put(`arn:aws:iam::${ACCOUNT}:role/Admin`)).toEqual(['cdk-OnlyTheBridgePutsEvents']);
    expect(put(bridgeRole)).toEqual([]);
    expect(put(OPERATOR)).toEqual([]);
    for (const rule of Object.values(
      template.findResources('AWS::Events::Rule', { Properties: { EventBusName: { Ref: busId } } }),
    )) {
      expect(rule.Properties.EventPattern.source).toEqual([{ prefix: 'rocketmq.' }]);
    }
  });

  it('with neither a bridge nor listed roles, every IAM principal is refused, and the synth says so', () => {
    const stack = synth({});
    const bare = Template.fromStack(stack);
    const queueId = logicalId(bare, 'AWS::SQS::Queue', {
      QueueName: queueName(base.stages.test.prefix, 'point-consumer-group'),
    });
    const statements = queuePolicy(bare, queueId);
    expect(
      denyingStatements(
        statements,
        role(`arn:aws:iam::${ACCOUNT}:role/Admin`, 'sqs:SendMessage', `arn:test:${queueId}`),
      ),
    ).toEqual(['OnlyTheBridgeSends']);
    Annotations.fromStack(stack).hasWarning(
      '*',
      Match.stringLikeRegexp('no bridge is enabled and senderRoleArns is empty'),
    );
  });

  it('refuses a sender that is not a role ARN, naming the setting', () => {
    expect(() => synth({ senderRoleArns: ['arn:aws:iam::222222222222:user/alice'] })).toThrow(
      'rocketmq.stages.test.senderRoleArns.0: an IAM role ARN',
    );
  });
});

describe('the policy evaluation the assertions above rely on', () => {
  const deny = (Condition: PolicyStatement['Condition']): PolicyStatement[] => [
    { Sid: 'D', Effect: 'Deny', Principal: '*', Action: 'sqs:SendMessage', Resource: 'arn:q', Condition },
  ];
  const request = (context: Record<string, string>): PolicyRequest => ({
    principal: 'arn:aws:iam::1:role/r',
    action: 'sqs:SendMessage',
    resource: 'arn:q',
    context,
  });

  it('follows IAM: a missing key matches negated and IfExists operators only', () => {
    expect(denyingStatements(deny({ ArnNotLike: { 'aws:PrincipalArn': ['arn:x'] } }), request({}))).toEqual(['D']);
    expect(denyingStatements(deny({ ArnLike: { 'aws:PrincipalArn': ['arn:x'] } }), request({}))).toEqual([]);
    expect(denyingStatements(deny({ BoolIfExists: { 'aws:PrincipalIsAWSService': 'false' } }), request({}))).toEqual([
      'D',
    ]);
    expect(denyingStatements(deny({ Bool: { 'aws:PrincipalIsAWSService': 'false' } }), request({}))).toEqual([]);
    expect(denyingStatements(deny({ StringNotEquals: { k: ['a', 'b'] } }), request({ k: 'b' }))).toEqual([]);
    expect(denyingStatements(deny({ StringNotEquals: { k: ['a', 'b'] } }), request({ k: 'c' }))).toEqual(['D']);
    expect(
      denyingStatements(
        deny({ ArnNotLike: { k: 'arn:aws:iam::1:role/p/*' } }),
        request({ k: 'arn:aws:iam::1:role/p/q' }),
      ),
    ).toEqual([]);
  });

  it('refuses to guess an operator it does not know', () => {
    expect(() => denyingStatements(deny({ NumericLessThan: { k: '1' } }), request({ k: '0' }))).toThrow(
      UnknownConditionOperatorError,
    );
  });
});
