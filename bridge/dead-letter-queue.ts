import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { sqsText } from '../lib/aws/index.ts';
import { describeError } from './forward-target.ts';
import type { Envelope } from './received-envelope.ts';

/** Why a message went to the group's DLQ instead of its queue. */
export const DeadLetterReason = {
  /** The envelope exceeds the target's message size limit; retrying cannot fix it. */
  BodyTooLarge: 'BODY_TOO_LARGE',
} as const;
export type DeadLetterReason = (typeof DeadLetterReason)[keyof typeof DeadLetterReason];

/** SQS message attribute carrying the reason, so DLQ alarms and redrive tools can tell causes apart. */
export const DEAD_LETTER_REASON_ATTRIBUTE = 'BridgeDeadLetterReason';

export interface DeadLetter {
  readonly envelope: Envelope;
  readonly reason: DeadLetterReason;
  /** Human-readable detail, e.g. the size and the limit. */
  readonly detail: string;
  /** FIFO DLQs need a group; the route's message group keeps the notices in order with their peers. */
  readonly messageGroupId?: string;
}

/**
 * The group's DLQ path for what the bridge cannot forward. The notice is the envelope with the body
 * left out (the body is why it did not fit), plus the reason as CloudEvents extension attributes and
 * as an SQS message attribute. The body stays retrievable in RocketMQ by topic, queue and offset
 * (or msgId) for as long as the broker keeps its commit log.
 */
export class DeadLetterQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(letter: DeadLetter): Promise<{ ok: true } | { ok: false; reason: string }> {
    const notice = {
      ...letter.envelope,
      deadletterreason: letter.reason,
      deadletterdetail: letter.detail,
      data: { ...letter.envelope.data, body: '', bodyEncoding: 'utf8' as const, bodyOmitted: true },
    };
    try {
      await this.sqs.send(
        new SendMessageCommand({
          QueueUrl: this.queueUrl,
          MessageBody: JSON.stringify(notice),
          MessageAttributes: {
            [DEAD_LETTER_REASON_ATTRIBUTE]: { DataType: 'String', StringValue: sqsText(letter.reason, 256) },
          },
          ...(letter.messageGroupId !== undefined
            ? {
                MessageGroupId: letter.messageGroupId,
                MessageDeduplicationId: `${letter.envelope.id}-${letter.reason}`,
              }
            : {}),
        }),
      );
      return { ok: true };
    } catch (err) {
      return { ok: false, reason: describeError(err) };
    }
  }
}
