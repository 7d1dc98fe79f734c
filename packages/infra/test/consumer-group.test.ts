import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import { stageStores } from '@rocketmq-lambda/tools/testing/stage-stores.ts';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { RocketMQConsumerGroup } from '../src/consumer-group.ts';
import { tagRoutePatterns } from '../src/rocketmq-tag-filter.ts';

const points = CONSUMER_GROUPS.find((g) => g.group === 'point-consumer-group')!;

/**
 * One group in a bare stack, with a bus: cheaper than the whole app when only the construct's switches are under test.
 */
function synthGroup(filterAtEventSource: boolean | undefined, definition: ConsumerGroupDefinition = points): Template {
  const stack = new Stack(new App(), 'GroupOnly');
  new RocketMQConsumerGroup(stack, 'Points', {
    definition,
    prefix: 'unit',
    ...stageStores(stack),
    alarmTopic: new sns.Topic(stack, 'Alarms'),
    runbookUrl: 'https://example.com/runbook.md',
    eventBus: new events.EventBus(stack, 'Bus'),
    filterAtEventSource,
  });
  return Template.fromStack(stack);
}

const filteredOutAlarms = (template: Template) =>
  Object.values(
    template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'FilteredOutEventCount' } }),
  );
const routePattern = (template: Template) =>
  JSON.parse(JSON.stringify(Object.values(template.findResources('AWS::Events::Rule'))[0]!.Properties.EventPattern));

describe('RocketMQConsumerGroup: where the tag filter runs, and what shows its drops', () => {
  let filtered: Template;
  let unfiltered: Template;
  let everything: Template;
  beforeAll(() => {
    filtered = synthGroup(undefined);
    unfiltered = synthGroup(false);
    everything = synthGroup(undefined, { ...points, group: 'audit-consumer-group', tagExpression: '*' });
  });

  it('filters on the tag in the event source by default, and routes only the subscribed tags from the bus', () => {
    filtered.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FilterCriteria: { Filters: Match.anyValue() },
      MetricsConfig: { Metrics: ['EventCount'] },
    });
    expect(routePattern(filtered)).toEqual({
      source: [{ prefix: 'rocketmq.' }],
      'detail-type': ['mq:Topic:SendMessage'],
      detail: { $or: tagRoutePatterns('ORDER_TOPIC', 'PAID') },
    });
  });

  it('alarms on the first message the filter drops, to the alarm topic, with the event source mapping’s own metric', () => {
    const [alarm] = filteredOutAlarms(filtered);
    const mapping = Object.keys(filtered.findResources('AWS::Lambda::EventSourceMapping'))[0]!;
    expect(alarm!.Properties).toMatchObject({
      AlarmName: 'unit-point-consumer-group-filtered-out',
      Namespace: 'AWS/Lambda',
      MetricName: 'FilteredOutEventCount',
      Dimensions: [{ Name: 'EventSourceMappingUUID', Value: { Ref: mapping } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    const topic = Object.keys(filtered.findResources('AWS::SNS::Topic'))[0]!;
    expect(alarm!.Properties.AlarmActions).toEqual([{ Ref: topic }]);
    expect(alarm!.Properties.OKActions).toEqual([{ Ref: topic }]);
    expect(alarm!.Properties.AlarmDescription).toContain('https://example.com/runbook.md#event-source-filter-drops');
    expect(filteredOutAlarms(filtered)).toHaveLength(1);
  });

  it('with filterAtEventSource: false, lets every message reach the consumer (unreadable bodies are dead-lettered there): every tag from the bus, no drops to alarm on', () => {
    const mappings = Object.values(unfiltered.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(1);
    expect(mappings[0]!.Properties.FilterCriteria).toBeUndefined();
    expect(routePattern(unfiltered).detail).toEqual({
      $or: [{ data: { topic: ['ORDER_TOPIC'] } }, { topic: ['ORDER_TOPIC'] }],
    });
    expect(filteredOutAlarms(unfiltered)).toEqual([]);
  });

  it('a group subscribed to * has no filter, so no such alarm either', () => {
    expect(
      Object.values(everything.findResources('AWS::Lambda::EventSourceMapping'))[0]!.Properties.FilterCriteria,
    ).toBeUndefined();
    expect(filteredOutAlarms(everything)).toEqual([]);
  });
});

describe('RocketMQConsumerGroup: an entry whose function could not start fails the synth', () => {
  it('a lease group whose tables omit idempotency, naming the missing table', () => {
    const coupons = CONSUMER_GROUPS.find((g) => g.group === 'coupon-consumer-group')!;
    const synth = () => synthGroup(undefined, { ...coupons, tables: [] });
    expect(synth).toThrow(
      "consumer group coupon-consumer-group: strategy 'lease' keeps its records in the idempotency table, but tables [] does not list 'idempotency'",
    );
  });
});
