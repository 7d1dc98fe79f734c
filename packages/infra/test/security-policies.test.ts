import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  deadLetterQueueName,
  orderingOf,
  queueName,
  signingKeySecretName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import {
  denyingStatements,
  type PolicyRequest,
  type PolicyStatement,
} from '@rocketmq-lambda/tools/testing/resource-policy.ts';
import {
  asRole,
  BRIDGED_ACCOUNT,
  BASE_SETTINGS as base,
  bridgeRole,
  cloudFormationRole,
  consumerRoles,
  EXTERNAL_BRIDGE,
  eachStageOf,
  isConsumerFunction,
  logicalIdOf,
  notifierRole,
  OPERATOR_SESSION_ROLE,
  OPERATORS,
  only,
  resolver,
  type Stage,
  secretPolicies,
  synthApp as synth,
  synthStages,
} from '@rocketmq-lambda/tools/testing/stage-policies.ts';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * Issue #25's policies, judged on the synthesized templates of the committed stages (cdk.json's
 * test and prod, no bridge) and of a stage with the bridge, external senders and operators
 * (packages/tools/src/testing/stage-policies.ts). The emulator enforces no resource policy, so each statement is
 * evaluated by IAM's documented rules (packages/tools/src/testing/resource-policy.ts).
 */
const BRIDGE = {
  enabled: true,
  endpoints: 'proxy1.mq.internal:8081',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
};

const stages: Stage[] = [];

beforeAll(() => {
  stages.push(...synthStages());
}, 600_000);

const eachStage = eachStageOf(stages);

describe('item 1: the envelope signing key in every deployed stage, and nothing invokes a consumer around it', () => {
  eachStage('has the retained key, under its own KMS key, named in every consumer function', (stage) => {
    const secretId = logicalIdOf(stage, 'AWS::SecretsManager::Secret', { Name: signingKeySecretName(stage.prefix) });
    const secret = stage.template.findResources('AWS::SecretsManager::Secret')[secretId]!;
    expect(secret?.DeletionPolicy).toBe('Retain');
    expect(secret.UpdateReplacePolicy).toBe('Retain');
    expect(secret.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 64, ExcludePunctuation: true });
    const key = stage.template.findResources('AWS::KMS::Key')[secret.Properties.KmsKeyId['Fn::GetAtt'][0]]!;
    expect(key.DeletionPolicy).toBe('Retain');
    expect(key.Properties.EnableKeyRotation).toBe(true);
    const consumers = Object.values(stage.template.findResources('AWS::Lambda::Function')).filter(isConsumerFunction);
    expect(consumers).toHaveLength(CONSUMER_GROUPS.length);
    for (const f of consumers)
      expect(f.Properties.Environment.Variables.ENVELOPE_SIGNING_SECRET).toEqual({ Ref: secretId });
  });

  eachStage('names every function under the prefix, and lets no other principal invoke a consumer', (stage) => {
    const functions = Object.entries(stage.template.findResources('AWS::Lambda::Function'));
    const ours = functions.filter(([, f]) => f.Properties.Environment?.Variables);
    expect(ours.map(([, f]) => f.Properties.FunctionName).sort()).toEqual(
      [
        ...CONSUMER_GROUPS.map((g) => `${stage.prefix}-${g.functionName}`),
        // A publishing group's outbox relay (packages/infra/src/group-outbox.ts).
        ...(CONSUMER_GROUPS as readonly ConsumerGroupDefinition[])
          .filter((g) => g.publishes)
          .map((g) => `${stage.prefix}-${g.functionName}-outbox-relay`),
        `${stage.prefix}-alarm-notifier`,
      ].sort(),
    );
    const consumerIds = new Set(
      ours.filter(([, f]) => f.Properties.Environment.Variables.CONSUMER_GROUP).map(([id]) => id),
    );
    const permissions = Object.values(stage.template.findResources('AWS::Lambda::Permission'));
    // The event source mapping polls with the function's own role: no resource policy is needed, and none exists.
    expect(permissions.filter((p) => consumerIds.has(p.Properties.FunctionName['Fn::GetAtt']?.[0]))).toEqual([]);
    // The notifier's only one: SNS, for the stage's alarm topic.
    expect(permissions.map((p) => [p.Properties.Principal, Object.keys(p.Properties.SourceArn ?? {})])).toEqual([
      ['sns.amazonaws.com', ['Ref']],
    ]);
  });

  it('refuses signEnvelopes: false at synth, saying why', () => {
    expect(() => synth({ bridge: { ...BRIDGE, signEnvelopes: false } })).toThrow(
      'rocketmq.stages.test.bridge.signEnvelopes: is false, but every deployed stage signs envelopes',
    );
  });
});

describe('item 2: each secret is readable by its readers alone, under a key with the same scope', () => {
  eachStage(
    'the signing key: consumers, bridges and operators read it; anyone else is denied, the key as well',
    (stage) => {
      const { secretStatements, keyStatements } = secretPolicies(stage, signingKeySecretName(stage.prefix));
      const readers = [
        ...Object.values(consumerRoles(stage)),
        ...(bridgeRole(stage) ? [bridgeRole(stage)!] : []),
        ...stage.senders,
        ...(stage.operators.length ? [OPERATOR_SESSION_ROLE] : []),
      ];
      const via = { 'kms:ViaService': `secretsmanager.${stage.region}.amazonaws.com` };
      for (const reader of readers) {
        expect(denyingStatements(secretStatements, asRole(stage, reader, 'secretsmanager:GetSecretValue'))).toEqual([]);
        expect(denyingStatements(keyStatements, asRole(stage, reader, 'kms:Decrypt', '*', via))).toEqual([]);
      }
      for (const outsider of ['PowerUserAccess', 'ci-deployer', cloudFormationRole(stage)]) {
        expect(denyingStatements(secretStatements, asRole(stage, outsider, 'secretsmanager:GetSecretValue'))).toEqual([
          'OnlyItsReadersReadIt',
        ]);
      }
      expect(denyingStatements(keyStatements, asRole(stage, 'PowerUserAccess', 'kms:Decrypt', '*', via))).toEqual([
        'OnlyTheSecretsReadersDecrypt',
      ]);
      // A reader too uses the key only through Secrets Manager.
      expect(denyingStatements(keyStatements, asRole(stage, readers[0]!, 'kms:Decrypt'))).toEqual([
        'OnlyThroughSecretsManager',
      ]);
    },
  );

  eachStage(
    'CloudFormation still manages the secret and its key; anyone else may not, operators only put values',
    (stage) => {
      const { secretStatements, keyStatements } = secretPolicies(stage, signingKeySecretName(stage.prefix));
      const deploy = cloudFormationRole(stage);
      const root = `arn:aws:iam::${stage.account}:root`;
      for (const action of [
        'secretsmanager:UpdateSecret',
        'secretsmanager:PutResourcePolicy',
        'secretsmanager:DeleteResourcePolicy',
      ])
        for (const manager of [deploy, root])
          expect(denyingStatements(secretStatements, asRole(stage, manager, action))).toEqual([]);
      for (const action of ['kms:PutKeyPolicy', 'kms:ScheduleKeyDeletion', 'kms:CreateGrant'])
        expect(denyingStatements(keyStatements, asRole(stage, deploy, action))).toEqual([]);
      expect(denyingStatements(secretStatements, asRole(stage, 'Admin', 'secretsmanager:PutResourcePolicy'))).toEqual([
        'OnlyTheDeploymentManagesIt',
      ]);
      expect(denyingStatements(keyStatements, asRole(stage, 'Admin', 'kms:PutKeyPolicy'))).toEqual([
        'OnlyTheDeploymentManagesTheKey',
      ]);
      expect(denyingStatements(secretStatements, asRole(stage, 'Admin', 'secretsmanager:PutSecretValue'))).toEqual([
        'OnlyItsKeepersChangeItsValue',
      ]);
      // The operators rotate and revoke: a new value, a label; never the policy.
      if (stage.operators.length > 0) {
        for (const action of ['secretsmanager:PutSecretValue', 'secretsmanager:UpdateSecretVersionStage'])
          expect(denyingStatements(secretStatements, asRole(stage, OPERATOR_SESSION_ROLE, action))).toEqual([]);
        expect(
          denyingStatements(secretStatements, asRole(stage, OPERATOR_SESSION_ROLE, 'secretsmanager:PutResourcePolicy')),
        ).toEqual(['OnlyTheDeploymentManagesIt']);
      }
    },
  );

  eachStage('the coupon service token: the coupon consumer alone reads it, under its own key', (stage) => {
    const secretName = base.stages[stage.name.endsWith('prod') ? 'prod' : 'test'].services['coupon-service'].auth
      .secretName as string;
    const { secret, secretStatements, keyStatements } = secretPolicies(stage, secretName);
    expect(secret?.DeletionPolicy).toBe('Retain');
    const roles = consumerRoles(stage);
    const via = { 'kms:ViaService': `secretsmanager.${stage.region}.amazonaws.com` };
    expect(
      denyingStatements(
        secretStatements,
        asRole(stage, roles['coupon-consumer-group']!, 'secretsmanager:GetSecretValue'),
      ),
    ).toEqual([]);
    expect(
      denyingStatements(keyStatements, asRole(stage, roles['coupon-consumer-group']!, 'kms:Decrypt', '*', via)),
    ).toEqual([]);
    for (const other of [roles['point-consumer-group']!, bridgeRole(stage), 'PowerUserAccess'].filter(
      Boolean,
    ) as string[])
      expect(denyingStatements(secretStatements, asRole(stage, other, 'secretsmanager:GetSecretValue'))).toEqual([
        'OnlyItsReadersReadIt',
      ]);
  });

  eachStage('the DingTalk robot: the notifier (and the operators) alone read it, under its own key', (stage) => {
    const { secretStatements } = secretPolicies(stage, `${stage.prefix}/dingtalk-robot`);
    expect(
      denyingStatements(secretStatements, asRole(stage, notifierRole(stage), 'secretsmanager:GetSecretValue')),
    ).toEqual([]);
    for (const other of [Object.values(consumerRoles(stage))[0]!, 'PowerUserAccess'])
      expect(denyingStatements(secretStatements, asRole(stage, other, 'secretsmanager:GetSecretValue'))).toEqual([
        'OnlyItsReadersReadIt',
      ]);
  });
});

describe('item 3: the dead-letter queues take letters from the consumer, the bridges and the operators, and no move task', () => {
  eachStage(
    'per group: the consumer and the senders send, anyone else is denied; nobody starts a move task',
    (stage) => {
      const resolve = resolver(stage);
      const roles = consumerRoles(stage);
      for (const { group } of CONSUMER_GROUPS) {
        const ordering = orderingOf(group);
        const dlqId = logicalIdOf(stage, 'AWS::SQS::Queue', {
          QueueName: deadLetterQueueName(stage.prefix, group, ordering),
        });
        const sourceName = queueName(stage.prefix, group, ordering);
        const dlq = stage.template.findResources('AWS::SQS::Queue')[dlqId]!;
        // SQS's redrive policy moves messages in from the group's own source queue alone.
        expect(resolve(dlq.Properties.RedriveAllowPolicy)).toEqual({
          redrivePermission: 'byQueue',
          sourceQueueArns: [`arn:aws:sqs:${stage.region}:${stage.account}:${sourceName}`],
        });
        const policy = only(
          Object.values(stage.template.findResources('AWS::SQS::QueuePolicy')).filter(
            (p) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: dlqId }]),
          ),
          `policy of ${group}'s DLQ`,
        );
        const statements = resolve(policy.Properties.PolicyDocument.Statement) as PolicyStatement[];
        const dlqArn = `arn:test:${dlqId}`;
        const send = (role: string) => denyingStatements(statements, asRole(stage, role, 'sqs:SendMessage', dlqArn));
        expect(send(roles[group]!)).toEqual([]);
        for (const sender of [
          ...stage.senders,
          ...(stage.operators.length ? [OPERATOR_SESSION_ROLE] : []),
          bridgeRole(stage),
        ])
          if (sender) expect(send(sender)).toEqual([]);
        expect(send('Admin')).toEqual(['OnlyTheConsumerBridgesAndOperatorsSend']);
        const otherGroup = Object.entries(roles).find(([g]) => g !== group)![1];
        expect(send(otherGroup)).toEqual(['OnlyTheConsumerBridgesAndOperatorsSend']);
        for (const who of [roles[group]!, OPERATOR_SESSION_ROLE, 'Admin'])
          expect(denyingStatements(statements, asRole(stage, who, 'sqs:StartMessageMoveTask', dlqArn))).toEqual([
            'NoMoveTaskSkipsTheRedriveGuards',
          ]);
        // Were SQS's own move judged as a request at all, it would come from the service, which the Deny leaves alone.
        expect(
          denyingStatements(statements, {
            principal: 'sqs.amazonaws.com',
            action: 'sqs:SendMessage',
            resource: dlqArn,
            context: {
              'aws:PrincipalIsAWSService': 'true',
              'aws:SourceArn': `arn:aws:sqs:${stage.region}:${stage.account}:${sourceName}`,
            },
          }),
        ).toEqual([]);
      }
    },
  );
});

describe('item 6: only CloudWatch publishes to the alarm topic', () => {
  eachStage('denies Publish to every IAM principal of the account; the own alarms still publish', (stage) => {
    const resolve = resolver(stage);
    const topicId = logicalIdOf(stage, 'AWS::SNS::Topic', { TopicName: `${stage.prefix}-alarms` });
    const policy = only(
      Object.values(stage.template.findResources('AWS::SNS::TopicPolicy')).filter(
        (p) => JSON.stringify(p.Properties.Topics) === JSON.stringify([{ Ref: topicId }]),
      ),
      'topic policy',
    );
    const statements = resolve(policy.Properties.PolicyDocument.Statement) as PolicyStatement[];
    const topicArn = `arn:test:${topicId}`;
    for (const who of [
      'Admin',
      ...Object.values(consumerRoles(stage)),
      ...(bridgeRole(stage) ? [bridgeRole(stage)!] : []),
    ])
      expect(denyingStatements(statements, asRole(stage, who, 'sns:Publish', topicArn))).toContain(
        'OnlyCloudWatchPublishes',
      );
    const cloudWatch: PolicyRequest = {
      principal: 'cloudwatch.amazonaws.com',
      action: 'sns:Publish',
      resource: topicArn,
      context: {
        'aws:PrincipalIsAWSService': 'true',
        'aws:SecureTransport': 'true',
        'aws:SourceAccount': stage.account,
        'aws:SourceArn': `arn:aws:cloudwatch:${stage.region}:${stage.account}:alarm:${stage.prefix}-point-consumer-group-dead-letters`,
      },
    };
    expect(denyingStatements(statements, cloudWatch)).toEqual([]);
  });
});

describe('item 7: a wildcard in senderRoleArns only after a fixed start of the role name', () => {
  it.each([
    ['role/*', `arn:aws:iam::${BRIDGED_ACCOUNT}:role/*`],
    ['a path and *', `arn:aws:iam::${BRIDGED_ACCOUNT}:role/service-role/*`],
    ['a short start', `arn:aws:iam::${BRIDGED_ACCOUNT}:role/ops-*`],
    [
      'every SSO permission set',
      `arn:aws:iam::${BRIDGED_ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_*`,
    ],
    ['a ? for the name', `arn:aws:iam::${BRIDGED_ACCOUNT}:role/?`],
  ])('refuses %s, naming the setting', (_, arn) => {
    for (const setting of ['senderRoleArns', 'operatorRoleArns'])
      expect(() => synth({ [setting]: [arn] })).toThrow(
        `rocketmq.stages.test.${setting}.0: a wildcard may follow only a fixed start of the role's name`,
      );
  });

  it('accepts a role by name and an SSO permission set with its generated suffix (the bridged stage above)', () => {
    expect(stages[2]!.senders).toEqual([EXTERNAL_BRIDGE]);
    expect(stages[2]!.operators).toEqual([OPERATORS]);
  });
});

describe('item 11: every principal the bus admits can sign', () => {
  eachStage('whoever may put events on the bus may read the signing key; everyone else may do neither', (stage) => {
    const resolve = resolver(stage);
    const busId = logicalIdOf(stage, 'AWS::Events::EventBus', { Name: `${stage.prefix}-rocketmq` });
    const busStatements = Object.values(
      stage.template.findResources('AWS::Events::EventBusPolicy', { Properties: { EventBusName: { Ref: busId } } }),
    ).map((p) => resolve(p.Properties.Statement)) as PolicyStatement[];
    const { secretStatements } = secretPolicies(stage, signingKeySecretName(stage.prefix));
    const candidates = [
      'Admin',
      ...stage.senders,
      OPERATOR_SESSION_ROLE,
      ...Object.values(consumerRoles(stage)),
      ...(bridgeRole(stage) ? [bridgeRole(stage)!] : []),
    ];
    const admitted = candidates.filter(
      (who) =>
        denyingStatements(busStatements, asRole(stage, who, 'events:PutEvents', `arn:test:${busId}`)).length === 0,
    );
    expect(admitted).not.toContain('Admin');
    for (const who of admitted)
      expect(denyingStatements(secretStatements, asRole(stage, who, 'secretsmanager:GetSecretValue')), who).toEqual([]);
  });
});
