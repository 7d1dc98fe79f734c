import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { sqsText } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  BRIDGE_NOTICE_KIND,
  DEAD_LETTER_KIND_ATTRIBUTE,
  NOTICE_REASON_ATTRIBUTE,
  NoticeReason,
  noticeBody,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describeError } from './forward-target.ts';
import type { Envelope } from './received-envelope.ts';

/** Why a message went to the group's DLQ instead of its queue. */
export const DeadLetterReason = NoticeReason;
export type DeadLetterReason = NoticeReason;

/** SQS message attribute carrying the reason, so DLQ alarms and redrive tools can tell causes apart. */
export const DEAD_LETTER_REASON_ATTRIBUTE = NOTICE_REASON_ATTRIBUTE;

export interface DeadLetter {
  readonly envelope: Envelope;
  readonly reason: DeadLetterReason;
  /** Human-readable detail, e.g. the size and the limit. */
  readonly detail: string;
  /** FIFO DLQs need a group; the route's message group keeps the notices in order with their peers. */
  readonly messageGroupId?: string;
}

/**
 * The group's DLQ path for what the bridge cannot forward: a notice (packages/runtime/src/rocketmq/dead-letter-notice.ts),
 * the envelope with the body left out plus the reason, marked as a bridge notice in its SQS
 * attributes and its body, so `ops dlq` shows it with its own reason and never sends it to the
 * consumer. The body stays retrievable in RocketMQ by topic, queue and offset (or msgId) for as
 * long as the broker keeps its commit log.
 */
export class DeadLetterQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(letter: DeadLetter): Promise<{ ok: true } | { ok: false; reason: string }> {
    try {
      await this.sqs.send(
        new SendMessageCommand({
          QueueUrl: this.queueUrl,
          MessageBody: noticeBody(letter.envelope, letter.reason, letter.detail),
          MessageAttributes: {
            [DEAD_LETTER_KIND_ATTRIBUTE]: { DataType: 'String', StringValue: BRIDGE_NOTICE_KIND },
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
