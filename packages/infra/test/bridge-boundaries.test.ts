import { readFileSync } from 'node:fs';
import path from 'node:path';
import { denyingStatements, type PolicyStatement } from '@rocketmq-lambda/tools/testing/resource-policy.ts';
import { App, cx_api } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

/**
 * What a stage's bridge tasks can reach (issue #25, item 8: egress to HTTPS and the cluster's ports
 * only) and the fixed names an SCP needs to keep anyone else from becoming them (item 12), on the
 * committed stages and on stages with the bridge on, over RocketMQ 5 and 4.x.
 */
const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const base = cdkJson.context.rocketmq;
const { prefix, region } = base.stages.test;

const BRIDGE = {
  enabled: true,
  protocol: 'rocketmq5',
  endpoints: 'proxy1.mq.internal:8081;proxy2.mq.internal:8081',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
  securityGroupIds: ['sg-0a1b2c3d4e5f60719'],
};

type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

/** The stages' templates, Lambda bundling skipped (these assertions read no code). */
function synth(bridge?: Record<string, unknown>, stage: 'test' | 'prod' = 'test') {
  const stages = bridge ? { ...base.stages, [stage]: { ...base.stages[stage], bridge } } : base.stages;
  const context = { rocketmq: { ...base, stages }, [cx_api.BUNDLING_STACKS]: [] };
  const { pipeline } = buildApp(new App({ context, stackTraces: false }));
  const resources = (stage: 'test' | 'prod') =>
    Template.fromStack(pipeline[stage].consumers).toJSON().Resources as Resources;
  return { test: resources('test'), prod: resources('prod') };
}

const ofType = (resources: Resources, type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

/** Every egress rule of the templates' security groups, inline or as resources of their own. */
function egressRules(resources: Resources): Array<Record<string, unknown>> {
  return [
    ...ofType(resources, 'AWS::EC2::SecurityGroup').flatMap(([, g]) => g.Properties.SecurityGroupEgress ?? []),
    ...ofType(resources, 'AWS::EC2::SecurityGroupEgress').map(([, r]) => r.Properties),
  ];
}

function bridgeGroup(resources: Resources): [string, Array<Record<string, unknown>>] {
  const groups = ofType(resources, 'AWS::EC2::SecurityGroup').filter(([, g]) =>
    String(g.Properties.GroupDescription).includes('RocketMQ bridge tasks'),
  );
  expect(groups).toHaveLength(1);
  const [id, group] = groups[0]!;
  return [id, group.Properties.SecurityGroupEgress];
}

const rule = (cidr: string, port: number, description: string) => ({
  CidrIp: cidr,
  Description: description,
  FromPort: port,
  IpProtocol: 'tcp',
  ToPort: port,
});

describe("the bridge's egress (item 8)", () => {
  it('the committed stages deploy no bridge, and no security group that lets anything out everywhere', () => {
    const { test, prod } = synth();

    for (const resources of [test, prod]) {
      expect(ofType(resources, 'AWS::ECS::TaskDefinition')).toEqual([]);
      for (const egress of egressRules(resources)) expect(egress.IpProtocol).not.toBe('-1');
    }
  });

  it('RocketMQ 5: HTTPS anywhere (the AWS APIs) and the proxies’ port, nothing else; the service uses that group', () => {
    const { test, prod } = synth(BRIDGE);

    const [groupId, egress] = bridgeGroup(test);
    expect(egress).toEqual([
      rule('0.0.0.0/0', 443, 'AWS APIs over HTTPS'),
      rule('0.0.0.0/0', 8081, 'RocketMQ proxy (tcp 8081)'),
    ]);
    const [, service] = ofType(test, 'AWS::ECS::Service')[0]!;
    expect(service.Properties.NetworkConfiguration.AwsvpcConfiguration.SecurityGroups).toEqual([
      { 'Fn::GetAtt': [groupId, 'GroupId'] },
      'sg-0a1b2c3d4e5f60719',
    ]);
    for (const resources of [test, prod])
      for (const anyEgress of egressRules(resources)) expect(anyEgress.IpProtocol).not.toBe('-1');
  });

  it('RocketMQ 4: the name servers’ ports and the brokers’, only towards the cluster’s blocks', () => {
    const { test } = synth({
      ...BRIDGE,
      protocol: 'rocketmq4',
      tls: false,
      endpoints: 'ns1.mq.internal:9876;ns2.mq.internal:9877',
      brokerPorts: [10911, 10921],
      clusterCidrs: ['10.20.0.0/16', '10.30.0.0/24'],
    });

    const [, egress] = bridgeGroup(test);
    expect(egress).toEqual([
      rule('0.0.0.0/0', 443, 'AWS APIs over HTTPS'),
      ...[
        [9876, 'RocketMQ name server'],
        [9877, 'RocketMQ name server'],
        [10911, 'RocketMQ broker'],
        [10921, 'RocketMQ broker'],
      ].flatMap(([port, what]) =>
        ['10.20.0.0/16', '10.30.0.0/24'].map((cidr) => rule(cidr, port as number, `${what} (tcp ${port})`)),
      ),
    ]);
  });

  it("RocketMQ 4's brokers default to 10911, their default listenPort", () => {
    const { test } = synth({ ...BRIDGE, protocol: 'rocketmq4', tls: false, endpoints: 'ns1.mq.internal:9876' });

    const [, egress] = bridgeGroup(test);
    expect(egress.map((r) => r.FromPort)).toEqual([443, 9876, 10911]);
  });

  it('refuses broker ports on RocketMQ 5 and a block that is not an IPv4 CIDR, naming the setting', () => {
    expect(() => synth({ ...BRIDGE, brokerPorts: [10911] })).toThrow(
      'rocketmq.stages.test.bridge.brokerPorts: brokerPorts is for rocketmq4',
    );
    expect(() => synth({ ...BRIDGE, clusterCidrs: ['10.20.0.0'] })).toThrow('rocketmq.stages.test.bridge.clusterCidrs');
  });
});

describe("the bridge's names (item 12)", () => {
  it('the task definition and its roles have fixed names under the stage prefix, and the grants go to them', () => {
    const { test, prod } = synth(BRIDGE);

    const roles = Object.fromEntries(
      ofType(test, 'AWS::IAM::Role')
        .filter(([, r]) => String(r.Properties.RoleName ?? '').includes('-bridge-'))
        .map(([id, r]) => [r.Properties.RoleName as string, { id, role: r }]),
    );
    expect(Object.keys(roles).sort()).toEqual([`${prefix}-bridge-exec-${region}`, `${prefix}-bridge-task-${region}`]);
    for (const { role } of Object.values(roles))
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'ecs-tasks.amazonaws.com' } },
      ]);
    const [, task] = ofType(test, 'AWS::ECS::TaskDefinition')[0]!;
    expect(task.Properties.Family).toBe(`${prefix}-bridge`);
    const taskRole = roles[`${prefix}-bridge-task-${region}`]!.id;
    expect(task.Properties.TaskRoleArn).toEqual({ 'Fn::GetAtt': [taskRole, 'Arn'] });
    expect(task.Properties.ExecutionRoleArn).toEqual({
      'Fn::GetAtt': [roles[`${prefix}-bridge-exec-${region}`]!.id, 'Arn'],
    });
    // What the bridge may do is granted to the named role.
    const sends = ofType(test, 'AWS::IAM::Policy').filter(([, p]) =>
      p.Properties.PolicyDocument.Statement.some((s: { Action: unknown }) =>
        [s.Action].flat().includes('sqs:SendMessage'),
      ),
    );
    expect(sends.some(([, p]) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === taskRole))).toBe(true);
    // A stage without the bridge has none of them.
    expect(JSON.stringify(prod)).not.toContain('-bridge-task-');
  });
});

describe('the SCP in docs/security.md (item 12)', () => {
  /** The first JSON block under the item's heading, as an operator would copy it. */
  function documentedScp(): PolicyStatement[] {
    const doc = readFileSync(path.join(REPOSITORY_ROOT, 'docs', 'security.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### 12. Who can become the bridge'));
    const json = /```json\n([\s\S]*?)\n```/.exec(section)![1]!;
    // An SCP names no principal: it binds every principal of the account (but service-linked roles).
    return (JSON.parse(json).Statement as PolicyStatement[]).map((s) => ({ ...s, Principal: '*' }));
  }

  it('denies passing, running, updating and exec-ing into the production bridge to all but CloudFormation, and nothing else', () => {
    const scp = documentedScp();
    const { prod } = synth(BRIDGE, 'prod');
    const { account, region, prefix: prodPrefix } = base.stages.prod;
    const roleNames = ofType(prod, 'AWS::IAM::Role')
      .map(([, r]) => r.Properties.RoleName as string | undefined)
      .filter((n): n is string => n?.startsWith(`${prodPrefix}-bridge-`) ?? false);
    const [, task] = ofType(prod, 'AWS::ECS::TaskDefinition')[0]!;
    const [, cluster] = ofType(prod, 'AWS::ECS::Cluster')[0]!;
    const family = task.Properties.Family as string;
    const clusterName = cluster.Properties.ClusterName as string;
    expect(roleNames).toHaveLength(2);
    const role = (name: string) => `arn:aws:iam::${account}:role/${name}`;
    const ecs = (resource: string) => `arn:aws:ecs:${region}:${account}:${resource}`;
    const admin = role('AWSReservedSSO_AdministratorAccess_0123456789abcdef');
    const deploy = role(`cdk-hnb659fds-deploy-role-${account}-${region}`);
    const cloudFormation = role(`cdk-hnb659fds-cfn-exec-role-${account}-${region}`);
    const denied = (principal: string, action: string, resource: string) =>
      denyingStatements(scp, { principal, action, resource, context: { 'aws:PrincipalArn': principal } }).length > 0;

    const bridgeRequests = [
      ...roleNames.flatMap((name) => [
        ['iam:PassRole', role(name)],
        ['iam:PutRolePolicy', role(name)],
        ['iam:UpdateAssumeRolePolicy', role(name)],
      ]),
      ['ecs:RunTask', ecs(`task-definition/${family}:7`)],
      ['ecs:StartTask', ecs(`task-definition/${family}:7`)],
      ['ecs:UpdateService', ecs(`service/${clusterName}/BridgeService-0a1b2c`)],
      ['ecs:ExecuteCommand', ecs(`task/${clusterName}/0123456789abcdef`)],
    ] as const;
    for (const [action, resource] of bridgeRequests) {
      expect(denied(admin, action, resource), `${action} ${resource} by an administrator`).toBe(true);
      expect(denied(deploy, action, resource), `${action} ${resource} by the deploy role`).toBe(true);
      expect(denied(cloudFormation, action, resource), `${action} ${resource} by CloudFormation`).toBe(false);
    }
    for (const [action, resource] of [
      ['iam:PassRole', role(`${prodPrefix}-point-consumer-group-role`)],
      ['ecs:RunTask', ecs('task-definition/another-app:1')],
      ['ecs:ExecuteCommand', ecs('task/another-cluster/0123456789abcdef')],
    ] as const)
      expect(denied(admin, action, resource), `${action} ${resource}`).toBe(false);
  });
});
