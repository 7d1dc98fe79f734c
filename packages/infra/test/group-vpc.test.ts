import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cfnLint, templatesIn } from '@rocketmq-lambda/tools/testing/cfn-lint.ts';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/consumers-app.ts';
import { REPOSITORY_ROOT } from '../src/project-function.ts';

const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
const base = cdkJson.context.rocketmq;
const COUPONS = 'coupon-consumer-group';

/**
 * The coupon group placed in a VPC in the test stage, as a team would write it in cdk.json, its service on port 8443.
 */
const VPC = {
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [
    { id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' },
    { id: 'subnet-0a1b2c3d4e5f60712', availabilityZone: 'ap-northeast-1c' },
  ],
  securityGroupIds: ['sg-0a1b2c3d4e5f60719'],
};

let outdir: string;
let template: Template;
let resources: Record<string, { Type: string; Properties: Record<string, any> }>;

beforeAll(() => {
  outdir = mkdtempSync(path.join(tmpdir(), 'cdk-vpc-test-'));
  const test = {
    ...base.stages.test,
    services: {
      'coupon-service': {
        ...base.stages.test.services['coupon-service'],
        url: 'https://coupons.test.example.com:8443',
      },
      'notification-service': base.stages.test.services['notification-service'],
    },
    groups: { [COUPONS]: { maxConcurrency: 30, vpc: VPC } },
  };
  // As the CLI synthesises: cdk-nag runs and throws on an unacknowledged finding.
  const built = buildApp(
    new App({
      outdir,
      context: { rocketmq: { ...base, stages: { ...base.stages, test } } },
      analyticsReporting: true,
      stackTraces: false,
    }),
  );
  built.app.synth();
  template = Template.fromStack(built.pipeline.test.consumers);
  resources = template.toJSON().Resources;
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const functionOf = (group: string) =>
  Object.entries(resources).find(
    ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.CONSUMER_GROUP === group,
  )!;
const ec2Arn = (resource: string) => ({
  'Fn::Join': [
    '',
    ['arn:', { Ref: 'AWS::Partition' }, `:ec2:${base.stages.test.region}:${base.stages.test.account}:${resource}`],
  ],
});

describe('a consumer group placed in a VPC by the stage settings', () => {
  it('runs its function in the given subnets with its own security group and the given ones; the other groups stay outside', () => {
    const [, coupons] = functionOf(COUPONS);
    const [ownGroup] = Object.entries(resources).find(([, r]) => r.Type === 'AWS::EC2::SecurityGroup')!;
    expect(coupons.Properties.VpcConfig).toEqual({
      SubnetIds: VPC.subnets.map((s) => s.id),
      SecurityGroupIds: [{ 'Fn::GetAtt': [ownGroup, 'GroupId'] }, 'sg-0a1b2c3d4e5f60719'],
    });
    for (const group of ['point-consumer-group', 'order-status-consumer-group'])
      expect(functionOf(group)[1].Properties.VpcConfig).toBeUndefined();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionOf(COUPONS)[0] },
      ScalingConfig: { MaximumConcurrency: 30 },
    });
  });

  it('lets the function out only to HTTPS (the AWS APIs) and its service’s port, and lets nothing in', () => {
    const groups = Object.values(resources).filter((r) => r.Type === 'AWS::EC2::SecurityGroup');
    expect(groups).toHaveLength(1);
    expect(groups[0]!.Properties.VpcId).toBe(VPC.vpcId);
    expect(groups[0]!.Properties.SecurityGroupIngress).toBeUndefined();
    expect(groups[0]!.Properties.SecurityGroupEgress).toEqual([
      { CidrIp: '0.0.0.0/0', Description: 'tcp 443 out', FromPort: 443, IpProtocol: 'tcp', ToPort: 443 },
      { CidrIp: '0.0.0.0/0', Description: 'tcp 8443 out', FromPort: 8443, IpProtocol: 'tcp', ToPort: 8443 },
    ]);
  });

  it('gives the role the network-interface actions inline, scoped to its subnets and security groups, and no managed policy', () => {
    const [, coupons] = functionOf(COUPONS);
    const roleId = coupons.Properties.Role['Fn::GetAtt'][0];
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
    const statements = Object.values(resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleId),
      )
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      .filter((s) => [s.Action].flat().some((a: string) => a.startsWith('ec2:')));
    const [ownGroup] = Object.entries(resources).find(([, r]) => r.Type === 'AWS::EC2::SecurityGroup')!;
    expect(statements).toEqual([
      {
        Effect: 'Allow',
        Action: 'ec2:CreateNetworkInterface',
        Resource: [
          ec2Arn('network-interface/*'),
          ...VPC.subnets.map((s) => ec2Arn(`subnet/${s.id}`)),
          {
            'Fn::Join': [
              '',
              [
                'arn:',
                { Ref: 'AWS::Partition' },
                `:ec2:${base.stages.test.region}:${base.stages.test.account}:security-group/`,
                { 'Fn::GetAtt': [ownGroup, 'GroupId'] },
              ],
            ],
          },
          ec2Arn('security-group/sg-0a1b2c3d4e5f60719'),
        ],
      },
      {
        Effect: 'Allow',
        Action: ['ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
        Resource: ec2Arn('network-interface/*'),
      },
      { Effect: 'Allow', Action: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'], Resource: '*' },
    ]);
  });

  it('passes cdk-nag with the two wildcards acknowledged by reason, and cfn-lint', async () => {
    const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8'));
    const nag = report.pluginReports.find((p: { pluginName: string }) => p.pluginName === 'AwsSolutions');
    expect(nag.violations).toEqual([]);
    const onRole = nag.suppressedViolations.filter((v: { violatingConstructs: Array<{ constructPath: string }> }) =>
      v.violatingConstructs.some((c) =>
        c.constructPath.startsWith('RocketMqConsumersPipeline/Test/Consumers/CouponConsumerGroup/Consumer/Role'),
      ),
    );
    expect(onRole.map((v: { ruleName: string }) => v.ruleName).sort()).toEqual([
      'AwsSolutions-IAM5[Resource::*]',
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:${base.stages.test.region}:${base.stages.test.account}:network-interface/*]`,
    ]);
    for (const acknowledged of onRole) expect(acknowledged.reason).toContain("Lambda's VPC attachment");
    const lint = await cfnLint(templatesIn(outdir));
    expect(lint.out).not.toMatch(/:E\d{4}:/);
  }, 120_000);
});
