import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { decodeDeadLetter } from '../../../lib/operations/dead-letter-inspection.ts';
import { type RedriveGuard, redriveRefusal } from '../../../lib/operations/dead-letter-redrive.ts';

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
