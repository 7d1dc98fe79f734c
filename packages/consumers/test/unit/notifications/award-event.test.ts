import { OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import { InvalidPayloadError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { describe, expect, it } from 'vitest';
import { parseAwardEvent } from '../../../src/notifications/index.ts';

const BODY = JSON.stringify({ orderNo: 'SO1', userId: 88372, points: 300 });
const EVENT = '393D6061314BC4BCD33C9DBA67A98CDA';
const AWARD = { orderNo: 'SO1', userId: '88372', points: 300 };

describe('parseAwardEvent: the award and the event id the notification group keys on', () => {
  it('takes the event id from the OUTBOX_EVENT_ID property, whatever the keys say', () => {
    const message = { keys: ['SO1'], userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: EVENT } };
    expect(parseAwardEvent(BODY, message)).toEqual({ eventId: EVENT, award: AWARD });
  });

  it('falls back to the first key when a carrier kept the keys and not the properties', () => {
    expect(parseAwardEvent(BODY, { keys: [EVENT, 'SO1'], userProperties: {} })).toEqual({
      eventId: EVENT,
      award: AWARD,
    });
  });

  it.each([
    ['neither a property nor a key', { keys: [], userProperties: {} }, /no event id/],
    ['an event id with a space', { keys: [], userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: 'A B' } }, /event id:/],
  ])('refuses a message with %s as INVALID_PAYLOAD', (_, message, why) => {
    expect(() => parseAwardEvent(BODY, message)).toThrow(InvalidPayloadError);
    expect(() => parseAwardEvent(BODY, message)).toThrow(why);
  });

  it('refuses an award body the points schema refuses', () => {
    const message = { keys: [EVENT], userProperties: {} };
    expect(() => parseAwardEvent(JSON.stringify({ orderNo: 'SO1', userId: 1, points: 0 }), message)).toThrow(
      InvalidPayloadError,
    );
  });
});
