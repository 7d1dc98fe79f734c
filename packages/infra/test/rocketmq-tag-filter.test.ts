import { randomUUID } from 'node:crypto';
import {
  CreateEventBusCommand,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { createEventBridge, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope, ROCKETMQ_EVENT_TYPE, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { EVENT_FILTER_QUOTA, tagFilterPatterns, tagRoutePatterns } from '../src/rocketmq-tag-filter.ts';

const envelope = (tags?: string, topic = 'ORDER_TOPIC') =>
  writeEnvelope({ topic, msgId: '0A1B2C3D2A9F18B4AAC24517FD7B0005', body: '{}', tags });
const eventBridge = (detail: unknown) =>
  JSON.stringify({ version: '0', 'detail-type': 'mq:Topic:SendMessage', source: 'bridge', detail });
/** Lambda's matching for the shapes used here: nested objects, and arrays of allowed strings. */
const matches = (pattern: any, value: any): boolean =>
  Array.isArray(pattern)
    ? pattern.includes(value)
    : typeof value === 'object' && value !== null && Object.entries(pattern).every(([k, p]) => matches(p, value[k]));
const admitted = (tagExpression: string, body: string) => {
  const patterns = tagFilterPatterns(tagExpression);
  return patterns.length === 0 || patterns.some((p) => matches(p, { body: JSON.parse(body) }));
};
/** The CloudEvent of a PAID message whose tag is only in `systemProperties.TAGS` (Alibaba style). */
const alibabaStyle = () => {
  const cloudEvent = JSON.parse(envelope('PAID'));
  delete cloudEvent.data.tags;
  return cloudEvent;
};

describe('RocketMQ tag filter of the event source', () => {
  it('passes every wrapping the parser accepts when the tag is subscribed, and nothing else', () => {
    const paid = JSON.parse(envelope('PAID'));
    const bodies = [envelope('PAID'), eventBridge(paid), eventBridge(paid.data)];
    for (const body of bodies) {
      expect(parseEnvelope(body).tags).toBe('PAID');
      expect(admitted('PAID', body)).toBe(true);
      expect(admitted('PAID || FINISHED', body)).toBe(true);
      expect(admitted('FINISHED', body)).toBe(false);
    }
    expect(admitted('PAID', envelope())).toBe(false);
    expect(admitted('*', envelope())).toBe(true);
  });

  it('admits Alibaba-style events that carry the tag only in systemProperties.TAGS', () => {
    expect(admitted('PAID', JSON.stringify(alibabaStyle()))).toBe(true);
    expect(admitted('PAID', eventBridge(alibabaStyle()))).toBe(true);
  });

  it("stays within Lambda's default quota of filters per event source", () => {
    expect(tagFilterPatterns('PAID || FINISHED').length).toBeLessThanOrEqual(EVENT_FILTER_QUOTA);
    expect(tagFilterPatterns('*')).toEqual([]);
  });
});

describe('the bus rule of a filtered group (emulator EventBridge)', () => {
  it('routes only its topic’s subscribed tags to the queue, so the event source filter drops nothing the bridge writes', async () => {
    // Prepare: a bus, the group's rule as the CDK app writes it, its queue
    const aws = emulatorConfig(inject('emulatorEndpoint'));
    const events = createEventBridge(aws);
    const sqs = createSqs(aws);
    const name = `route-${randomUUID().slice(0, 8)}`;
    await events.send(new CreateEventBusCommand({ Name: name }));
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    const pattern = { 'detail-type': [ROCKETMQ_EVENT_TYPE], detail: { $or: tagRoutePatterns('ORDER_TOPIC', 'PAID') } };
    await events.send(new PutRuleCommand({ Name: name, EventBusName: name, EventPattern: JSON.stringify(pattern) }));
    await events.send(
      new PutTargetsCommand({ Rule: name, EventBusName: name, Targets: [{ Id: 'queue', Arn: Attributes!.QueueArn! }] }),
    );
    const paid = JSON.parse(envelope('PAID'));
    const details: Record<string, unknown> = {
      'PAID, CloudEvent': paid,
      'PAID, bare data': paid.data,
      'PAID, Alibaba style': alibabaStyle(),
      'PAID, bare data, Alibaba style': alibabaStyle().data,
      'FINISHED, CloudEvent': JSON.parse(envelope('FINISHED')),
      'FINISHED, bare data': JSON.parse(envelope('FINISHED')).data,
      untagged: JSON.parse(envelope()),
      'PAID of another topic': JSON.parse(envelope('PAID', 'REFUND_TOPIC')),
    };
    // Act
    await events.send(
      new PutEventsCommand({
        Entries: Object.entries(details).map(([label, detail]) => ({
          EventBusName: name,
          Source: 'bridge',
          DetailType: ROCKETMQ_EVENT_TYPE,
          Detail: JSON.stringify({ ...(detail as object), label }),
        })),
      }),
    );
    const delivered: string[] = [];
    for (let polls = 0; polls < 5; polls++) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: polls === 0 ? 1 : 0,
        }),
      );
      delivered.push(...Messages.map((m) => m.Body!));
    }
    // Assess: the queue gets exactly the subscribed messages, and the event source filter lets
    // each through but the one shape its quota of five patterns leaves out: that one it drops, and alarms.
    const labels = (bodies: string[]) => bodies.map((body) => JSON.parse(body).detail.label).sort();
    expect(labels(delivered)).toEqual([
      'PAID, Alibaba style',
      'PAID, CloudEvent',
      'PAID, bare data',
      'PAID, bare data, Alibaba style',
    ]);
    expect(labels(delivered.filter((body) => !admitted('PAID', body)))).toEqual(['PAID, bare data, Alibaba style']);
  });

  it('routes the whole topic for a group subscribed to *', () => {
    expect(tagRoutePatterns('ORDER_TOPIC', '*')).toEqual([
      { data: { topic: ['ORDER_TOPIC'] } },
      { topic: ['ORDER_TOPIC'] },
    ]);
  });
});
