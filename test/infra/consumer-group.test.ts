import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONSUMER_GROUPS } from '../../lib/config/resources.ts';
import { RocketMQConsumerGroup } from '../../infra/consumer-group.ts';
import { ConsumerTables } from '../../infra/tables.ts';

const points = CONSUMER_GROUPS.find((g) => g.group === 'point-consumer-group')!;

/** One group in a bare stack: cheaper than the whole app when only the construct's switches are under test. */
function synthGroup(filterAtEventSource: boolean | undefined): Template {
  const stack = new Stack(new App(), 'GroupOnly');
  new RocketMQConsumerGroup(stack, 'Points', {
    definition: points,
    prefix: 'unit',
    tables: new ConsumerTables(stack, 'Tables', { prefix: 'unit' }),
    alarmTopic: new sns.Topic(stack, 'Alarms'),
    runbookUrl: 'https://example.com/runbook.md',
    filterAtEventSource,
  });
  return Template.fromStack(stack);
}

describe('RocketMQConsumerGroup: where the tag filter runs', () => {
  let filtered: Template;
  let unfiltered: Template;
  beforeAll(() => {
    filtered = synthGroup(undefined);
    unfiltered = synthGroup(false);
  });

  it('filters on the tag in the event source by default', () => {
    filtered.hasResourceProperties('AWS::Lambda::EventSourceMapping', { FilterCriteria: { Filters: Match.anyValue() } });
  });

  it('with filterAtEventSource: false, lets every message reach the consumer (unreadable bodies are dead-lettered there)', () => {
    const mappings = Object.values(unfiltered.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(1);
    expect(mappings[0]!.Properties.FilterCriteria).toBeUndefined();
  });
});
