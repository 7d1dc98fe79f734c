import { randomUUID } from 'node:crypto';
import { CreateEventBusCommand, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { createEventBridge, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { EventBridgeTarget } from '../src/eventbridge-target.ts';
import { envelopeOf, serializeEnvelope } from '../src/received-envelope.ts';
import { receivedMessage } from './support/received-messages.ts';

/** The EventBridge route: PutEvents → a rule on `mq:Topic:SendMessage` → the group's queue. */
describe('EventBridge target on the emulator', () => {
  it('puts the envelope as the event detail, which a rule routes to a queue the consumer parses', async () => {
    // Prepare
    const aws = emulatorConfig(inject('emulatorEndpoint'));
    const eventBridge = createEventBridge(aws);
    const sqs = createSqs(aws);
    const name = `bridge-${randomUUID().slice(0, 8)}`;
    await eventBridge.send(new CreateEventBusCommand({ Name: name }));
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    await eventBridge.send(
      new PutRuleCommand({
        Name: name,
        EventBusName: name,
        EventPattern: JSON.stringify({
          'detail-type': ['mq:Topic:SendMessage'],
          detail: { data: { topic: ['ORDER_TOPIC'] } },
        }),
      }),
    );
    await eventBridge.send(
      new PutTargetsCommand({ Rule: name, EventBusName: name, Targets: [{ Id: 'q', Arn: Attributes!.QueueArn! }] }),
    );
    const target = new EventBridgeTarget(eventBridge, name, 'rocketmq.test', 262_144);
    const messages = Array.from({ length: 12 }, (_, i) => receivedMessage({ keys: [`SO${i}`] }));

    // Act
    const results = await target.forward(
      messages.map((m, i) => ({ id: `m${i}`, body: serializeEnvelope(envelopeOf(m, 'test')) })),
    );

    // Assess
    expect(results.every((r) => r.ok)).toBe(true);
    const delivered: string[] = [];
    for (let polls = 0; polls < 20 && delivered.length < messages.length; polls++) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 300 }),
      );
      delivered.push(...Messages.map((m) => m.Body!));
    }
    const parsed = delivered.map((body) => parseEnvelope(body));
    expect(new Set(parsed.map((p) => p.msgId))).toEqual(new Set(messages.map((m) => m.msgId)));
    expect(parsed[0]!.source).toBe('rocketmq://test');
  });

  it('reports each rejected entry on its own', async () => {
    const eventBridge = createEventBridge(emulatorConfig(inject('emulatorEndpoint')));
    // PutEvents answers 200 with per-entry error codes; the emulator never rejects an entry, so the answer is shaped
    // here.
    eventBridge.middlewareStack.add(
      () => async () =>
        ({
          output: {
            FailedEntryCount: 1,
            Entries: [{ EventId: 'e-1' }, { ErrorCode: 'ThrottlingException', ErrorMessage: 'Rate exceeded' }],
            $metadata: {},
          },
          response: {},
        }) as never,
      { step: 'initialize' },
    );
    const target = new EventBridgeTarget(eventBridge, 'default', 'rocketmq.test', 262_144);
    const results = await target.forward([
      { id: 'a', body: '{}' },
      { id: 'b', body: '{}' },
    ]);
    expect(results).toEqual([
      { id: 'a', ok: true },
      { id: 'b', ok: false, reason: 'ThrottlingException: Rate exceeded' },
    ]);
  });
});
