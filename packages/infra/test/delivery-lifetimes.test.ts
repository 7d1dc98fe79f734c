import { CONSUMER_ENV, CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import { ROCKETMQ_RETRY_DELAYS_SECONDS } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { stageStores } from '@rocketmq-lambda/tools/testing/stage-stores.ts';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { RocketMQConsumerGroup } from '../src/consumer-group.ts';

const points = CONSUMER_GROUPS.find((g) => g.group === 'point-consumer-group')!;

function synth(definition: ConsumerGroupDefinition): Template {
  const stack = new Stack(new App(), 'Lifetimes');
  new RocketMQConsumerGroup(stack, 'Group', {
    definition,
    prefix: 'unit',
    ...stageStores(stack),
    alarmTopic: new sns.Topic(stack, 'Alarms'),
    runbookUrl: 'https://example.com/runbook.md',
  });
  return Template.fromStack(stack);
}

const sourceQueueOf = (t: Template) =>
  Object.values(t.findResources('AWS::SQS::Queue')).find((q) => q.Properties.RedrivePolicy)!;
const environmentOf = (t: Template) =>
  Object.values(t.findResources('AWS::Lambda::Function'))[0]!.Properties.Environment.Variables;

describe('one schedule decides the redrive count, the retentions and the record TTL (synth)', () => {
  it('derives maxReceiveCount and the source retention from a 20-retry schedule instead of keeping 17', () => {
    // Prepare: the reproduced case: 20 retries used to meet a fixed maxReceiveCount of 17
    const twenty = [...ROCKETMQ_RETRY_DELAYS_SECONDS, 7200, 7200, 7200, 7200];
    // Act
    const template = synth({ ...points, retryDelaysSeconds: twenty });
    // Assess
    const source = sourceQueueOf(template);
    const window = twenty.reduce((a, b) => a + b, 0);
    expect(source.Properties.RedrivePolicy.maxReceiveCount).toBe(21);
    expect(source.Properties.MessageRetentionPeriod).toBe(4 * 86_400 + window);
    const env = environmentOf(template);
    expect(env[CONSUMER_ENV.retryDelays]).toBe(twenty.join(','));
    expect(env[CONSUMER_ENV.maxReceiveCount]).toBe('21');
    // 7 + 2 × (4 + 0.53) + 14 days + a 12.8 h window: 30.6 days, so the default rounds up to 31
    expect(env[CONSUMER_ENV.ttlSeconds]).toBe(String(31 * 86_400));
  });

  it('refuses a schedule longer than any SQS retention can carry, naming both numbers', () => {
    const elevenDays = Array.from({ length: 22 }, () => 12 * 3600);
    expect(() => synth({ ...points, retryDelaysSeconds: elevenDays })).toThrow(
      /point-consumer-group: the DLQ keeps messages 1209600s, not longer than the source queue's 1296000s/,
    );
  });

  it("refuses a record TTL shorter than the archive + source retention + DLQ retention + a redriven copy's source retention", () => {
    expect(() => synth({ ...points, idempotencyTtlSeconds: 7 * 86_400 })).toThrow(
      'consumer group point-consumer-group: idempotency records live 604800s but a copy of a message can come back for 2557020s ' +
        "(bus archive 604800s + source retention 362740s + DLQ retention 1209600s + a redriven copy's source retention 362740s, " +
        'and a retry window 17140s to spare): a late copy would apply its effect again',
    );
  });
});
