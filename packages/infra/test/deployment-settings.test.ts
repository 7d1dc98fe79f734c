import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import cdkJson from '../../../cdk.json' with { type: 'json' };
import { deploymentSettings, InvalidDeploymentSettingsError } from '../src/deployment-settings.ts';

const base = cdkJson.context.rocketmq;
const settingsWith = (stageTest: Record<string, unknown>) =>
  deploymentSettings(
    new App({
      context: { rocketmq: { ...base, stages: { ...base.stages, test: { ...base.stages.test, ...stageTest } } } },
    }).node,
  );

describe('deployment settings', () => {
  it('reads cdk.json as committed: services by catalogue name, with their authentication', () => {
    expect(settingsWith({}).stages.prod.services).toEqual({
      'coupon-service': {
        url: 'https://coupons.example.com',
        auth: { kind: 'bearer', secretName: 'rmq-prod/coupon-service-token' },
      },
      'notification-service': {
        url: 'https://notifications.example.com',
        auth: { kind: 'bearer', secretName: 'rmq-prod/notification-service-token' },
      },
    });
  });

  it('reads a service given as a plain URL, the earlier form, as one called without credentials (which the synth then refuses off loopback)', () => {
    expect(
      settingsWith({ services: { 'coupon-service': 'https://coupons.example.com' } }).stages.test.services,
    ).toEqual({
      'coupon-service': { url: 'https://coupons.example.com', auth: { kind: 'none' } },
    });
  });

  it('takes per-group overrides for groups of the catalogue', () => {
    expect(
      settingsWith({ groups: { 'point-consumer-group': { maxConcurrency: 50, packing: false } } }).stages.test.groups,
    ).toEqual({
      'point-consumer-group': { maxConcurrency: 50, packing: false },
    });
  });

  it.each([
    [
      'a group the catalogue does not have',
      { groups: { 'points-consumer-grup': { maxConcurrency: 50 } } },
      'rocketmq.stages.test.groups.points-consumer-grup: not a consumer group of the catalogue',
    ],
    [
      'a setting no group has',
      { groups: { 'point-consumer-group': { maxConcurency: 50 } } },
      'rocketmq.stages.test.groups.point-consumer-group',
    ],
    [
      'a service the catalogue does not name',
      { services: { 'coupon-servce': 'https://x.example.com' } },
      'rocketmq.stages.test.services',
    ],
    [
      'an authentication kind there is none of',
      { services: { 'coupon-service': { url: 'https://x.example.com', auth: { kind: 'basic' } } } },
      'rocketmq.stages.test.services.coupon-service.auth.kind',
    ],
    [
      'a bearer token without its secret',
      { services: { 'coupon-service': { url: 'https://x.example.com', auth: { kind: 'bearer' } } } },
      'rocketmq.stages.test.services.coupon-service.auth.secretName',
    ],
    [
      'a VPC placement whose subnet is not a subnet id',
      {
        groups: {
          'coupon-consumer-group': {
            vpc: { vpcId: 'vpc-0a1b2c3d', subnets: [{ id: 'sn-1', availabilityZone: 'ap-northeast-1a' }] },
          },
        },
      },
      'rocketmq.stages.test.groups.coupon-consumer-group.vpc.subnets.0.id',
    ],
    [
      'a SigV4 service that signs for nothing here',
      { services: { 'coupon-service': { url: 'https://x.example.com', auth: { kind: 'sigv4', service: 's3' } } } },
      'rocketmq.stages.test.services.coupon-service.auth.service',
    ],
  ])('refuses %s, naming it', (_, stage, message) => {
    expect(() => settingsWith(stage)).toThrow(InvalidDeploymentSettingsError);
    expect(() => settingsWith(stage)).toThrow(message);
  });
});
