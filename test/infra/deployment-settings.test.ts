import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { deploymentSettings, InvalidDeploymentSettingsError } from '../../infra/deployment-settings.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

const base = cdkJson.context.rocketmq;
const settingsWith = (stageTest: Record<string, unknown>) =>
  deploymentSettings(new App({ context: { rocketmq: { ...base, stages: { ...base.stages, test: { ...base.stages.test, ...stageTest } } } } }).node);

describe('deployment settings', () => {
  it('reads cdk.json as committed: services by catalogue name', () => {
    expect(settingsWith({}).stages.prod.services).toEqual({ 'coupon-service': 'https://coupons.example.com' });
  });

  it('takes per-group overrides for groups of the catalogue', () => {
    expect(settingsWith({ groups: { 'point-consumer-group': { maxConcurrency: 50, packing: false } } }).stages.test.groups).toEqual({
      'point-consumer-group': { maxConcurrency: 50, packing: false },
    });
  });

  it.each([
    ['a group the catalogue does not have', { groups: { 'points-consumer-grup': { maxConcurrency: 50 } } }, 'rocketmq.stages.test.groups.points-consumer-grup: not a consumer group of the catalogue'],
    ['a setting no group has', { groups: { 'point-consumer-group': { maxConcurency: 50 } } }, 'rocketmq.stages.test.groups.point-consumer-group'],
    ['a service the catalogue does not name', { services: { 'coupon-servce': 'https://x.example.com' } }, 'rocketmq.stages.test.services'],
  ])('refuses %s, naming it', (_, stage, message) => {
    expect(() => settingsWith(stage)).toThrow(InvalidDeploymentSettingsError);
    expect(() => settingsWith(stage)).toThrow(message);
  });
});
