import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { consumerGroup } from '../../lib/config/resources.ts';
import { RocketMQConsumersStack } from '../../infra/consumer-stack.ts';
import { tuningOf } from '../../infra/consumer-group.ts';

const COUPONS = consumerGroup('coupon-consumer-group');

function synth(props: Partial<ConstructorParameters<typeof RocketMQConsumersStack>[2]>) {
  const app = new App();
  return new RocketMQConsumersStack(app, 'Consumers', { prefix: 'unit', runbookUrl: 'https://example.com/runbook.md', groups: [COUPONS], ...props });
}

describe('a group takes its outside services and sizing from the catalogue and the stage, never from special cases', () => {
  it('refuses a stage without the URL of a service the group calls, naming group and setting', () => {
    expect(() => synth({})).toThrow('coupon-consumer-group needs the services.coupon-service setting');
  });

  it('gives the function the service URL and the stage’s per-group sizing over the catalogue and stage-wide values', () => {
    const stack = synth({
      services: { 'coupon-service': 'https://coupons.example.com' },
      tuning: { maxConcurrency: 5, batchSize: 4 },
      groupTuning: { [COUPONS.group]: tuningOf({ maxConcurrency: 40, timeoutSeconds: 20 }) },
    });
    const template = Template.fromStack(stack);
    const fn = Object.values(template.findResources('AWS::Lambda::Function')).find((f) => f.Properties.Environment?.Variables?.CONSUMER_GROUP === COUPONS.group)!;
    expect(fn.Properties.Environment.Variables.COUPON_SERVICE_URL).toBe('https://coupons.example.com');
    expect(fn.Properties.Timeout).toBe(20);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 4, ScalingConfig: { MaximumConcurrency: 40 } });
  });
});
