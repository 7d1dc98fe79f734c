import { describe, expect, it } from 'vitest';
import {
  BRIDGE_NOTICE_KIND,
  DEAD_LETTER_KIND_ATTRIBUTE,
  NOTICE_REASON_ATTRIBUTE,
  NoticeReason,
  noticeBody,
  readNotice,
  refetchCommands,
} from '../../../src/rocketmq/dead-letter-notice.ts';
import { buildEnvelope, writeEnvelope } from '../../../src/rocketmq/envelope-writer.ts';

const MSG_ID = '0A1B2C3D2A9F18B4AAC2000000010001';
const DETAIL = 'envelope is 300412 bytes; the target accepts at most 262144';
const envelope = buildEnvelope({
  topic: 'ORDER_TOPIC',
  msgId: MSG_ID,
  offsetMsgId: '7F00000100002A9F0000000000001A2B',
  body: 'x'.repeat(1000),
  brokerName: 'broker-a',
  queueId: 3,
  queueOffset: 1234,
  storeTimestamp: 1_767_594_151_000,
});
const marked = { [DEAD_LETTER_KIND_ATTRIBUTE]: BRIDGE_NOTICE_KIND, [NOTICE_REASON_ATTRIBUTE]: 'BODY_TOO_LARGE' };

describe('the bridge’s dead-letter notice', () => {
  it('is the envelope without its body, marked in the body and read back with where the body still is', () => {
    // Act
    const body = noticeBody(envelope, NoticeReason.BodyTooLarge, DETAIL);
    // Assess
    expect(JSON.parse(body)).toMatchObject({
      deadletterkind: 'bridge-notice',
      deadletterreason: 'BODY_TOO_LARGE',
      data: { msgId: MSG_ID, body: '', bodyOmitted: true },
    });
    const expected = {
      reason: 'BODY_TOO_LARGE',
      detail: DETAIL,
      body: {
        topic: 'ORDER_TOPIC',
        msgId: MSG_ID,
        offsetMsgId: '7F00000100002A9F0000000000001A2B',
        brokerName: 'broker-a',
        queueId: 3,
        queueOffset: 1234,
        storeTimestamp: 1_767_594_151_000,
      },
    };
    expect(readNotice(body, marked)).toEqual(expected);
    // Without its attributes (after a consumer's failure router replaced them), the body still says what it is.
    expect(readNotice(body, {})).toEqual(expected);
  });

  it('recognises notices written before they were marked: by the reason attribute, or by the body alone', () => {
    const older = JSON.stringify({
      ...envelope,
      deadletterreason: 'BODY_TOO_LARGE',
      deadletterdetail: DETAIL,
      data: { ...envelope.data, body: '', bodyOmitted: true },
    });
    expect(readNotice(older, { [NOTICE_REASON_ATTRIBUTE]: 'BODY_TOO_LARGE' })?.reason).toBe('BODY_TOO_LARGE');
    expect(readNotice(older, {})?.detail).toBe(DETAIL);
    // Only the attribute is left of it: still a notice, without position.
    expect(readNotice('not json', { [NOTICE_REASON_ATTRIBUTE]: 'BODY_TOO_LARGE' })).toEqual({
      reason: 'BODY_TOO_LARGE',
      detail: undefined,
      body: {},
    });
    expect(readNotice('[]', { [DEAD_LETTER_KIND_ATTRIBUTE]: BRIDGE_NOTICE_KIND })?.reason).toBe('no reason recorded');
  });

  it('is no notice for any other letter: an envelope with its body, the failure router’s, or no JSON', () => {
    expect(readNotice(writeEnvelope({ topic: 'T', msgId: MSG_ID, body: '{}' }), {})).toBeUndefined();
    expect(
      readNotice(writeEnvelope({ topic: 'T', msgId: MSG_ID, body: '{}' }), { 'failure-code': 'X' }),
    ).toBeUndefined();
    // A body that names a reason but still has its body is an application's, not the bridge's.
    expect(
      readNotice(JSON.stringify({ deadletterreason: 'BODY_TOO_LARGE', data: { body: '{}' } }), {}),
    ).toBeUndefined();
    expect(readNotice('{"specversion":', {})).toBeUndefined();
  });

  it('ignores position fields that are not what RocketMQ writes', () => {
    const odd = JSON.stringify({
      deadletterkind: BRIDGE_NOTICE_KIND,
      deadletterreason: '',
      data: { topic: '', msgId: 7, queueId: -1, queueOffset: 1.5, storeTimestamp: '1' },
    });
    expect(readNotice(odd, {})).toEqual({ reason: 'no reason recorded', detail: undefined, body: {} });
  });

  it('says how to fetch the body from RocketMQ, most precise first', () => {
    const v4 = readNotice(noticeBody(envelope, NoticeReason.BodyTooLarge, DETAIL), marked)!;
    expect(refetchCommands(v4.body)).toEqual([
      'mqadmin queryMsgByOffset -n <nameserver> -t ORDER_TOPIC -b broker-a -i 3 -o 1234',
      'mqadmin queryMsgById -n <nameserver> -i 7F00000100002A9F0000000000001A2B',
      `mqadmin queryMsgByUniqueKey -n <nameserver> -t ORDER_TOPIC -i ${MSG_ID}`,
    ]);
    // RocketMQ 5 sends no commit-log id; a notice without a position keeps the unique key only.
    expect(refetchCommands({ topic: 'ORDER_TOPIC', msgId: MSG_ID })).toEqual([
      `mqadmin queryMsgByUniqueKey -n <nameserver> -t ORDER_TOPIC -i ${MSG_ID}`,
    ]);
    expect(refetchCommands({})).toEqual([]);
  });
});
