import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it } from 'vitest';
import { decodeDeadLetter } from '../../../src/operations/dead-letter-inspection.ts';
import { type RedriveGuard, redriveMessageGroup, redriveRefusal } from '../../../src/operations/dead-letter-redrive.ts';

const OWN = 'arn:aws:sqs:us-east-1:123456789012:prod-point-consumer-group';
const OTHER = 'arn:aws:sqs:us-east-1:123456789012:prod-coupon-consumer-group';
const NOW = new Date('2026-11-30T00:00:00.000Z');

/** A letter as the failure router leaves it (with `source-queue`), or as the redrive policy does (no attributes). */
function letter(sourceQueue?: string) {
  const attributes: Record<string, MessageAttributeValue> = sourceQueue
    ? {
        'failure-code': { DataType: 'String', StringValue: 'RETRIES_EXHAUSTED' },
        'source-queue': { DataType: 'String', StringValue: sourceQueue },
      }
    : {};
  return decodeDeadLetter({
    MessageId: 'm-1',
    ReceiptHandle: 'r',
    Body: 'x',
    MessageAttributes: attributes,
    Attributes: { SentTimestamp: String(NOW.getTime()) },
  });
}

const guard = (targetQueueArn: string | undefined): RedriveGuard => ({
  targetQueueArn,
  namedReasons: [],
  horizonMs: undefined,
  force: false,
});

describe('redriveRefusal: the recorded source queue', () => {
  it.each([
    ['recorded from the target', letter(OWN), guard(OWN), undefined],
    ['moved by the redrive policy (nothing recorded)', letter(), guard(OTHER), undefined],
    [
      'recorded from another queue',
      letter(OWN),
      guard(OTHER),
      `its recorded source queue is ${OWN}, not the redrive target ${OTHER}`,
    ],
    ['recorded, with no target to compare (the library without the check)', letter(OWN), guard(undefined), undefined],
  ])('a letter %s', (_name, deadLetter, redriveGuard, refusal) => {
    const why = redriveRefusal(deadLetter, redriveGuard, NOW);
    if (refusal === undefined) expect(why).toBeUndefined();
    else expect(why).toContain(refusal);
  });
});

describe('redriveRefusal: a letter goes only to a queue that redrives into its DLQ', () => {
  const sources = (deadLetterSourceArns: readonly string[], target = OWN): RedriveGuard => ({
    ...guard(target),
    deadLetterSourceArns,
  });
  const movedBySqs = (from: string) =>
    redriveRefusal(letter(), sources([OWN]), NOW, { deadLetterQueueSourceArn: from });

  it.each([
    ['no record, the DLQ’s only source is the target', letter(), sources([OWN]), undefined],
    [
      'no record, the target is not the DLQ’s source',
      letter(),
      sources([OWN], OTHER),
      `it records no source queue (SQS's redrive policy moved it), so it came from a queue that redrives into this DLQ (${OWN}), and the redrive target ${OTHER} is not the only one`,
    ],
    [
      'no record, two queues redrive into the DLQ',
      letter(),
      sources([OWN, OTHER]),
      `so it came from a queue that redrives into this DLQ (${OWN}, ${OTHER}), and the redrive target ${OWN} is not the only one`,
    ],
    [
      'recorded from the target, which does not redrive into the DLQ',
      letter(OTHER),
      sources([OWN], OTHER),
      `the redrive target ${OTHER} is not a queue whose redrive policy moves messages into this DLQ (${OWN})`,
    ],
    ['recorded from the target, one of two that redrive into the DLQ', letter(OWN), sources([OWN, OTHER]), undefined],
  ])('%s', (_name, deadLetter, redriveGuard, refusal) => {
    const why = redriveRefusal(deadLetter, redriveGuard, NOW);
    if (refusal === undefined) expect(why).toBeUndefined();
    else expect(why).toContain(refusal);
  });

  it('takes SQS’s own DeadLetterQueueSourceArn over anything a sender recorded', () => {
    expect(movedBySqs(OWN)).toBeUndefined();
    expect(movedBySqs(OTHER)).toContain(`its recorded source queue is ${OTHER}, not the redrive target ${OWN}`);
  });
});

describe('redriveMessageGroup: a FIFO letter goes back in the group its envelope gives', () => {
  const fifoLetter = (body: string) =>
    decodeDeadLetter({ MessageId: 'm-1', ReceiptHandle: 'r', Body: body, Attributes: { MessageGroupId: 'g' } });
  const envelope = writeEnvelope({
    topic: 'ORDER_TOPIC',
    msgId: '0A1B2C3D2A9F18B4AAC24517FD7B0005',
    keys: ['SO-1'],
    tags: 'PAID',
    body: '{"orderNo":"SO-1"}',
  });
  const BY_KEY = { from: 'key' } as const;

  it('a standard queue’s letter has no group; without a derivation the letter’s own is kept', () => {
    expect(redriveMessageGroup(letter(), undefined, BY_KEY)).toEqual({});
    expect(redriveMessageGroup(fifoLetter(envelope), 'SO-9', undefined)).toEqual({ group: 'SO-9' });
  });

  it('sends it in the derived group when the letter’s agrees', () => {
    expect(redriveMessageGroup(fifoLetter(envelope), 'SO-1', BY_KEY)).toEqual({ group: 'SO-1' });
  });

  it('holds it back when the letter’s group is not the one its envelope gives', () => {
    expect(redriveMessageGroup(fifoLetter(envelope), 'USER-1', BY_KEY)).toEqual({
      refusal:
        'its message group "USER-1" is not the one its envelope gives ("SO-1"): sent back in it, the order would be consumed out of sequence. Inspect it with dlq show',
    });
    expect(
      redriveRefusal(fifoLetter(envelope), { ...guard(OWN), messageGroupFrom: BY_KEY }, NOW, {
        messageGroupId: 'USER-1',
      }),
    ).toContain('is not the one its envelope gives');
  });

  it('holds back a FIFO letter whose body is not an envelope', () => {
    expect(redriveMessageGroup(fifoLetter('{"oops"'), 'g', BY_KEY)).toEqual({
      refusal:
        'it is a FIFO letter whose body is not an envelope (body is not JSON): its message group cannot be derived, and the consumer would dead-letter it again',
    });
  });
});
