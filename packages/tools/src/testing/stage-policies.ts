import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildApp, REPOSITORY_ROOT } from '@rocketmq-lambda/infra/index.ts';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { expect, it } from 'vitest';
import type { PolicyRequest, PolicyStatement } from './resource-policy.ts';

/**
 * The synthesized consumers' stacks the policy tests judge: the committed test and prod stages
 * (cdk.json, no bridge) and the test stage with everything on that widens who is named in a policy:
 * the bridge (RocketMQ 4.x with ACL credentials, taking a legacy group over), tracing, external
 * senders, operators and a break-glass revoker. Resources and roles are named as
 * `arn:test:<logical id>` in requests; pseudo parameters as deployed.
 */
export const BASE_SETTINGS = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8')).context.rocketmq;
export const BRIDGED_ACCOUNT = BASE_SETTINGS.stages.test.account as string;
export const EXTERNAL_BRIDGE = `arn:aws:iam::${BRIDGED_ACCOUNT}:role/rmq-test-bridge-elsewhere`;
export const OPERATORS = `arn:aws:iam::${BRIDGED_ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_RmqOperator_*`;
export const OPERATOR_SESSION_ROLE = `arn:aws:iam::${BRIDGED_ACCOUNT}:role/aws-reserved/sso.amazonaws.com/ap-northeast-1/AWSReservedSSO_RmqOperator_0a1b2c3d`;
export const REVOKER = `arn:aws:iam::${BRIDGED_ACCOUNT}:role/rmq-test-signing-key-revoker`;
export const ACL_SECRET = 'rmq-test/rocketmq-acl';

/** A bridge as a cutover stage runs it: RocketMQ 4.x, ACL on, the points route taking the legacy group over. */
export const TAKEOVER_BRIDGE = {
  enabled: true,
  protocol: 'rocketmq4',
  endpoints: 'ns1.mq.internal:9876',
  tls: false,
  credentialsSecretName: ACL_SECRET,
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
  routes: { 'point-consumer-group': { rocketmqGroup: 'POINT_CONSUMER_GROUP', takeOver: {} } },
};

export const FULL_STAGE = {
  bridge: TAKEOVER_BRIDGE,
  tracing: 'xray',
  senderRoleArns: [EXTERNAL_BRIDGE],
  operatorRoleArns: [OPERATORS],
  keyRevokerRoleArns: [REVOKER],
};

export interface Stage {
  readonly name: string;
  readonly template: Template;
  readonly account: string;
  readonly region: string;
  readonly prefix: string;
  readonly senders: readonly string[];
  readonly operators: readonly string[];
  readonly revokers: readonly string[];
}

/** The app with the test stage's settings overridden. */
export function synthApp(overrides: Record<string, unknown> = {}) {
  const context = {
    rocketmq: {
      ...BASE_SETTINGS,
      stages: { ...BASE_SETTINGS.stages, test: { ...BASE_SETTINGS.stages.test, ...overrides } },
    },
  };
  return buildApp(new App({ context })).pipeline;
}

/** The committed test and prod stages, then the test stage with everything on. */
export function synthStages(): Stage[] {
  const committed = synthApp();
  const stages: Stage[] = (['test', 'prod'] as const).map((name) => {
    const settings = BASE_SETTINGS.stages[name];
    return {
      name: `committed ${name}`,
      template: Template.fromStack(committed[name].consumers),
      account: settings.account,
      region: settings.region,
      prefix: settings.prefix,
      senders: [],
      operators: [],
      revokers: settings.keyRevokerRoleArns ?? [],
    };
  });
  const full = synthApp(FULL_STAGE);
  stages.push({
    name: 'test with the bridge taking over, tracing, senders, operators and a revoker',
    template: Template.fromStack(full.test.consumers),
    account: BRIDGED_ACCOUNT,
    region: BASE_SETTINGS.stages.test.region,
    prefix: BASE_SETTINGS.stages.test.prefix,
    senders: FULL_STAGE.senderRoleArns,
    operators: FULL_STAGE.operatorRoleArns,
    revokers: FULL_STAGE.keyRevokerRoleArns,
  });
  return stages;
}

/** A test run on each of `stages` once they are synthesized (the array is filled by a `beforeAll`). */
export function eachStageOf(stages: readonly Stage[]) {
  return (title: string, body: (stage: Stage) => void) =>
    it.each([0, 1, 2])(`${title} (stage %#: committed test, committed prod, test with everything on)`, (i) =>
      body(stages[i]!),
    );
}

/** Template values as a request names them: resources and roles as `arn:test:<logical id>`, pseudo parameters as deployed. */
export function resolver(stage: Stage) {
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (typeof value !== 'object' || value === null) return value;
    const record = value as Record<string, unknown>;
    if ('Fn::GetAtt' in record) return `arn:test:${(record['Fn::GetAtt'] as string[])[0]}`;
    if ('Ref' in record) {
      const pseudo: Record<string, string> = {
        'AWS::Partition': 'aws',
        'AWS::AccountId': stage.account,
        'AWS::Region': stage.region,
      };
      return pseudo[record.Ref as string] ?? `arn:test:${record.Ref as string}`;
    }
    if ('Fn::Join' in record) {
      const [separator, parts] = record['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => String(resolve(p))).join(separator);
    }
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, resolve(v)]));
  };
  return resolve;
}

export const only = <T>(values: T[], what: string): T => {
  expect(values, what).toHaveLength(1);
  return values[0]!;
};

export function logicalIdOf(stage: Stage, type: string, props: Record<string, unknown>): string {
  return only(
    Object.keys(stage.template.findResources(type, { Properties: props })),
    `${type} ${JSON.stringify(props)}`,
  );
}

/** A request by an IAM role of the stage's account (or a role ARN given in full). */
export function asRole(stage: Stage, role: string, action: string, resource = '*', extra: Record<string, string> = {}) {
  const arn = role.startsWith('arn:') ? role : `arn:aws:iam::${stage.account}:role/${role}`;
  return {
    principal: arn,
    action,
    resource,
    context: { 'aws:PrincipalArn': arn, 'aws:PrincipalIsAWSService': 'false', ...extra },
  } satisfies PolicyRequest;
}

/**
 * A consumer group's own function: it names its group (CONSUMER_GROUP). A publishing group's outbox relay names
 * the group too, and is told apart by its OUTBOX_TARGETS.
 */
export function isConsumerFunction(f: { [key: string]: unknown }): boolean {
  const properties = f.Properties as { Environment?: { Variables?: Record<string, unknown> } } | undefined;
  const variables = properties?.Environment?.Variables;
  return variables?.CONSUMER_GROUP !== undefined && variables.OUTBOX_TARGETS === undefined;
}

/** Each consumer group's function role, by group. */
export function consumerRoles(stage: Stage): Record<string, string> {
  const functions = stage.template.findResources('AWS::Lambda::Function');
  return Object.fromEntries(
    Object.values(functions)
      .filter(isConsumerFunction)
      .map((f) => [
        f.Properties.Environment.Variables.CONSUMER_GROUP,
        `arn:test:${f.Properties.Role['Fn::GetAtt'][0]}`,
      ]),
  );
}

export function notifierRole(stage: Stage): string {
  const notifier = only(
    Object.values(
      stage.template.findResources('AWS::Lambda::Function', {
        Properties: { FunctionName: `${stage.prefix}-alarm-notifier` },
      }),
    ),
    'notifier',
  );
  return `arn:test:${notifier.Properties.Role['Fn::GetAtt'][0]}`;
}

function bridgeTask(stage: Stage) {
  return Object.values(stage.template.findResources('AWS::ECS::TaskDefinition'))[0];
}

export function bridgeRole(stage: Stage): string | undefined {
  const task = bridgeTask(stage);
  return task ? `arn:test:${task.Properties.TaskRoleArn['Fn::GetAtt'][0]}` : undefined;
}

export function bridgeExecutionRole(stage: Stage): string | undefined {
  const task = bridgeTask(stage);
  return task ? `arn:test:${task.Properties.ExecutionRoleArn['Fn::GetAtt'][0]}` : undefined;
}

export function cloudFormationRole(stage: Stage): string {
  return `arn:aws:iam::${stage.account}:role/cdk-hnb659fds-cfn-exec-role-${stage.account}-${stage.region}`;
}

export function rootOf(stage: Stage): string {
  return `arn:aws:iam::${stage.account}:root`;
}

/**
 * A secret's resource policy and its key's policy, resolved; the secret by name, whether the stack
 * created it or names one that exists (its policy then points at the name's ARN).
 */
export function secretPolicies(stage: Stage, secretName: string) {
  const resolve = resolver(stage);
  const created = Object.entries(stage.template.findResources('AWS::SecretsManager::Secret')).find(
    ([, s]) => s.Properties.Name === secretName,
  );
  const policy = only(
    Object.values(stage.template.findResources('AWS::SecretsManager::ResourcePolicy')).filter((p) => {
      const id = p.Properties.SecretId;
      return created ? id.Ref === created[0] : String(resolve(id)).endsWith(`:secret:${secretName}`);
    }),
    `resource policy of ${secretName}`,
  );
  const alias = only(
    Object.values(
      stage.template.findResources('AWS::KMS::Alias', {
        Properties: { AliasName: `alias/${secretName.replace(/[^\w/-]/g, '-')}` },
      }),
    ),
    `key alias of ${secretName}`,
  );
  const key = stage.template.findResources('AWS::KMS::Key')[alias.Properties.TargetKeyId['Fn::GetAtt'][0]]!;
  return {
    secret: created?.[1],
    key,
    secretStatements: resolve(policy.Properties.ResourcePolicy.Statement) as PolicyStatement[],
    keyStatements: resolve(key.Properties.KeyPolicy.Statement) as PolicyStatement[],
  };
}

/** The statements of every policy of one queue (by its name), resolved, and the queue's ARN as requests name it. */
export function queuePolicy(stage: Stage, queueName: string) {
  const resolve = resolver(stage);
  const id = logicalIdOf(stage, 'AWS::SQS::Queue', { QueueName: queueName });
  const statements = Object.values(stage.template.findResources('AWS::SQS::QueuePolicy'))
    .filter((p) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: id }]))
    .flatMap((p) => resolve(p.Properties.PolicyDocument.Statement) as PolicyStatement[]);
  return { id, arn: `arn:test:${id}`, statements };
}
