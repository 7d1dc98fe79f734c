import {
  ALARM_STORM_TABLE,
  CONSUMER_GROUPS,
  deadLetterQueueName,
  orderingOf,
  queueName,
  signingKeySecretName,
  TABLES,
  type TableKey,
  tableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import {
  denyingStatements,
  type PolicyRequest,
  type PolicyStatement,
} from '@rocketmq-lambda/tools/testing/resource-policy.ts';
import {
  ACL_SECRET,
  asRole,
  BASE_SETTINGS,
  bridgeExecutionRole,
  bridgeRole,
  cloudFormationRole,
  consumerRoles,
  eachStageOf,
  logicalIdOf,
  notifierRole,
  OPERATOR_SESSION_ROLE,
  only,
  queuePolicy,
  REVOKER,
  resolver,
  rootOf,
  type Stage,
  secretPolicies,
  synthApp,
  synthStages,
} from '@rocketmq-lambda/tools/testing/stage-policies.ts';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * Issue #37's policies (items 5, 6, 10, 11) on the committed stages and on the test stage with the
 * bridge taking a legacy group over, ACL credentials, tracing, senders, operators and a revoker
 * (packages/tools/src/testing/stage-policies.ts). The emulator enforces no resource policy, so each statement is
 * judged by IAM's documented rules (packages/tools/src/testing/resource-policy.ts).
 */
const stages: Stage[] = [];

beforeAll(() => {
  stages.push(...synthStages());
}, 600_000);

const eachStage = eachStageOf(stages);

/** Roles of the account no policy names: an administrator, a broad CI role. */
const OUTSIDERS = ['Admin', 'PowerUserAccess', 'ci-deployer'];

const operatorsOf = (stage: Stage) => (stage.operators.length > 0 ? [OPERATOR_SESSION_ROLE] : []);

function denied(statements: PolicyStatement[], request: PolicyRequest): boolean {
  return denyingStatements(statements, request).length > 0;
}

describe('item 5: the RocketMQ ACL key is read by the bridge’s execution role alone', () => {
  it('locks the secret named by credentialsSecretName as the owned secrets are: readers, keepers, the deployment', () => {
    const stage = stages[2]!;
    const { secretStatements, keyStatements } = secretPolicies(stage, ACL_SECRET);
    const execution = bridgeExecutionRole(stage)!;
    const via = { 'kms:ViaService': `secretsmanager.${stage.region}.amazonaws.com` };
    const read = (who: string) => asRole(stage, who, 'secretsmanager:GetSecretValue');
    expect(denyingStatements(secretStatements, read(execution))).toEqual([]);
    expect(denyingStatements(keyStatements, asRole(stage, execution, 'kms:Decrypt', '*', via))).toEqual([]);
    // The task role signs and forwards; the access key is the execution role's to inject, nobody else's.
    for (const other of [
      bridgeRole(stage)!,
      ...Object.values(consumerRoles(stage)),
      OPERATOR_SESSION_ROLE,
      ...OUTSIDERS,
      cloudFormationRole(stage),
    ])
      expect(denyingStatements(secretStatements, read(other)), other).toEqual(['OnlyItsReadersReadIt']);
    expect(denyingStatements(keyStatements, asRole(stage, 'Admin', 'kms:Decrypt', '*', via))).toEqual([
      'OnlyTheSecretsReadersDecrypt',
    ]);
    // Operators put a new key when the cluster's administrators issue one; the deployment manages the secret.
    const put = (who: string) => asRole(stage, who, 'secretsmanager:PutSecretValue');
    expect(denyingStatements(secretStatements, put(OPERATOR_SESSION_ROLE))).toEqual([]);
    expect(denyingStatements(secretStatements, put('Admin'))).toEqual(['OnlyItsKeepersChangeItsValue']);
    for (const manager of [cloudFormationRole(stage), rootOf(stage)])
      expect(denyingStatements(secretStatements, asRole(stage, manager, 'secretsmanager:PutResourcePolicy'))).toEqual(
        [],
      );
    expect(denyingStatements(secretStatements, asRole(stage, 'Admin', 'secretsmanager:PutResourcePolicy'))).toEqual([
      'OnlyTheDeploymentManagesIt',
    ]);
  });

  it('hands the container the same secret, through the execution role', () => {
    const stage = stages[2]!;
    const resolve = resolver(stage);
    const [task] = Object.values(stage.template.findResources('AWS::ECS::TaskDefinition'));
    const secrets = task!.Properties.ContainerDefinitions[0].Secrets.map((s: { Name: string; ValueFrom: unknown }) => [
      s.Name,
      resolve(s.ValueFrom),
    ]);
    const arn = `arn:aws:secretsmanager:${stage.region}:${stage.account}:secret:${ACL_SECRET}`;
    expect(secrets).toEqual([
      ['ROCKETMQ_ACCESS_KEY', `${arn}:accessKey::`],
      ['ROCKETMQ_SECRET_KEY', `${arn}:secretKey::`],
    ]);
  });
});

/** Who writes each table by its code: the groups whose catalogue entry lists it. */
function writersOf(stage: Stage, key: TableKey): string[] {
  const roles = consumerRoles(stage);
  return CONSUMER_GROUPS.filter((g) => (g.tables as readonly string[]).includes(key)).map((g) => roles[g.group]!);
}

/** A table's resource policy, resolved: a catalogue table by its name, the rate-limit table (no fixed name) by `null`. */
function tablePolicy(stage: Stage, name: string | null) {
  const tables = stage.template.findResources('AWS::DynamoDB::Table');
  const id =
    name === null
      ? stormTableId(stage)
      : only(
          Object.keys(tables).filter((k) => tables[k]!.Properties.TableName === name),
          name,
        );
  const table = tables[id]!;
  return {
    table,
    statements: resolver(stage)(table.Properties.ResourcePolicy?.PolicyDocument?.Statement ?? []) as PolicyStatement[],
  };
}

/** The notifier names its rate-limit table in its environment. */
function stormTableId(stage: Stage): string {
  const notifier = Object.values(stage.template.findResources('AWS::Lambda::Function')).find(
    (f) => f.Properties.FunctionName === `${stage.prefix}-alarm-notifier`,
  )!;
  return notifier.Properties.Environment.Variables[ALARM_STORM_TABLE.tableNameEnv].Ref;
}

const ITEM_WRITES = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:PartiQLUpdate',
];
const TABLE_CHANGES = [
  'dynamodb:DeleteTable',
  'dynamodb:UpdateTable',
  'dynamodb:UpdateTimeToLive',
  'dynamodb:UpdateContinuousBackups',
  'dynamodb:PutResourcePolicy',
  'dynamodb:DeleteResourcePolicy',
];

describe('item 6: the tables take item writes from their writers and the operators, changes from the deployment', () => {
  eachStage('every catalogue table: its consumers and the operators write, nobody else', (stage) => {
    const roles = Object.values(consumerRoles(stage));
    for (const key of Object.keys(TABLES) as TableKey[]) {
      const { statements } = tablePolicy(stage, tableName(stage.prefix, key));
      const writers = [...writersOf(stage, key), ...operatorsOf(stage)];
      const others = [
        ...roles.filter((r) => !writers.includes(r)),
        ...OUTSIDERS,
        notifierRole(stage),
        cloudFormationRole(stage),
        ...(bridgeRole(stage) ? [bridgeRole(stage)!] : []),
      ];
      for (const action of ITEM_WRITES) {
        for (const writer of writers)
          expect(denyingStatements(statements, asRole(stage, writer, action)), `${key} ${writer}`).toEqual([]);
        for (const other of others)
          expect(denyingStatements(statements, asRole(stage, other, action)), `${key} ${other}`).toEqual([
            'OnlyItsWritersChangeItems',
          ]);
      }
    }
  });

  eachStage('the rate-limit table: the notifier and the operators write', (stage) => {
    const { statements } = tablePolicy(stage, null);
    for (const writer of [notifierRole(stage), ...operatorsOf(stage)])
      expect(denyingStatements(statements, asRole(stage, writer, 'dynamodb:PutItem'))).toEqual([]);
    for (const other of ['Admin', ...Object.values(consumerRoles(stage))])
      expect(denyingStatements(statements, asRole(stage, other, 'dynamodb:BatchWriteItem'))).toEqual([
        'OnlyItsWritersChangeItems',
      ]);
  });

  eachStage(
    'every table: only the deployment changes it, never locked out of its own policy; the policy fits 20 KB',
    (stage) => {
      const names = [...(Object.keys(TABLES) as TableKey[]).map((k) => tableName(stage.prefix, k)), null];
      for (const name of names) {
        const { table, statements } = tablePolicy(stage, name);
        for (const action of TABLE_CHANGES) {
          // DynamoDB refuses a policy that denies its caller PutResourcePolicy: the deploy role must stay exempt.
          for (const deployment of [cloudFormationRole(stage), rootOf(stage)])
            expect(denyingStatements(statements, asRole(stage, deployment, action)), `${name} ${action}`).toEqual([]);
          for (const other of [...OUTSIDERS, ...Object.values(consumerRoles(stage)), ...operatorsOf(stage)])
            expect(denyingStatements(statements, asRole(stage, other, action)), `${name} ${action}`).toEqual([
              'OnlyTheDeploymentManagesIt',
            ]);
        }
        // As DynamoDB counts it (whitespace included), with every role ARN at IAM's longest (64-character names).
        const longest = `arn:aws:iam::${stage.account}:role/${'r'.repeat(64)}`;
        const rendered = JSON.stringify(table.Properties.ResourcePolicy.PolicyDocument, null, 1).replace(
          /\{\s*"Fn::GetAtt":[^}]*\}/g,
          JSON.stringify(longest),
        );
        expect(rendered.length, name ?? 'rate-limit table').toBeLessThan(20 * 1024);
      }
    },
  );
});

const CONSUME = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'];
const QUEUE_CHANGES = [
  'sqs:SetQueueAttributes',
  'sqs:AddPermission',
  'sqs:RemovePermission',
  'sqs:PurgeQueue',
  'sqs:DeleteQueue',
];

/** Asserts who may consume from and who may change one queue. */
function assertQueueGuarded(stage: Stage, name: string, receivers: readonly string[], others: readonly string[]) {
  const { arn, statements } = queuePolicy(stage, name);
  for (const action of CONSUME) {
    for (const receiver of receivers)
      expect(denyingStatements(statements, asRole(stage, receiver, action, arn)), `${name} ${receiver}`).toEqual([]);
    for (const other of others)
      expect(denyingStatements(statements, asRole(stage, other, action, arn)), `${name} ${other}`).toContain(
        'OnlyItsConsumersReceive',
      );
  }
  for (const action of QUEUE_CHANGES) {
    for (const deployment of [cloudFormationRole(stage), rootOf(stage)])
      expect(denied(statements, asRole(stage, deployment, action, arn)), `${name} ${action}`).toBe(false);
    for (const other of [...receivers, ...others])
      expect(denyingStatements(statements, asRole(stage, other, action, arn)), `${name} ${action} ${other}`).toEqual([
        'OnlyTheDeploymentManagesIt',
      ]);
  }
}

describe('item 6: the queues are changed by the deployment alone and consumed by their consumers and the operators', () => {
  eachStage(
    'each group: the consumer and the operators take from the source queue, only operators from the DLQ',
    (stage) => {
      const roles = consumerRoles(stage);
      const bridge = bridgeRole(stage) ? [bridgeRole(stage)!] : [];
      for (const { group } of CONSUMER_GROUPS) {
        const ordering = orderingOf(group);
        const otherGroups = Object.entries(roles)
          .filter(([g]) => g !== group)
          .map(([, r]) => r);
        assertQueueGuarded(
          stage,
          queueName(stage.prefix, group, ordering),
          [roles[group]!, ...operatorsOf(stage)],
          [...OUTSIDERS, ...otherGroups, ...bridge, ...stage.senders],
        );
        assertQueueGuarded(stage, deadLetterQueueName(stage.prefix, group, ordering), operatorsOf(stage), [
          ...OUTSIDERS,
          roles[group]!,
          ...bridge,
        ]);
      }
    },
  );

  eachStage('the notifier’s DLQ: only operators take letters off it', (stage) => {
    assertQueueGuarded(stage, `${stage.prefix}-alarm-notifier-dlq`, operatorsOf(stage), [
      ...OUTSIDERS,
      notifierRole(stage),
    ]);
  });
});

describe('item 6: the bus’s rules are changed by the deployment alone', () => {
  eachStage('denies rule and target changes to everyone but the deployment and EventBridge itself', (stage) => {
    const resolve = resolver(stage);
    const busId = logicalIdOf(stage, 'AWS::Events::EventBus', { Name: `${stage.prefix}-rocketmq` });
    const statements = Object.values(
      stage.template.findResources('AWS::Events::EventBusPolicy', { Properties: { EventBusName: { Ref: busId } } }),
    ).map((p) => resolve(p.Properties.Statement)) as PolicyStatement[];
    const rule = `arn:aws:events:${stage.region}:${stage.account}:rule/arn:test:${busId}/any-rule`;
    for (const action of [
      'events:DisableRule',
      'events:DeleteRule',
      'events:RemoveTargets',
      'events:PutTargets',
      'events:PutRule',
    ]) {
      for (const other of [...OUTSIDERS, ...operatorsOf(stage), ...(bridgeRole(stage) ? [bridgeRole(stage)!] : [])])
        expect(denyingStatements(statements, asRole(stage, other, action, rule)), `${action} ${other}`).toEqual([
          'cdk-OnlyTheDeploymentChangesItsRules',
        ]);
      expect(denied(statements, asRole(stage, cloudFormationRole(stage), action, rule))).toBe(false);
      // The archive's managed rule is EventBridge's own.
      const eventBridge = {
        principal: 'events.amazonaws.com',
        action,
        resource: rule,
        context: { 'aws:PrincipalIsAWSService': 'true' },
      };
      expect(denied(statements, eventBridge)).toBe(false);
    }
  });
});

/** IAM's key-changing actions (Service Authorization Reference, KMS, access levels Write, Permissions management, Tagging). */
const KEY_CHANGES = [
  'kms:PutKeyPolicy',
  'kms:ScheduleKeyDeletion',
  'kms:CancelKeyDeletion',
  'kms:DisableKey',
  'kms:EnableKey',
  'kms:DisableKeyRotation',
  'kms:EnableKeyRotation',
  'kms:RotateKeyOnDemand',
  'kms:UpdateKeyDescription',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:CreateAlias',
  'kms:UpdateAlias',
  'kms:DeleteAlias',
  'kms:ImportKeyMaterial',
  'kms:DeleteImportedKeyMaterial',
  'kms:ReplicateKey',
  'kms:UpdatePrimaryRegion',
  'kms:CreateGrant',
  'kms:RevokeGrant',
];

describe('item 6: every customer-managed key is managed by the deployment alone', () => {
  eachStage(
    'the secrets’ keys, the data key, the alarm topic’s: every key-changing action, grants but the services’ own',
    (stage) => {
      const resolve = resolver(stage);
      const keys = Object.entries(stage.template.findResources('AWS::KMS::Key'));
      for (const [id, key] of keys) {
        const statements = resolve(key.Properties.KeyPolicy.Statement) as PolicyStatement[];
        for (const action of KEY_CHANGES) {
          for (const who of ['Admin', ...operatorsOf(stage), ...stage.revokers])
            expect(denied(statements, asRole(stage, who, action)), `${id} ${action} by ${who}`).toBe(true);
          for (const deployment of [cloudFormationRole(stage), rootOf(stage)])
            expect(denied(statements, asRole(stage, deployment, action)), `${id} ${action}`).toBe(false);
        }
        // DynamoDB keeps a table readable with grants it makes on its caller's behalf.
        const forAService = { 'kms:GrantIsForAWSResource': 'true' };
        expect(denied(statements, asRole(stage, 'Admin', 'kms:CreateGrant', '*', forAService))).toBe(false);
      }
      // One key per secret (the signing key, DingTalk's, the coupon and notification services' tokens; the
      // RocketMQ ACL key's with the bridge), the data key and the alarm topic's.
      const secrets = 4 + (stage.name.includes('bridge') ? 1 : 0);
      expect(
        keys.map(([, k]) => k.Properties.Description).filter((d) => d.startsWith('Encrypts the secret')),
      ).toHaveLength(secrets);
      expect(keys).toHaveLength(secrets + 2);
    },
  );
});

describe('item 10: every table is retained and deletion-protected in every deployed stage', () => {
  eachStage('the idempotency table with the business tables: a lost dedup record means a double award', (stage) => {
    for (const key of Object.keys(TABLES) as TableKey[]) {
      const { table } = tablePolicy(stage, tableName(stage.prefix, key));
      expect(
        [table.DeletionPolicy, table.UpdateReplacePolicy, table.Properties.DeletionProtectionEnabled],
        key,
      ).toEqual(['Retain', 'Retain', true]);
    }
  });
});

describe('item 11: a break-glass role revokes a signing key and does nothing else', () => {
  it('is named in the committed production stage', () => {
    expect(BASE_SETTINGS.stages.prod.keyRevokerRoleArns).toEqual([
      'arn:aws:iam::333333333333:role/rmq-prod-signing-key-revoker',
    ]);
    expect(stages[1]!.revokers).toHaveLength(1);
  });

  it.each([1, 2])(
    'labels a version revoked and puts its replacement; reads nothing, moves no other label (stage %i)',
    (i) => {
      const stage = stages[i]!;
      const revoker = stage.revokers[0]!;
      const { secretStatements, keyStatements } = secretPolicies(stage, signingKeySecretName(stage.prefix));
      const via = { 'kms:ViaService': `secretsmanager.${stage.region}.amazonaws.com` };
      const secret = (action: string, extra: Record<string, string> = {}) =>
        denyingStatements(secretStatements, asRole(stage, revoker, action, '*', extra));
      expect(
        secret('secretsmanager:UpdateSecretVersionStage', { 'secretsmanager:VersionStage': 'revoked-0a1b2c' }),
      ).toEqual([]);
      expect(secret('secretsmanager:PutSecretValue')).toEqual([]);
      expect(denyingStatements(keyStatements, asRole(stage, revoker, 'kms:GenerateDataKey', '*', via))).toEqual([]);
      expect(
        secret('secretsmanager:UpdateSecretVersionStage', { 'secretsmanager:VersionStage': 'AWSCURRENT' }),
      ).toEqual(['ItsRevokersOnlyAddRevokedLabels']);
      expect(secret('secretsmanager:RotateSecret')).toEqual(['ItsRevokersDoNotRotate']);
      expect(secret('secretsmanager:GetSecretValue')).toEqual(['OnlyItsReadersReadIt']);
      expect(secret('secretsmanager:PutResourcePolicy')).toEqual(['OnlyTheDeploymentManagesIt']);
      expect(denyingStatements(keyStatements, asRole(stage, revoker, 'kms:Decrypt', '*', via))).toEqual([
        'OnlyTheSecretsReadersDecrypt',
      ]);
      // Only the signing key: the DingTalk robot's secret does not know the role.
      const robot = secretPolicies(stage, `${stage.prefix}/dingtalk-robot`).secretStatements;
      expect(denyingStatements(robot, asRole(stage, revoker, 'secretsmanager:PutSecretValue'))).toEqual([
        'OnlyItsKeepersChangeItsValue',
      ]);
    },
  );

  it('refuses a revoker ARN whose wildcard stands for the name, naming the setting', () => {
    expect(() => synthApp({ keyRevokerRoleArns: [`arn:aws:iam::${stages[2]!.account}:role/*`] })).toThrow(
      "rocketmq.stages.test.keyRevokerRoleArns.0: a wildcard may follow only a fixed start of the role's name",
    );
    expect(REVOKER).toMatch(/:role\/rmq-test-signing-key-revoker$/);
  });
});
