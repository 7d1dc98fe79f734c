import {
  CONSUMER_ENV,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  ConsumerMetric,
  FIFO_QUEUE_ATTRIBUTES,
  METRICS_NAMESPACE,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { stageStores } from '@rocketmq-lambda/tools/testing/stage-stores.ts';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ConsumerTuning, RocketMQConsumerGroup } from '../src/consumer-group.ts';

const orderStatus = CONSUMER_GROUPS.find((g) => g.group === 'order-status-consumer-group')!;
/** The order-status group as an orderly group declares itself. */
const orderly: ConsumerGroupDefinition = { ...orderStatus, ordering: 'orderly', tables: ['orders', 'idempotency'] };

function synth(definition: ConsumerGroupDefinition, tuning: ConsumerTuning = {}): Template {
  const stack = new Stack(new App(), 'Orderly');
  new RocketMQConsumerGroup(stack, 'Group', {
    ...tuning,
    definition,
    prefix: 'unit',
    ...stageStores(stack),
    alarmTopic: new sns.Topic(stack, 'Alarms'),
    runbookUrl: 'https://example.com/runbook.md',
    eventBus: new events.EventBus(stack, 'Bus'),
  });
  return Template.fromStack(stack);
}

describe('RocketMQConsumerGroup for an orderly group (synth)', () => {
  let template: Template;
  const queues = () => Object.values(template.findResources('AWS::SQS::Queue'));
  const source = () => queues().find((q) => q.Properties.RedrivePolicy)!;
  const deadLetterQueue = () => queues().find((q) => !q.Properties.RedrivePolicy)!;
  beforeAll(() => {
    template = synth(orderly);
  });

  it('gets a FIFO source queue and a FIFO DLQ: .fifo names, no content-based deduplication, per-group throughput', () => {
    const fifo = {
      FifoQueue: true,
      ContentBasedDeduplication: false,
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    };
    // The CDK props say what packages/runtime/src/config's attributes (the local emulator's) say.
    expect(Object.fromEntries(Object.entries(fifo).map(([k, v]) => [k, String(v)]))).toEqual(FIFO_QUEUE_ATTRIBUTES);
    expect(source().Properties).toMatchObject({ QueueName: 'unit-order-status-consumer-group.fifo', ...fifo });
    expect(deadLetterQueue().Properties).toMatchObject({
      QueueName: 'unit-order-status-consumer-group-dlq.fifo',
      ...fifo,
    });
  });

  it('redrives after 10 × 17 + 1 receives, so SQS never dead-letters a held-back message before its own count does', () => {
    expect(source().Properties.RedrivePolicy.maxReceiveCount).toBe(171);
    const env = Object.values(template.findResources('AWS::Lambda::Function'))[0]!.Properties.Environment.Variables;
    expect(env[CONSUMER_ENV.maxReceiveCount]).toBe('171');
    expect(env[CONSUMER_ENV.retryDelays]).toBe(Array.from({ length: 16 }, () => '3').join(','));
    expect(env.IDEMPOTENCY_TABLE).toBeDefined();
  });

  it('consumes without a batching window, at most 10 records a batch, with partial batch responses', () => {
    const [mapping] = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mapping!.Properties).toMatchObject({ BatchSize: 10, FunctionResponseTypes: ['ReportBatchItemFailures'] });
    expect(mapping!.Properties.MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(source().Properties.VisibilityTimeout).toBe(6 * 30);
  });

  it('alarms on a blocked message group to the alarm topic: the older of SQS’s and the consumer’s message ages, past the retry policy’s time', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    expect(alarms.map((a) => a.AlarmName).filter((n: string) => /oldest|blocked/.test(n))).toEqual([
      'unit-order-status-consumer-group-blocked-group',
    ]);
    const blocked = alarms.find((a) => a.AlarmName.endsWith('blocked-group'))!;
    // 17 deliveries of up to 30 s, and 16 intervals of 3 s
    expect(blocked).toMatchObject({
      Threshold: 17 * 30 + 16 * 3,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(blocked.AlarmDescription).toContain('https://example.com/runbook.md#blocked-message-group');
    const topic = Object.keys(template.findResources('AWS::SNS::Topic'))[0]!;
    expect(blocked.AlarmActions).toEqual([{ Ref: topic }]);
    expect(blocked.OKActions).toEqual([{ Ref: topic }]);
    expect(blocked.Metrics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Expression: 'MAX([FILL(oldest, 0), FILL(returned, 0)])', ReturnData: true }),
        expect.objectContaining({
          Id: 'oldest',
          MetricStat: expect.objectContaining({
            Metric: expect.objectContaining({ MetricName: 'ApproximateAgeOfOldestMessage' }),
            Stat: 'Maximum',
          }),
        }),
        expect.objectContaining({
          Id: 'returned',
          MetricStat: expect.objectContaining({
            Metric: expect.objectContaining({
              Namespace: METRICS_NAMESPACE,
              MetricName: ConsumerMetric.messageGroupWait,
            }),
            Stat: 'Maximum',
          }),
        }),
      ]),
    );
  });

  it('gets no EventBridge route: EventBridge does not keep the order of events', () => {
    expect(template.findResources('AWS::Events::Rule')).toEqual({});
    expect(Object.keys(synth(CONSUMER_GROUPS[0]!).findResources('AWS::Events::Rule'))).toHaveLength(1);
  });

  it.each([
    ['a batch over 10', { batchSize: 20 }, /batchSize is 20 but ordering is 'orderly'/],
    [
      'a batching window',
      { maxBatchingWindow: Duration.seconds(5) },
      /maxBatchingWindowSeconds is 5 but ordering is 'orderly'/,
    ],
    ['packing', { packing: true }, /packing is on \(tuning.packing \/ CONSUMER_PACKING\) but ordering is 'orderly'/],
  ])('refuses %s at synth, naming both settings', (_, tuning, message) => {
    expect(() => synth(orderly, tuning)).toThrow(message);
  });
});
