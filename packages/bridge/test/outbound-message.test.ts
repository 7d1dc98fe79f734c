import { eventIdOf, OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import { parseEnvelope, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it } from 'vitest';
import { producedMessageOf } from '../src/outbound-message.ts';

const eventId = eventIdOf('point-consumer-group', 'SO-1', 0);

describe('the message the outbound route produces for a relayed envelope', () => {
  it('keeps topic, tag, body, properties and message group, with the event id first among the keys', () => {
    // Prepare
    const envelope = parseEnvelope(
      writeEnvelope({
        topic: 'POINTS_TOPIC',
        msgId: eventId,
        tags: 'POINTS_AWARDED',
        keys: [eventId, 'SO-1'],
        body: '{"orderNo":"SO-1"}',
        userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId, origin: 'points' },
        messageGroup: 'u1',
      }),
    );

    // Act
    const produced = producedMessageOf(envelope);

    // Assess
    expect(produced).toEqual({
      eventId,
      topic: 'POINTS_TOPIC',
      tag: 'POINTS_AWARDED',
      keys: [eventId, 'SO-1'],
      body: Buffer.from('{"orderNo":"SO-1"}'),
      userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId, origin: 'points' },
      messageGroup: 'u1',
    });
  });

  it('takes the msgId as the event id when the property is missing, and puts it first and in the properties', () => {
    const envelope = parseEnvelope(
      writeEnvelope({ topic: 'T', msgId: eventId, tags: 'A', keys: ['SO-1', eventId], body: 'x' }),
    );

    const produced = producedMessageOf(envelope);

    expect(produced).toMatchObject({
      eventId,
      keys: [eventId, 'SO-1'],
      userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId },
      messageGroup: undefined,
    });
  });
});
