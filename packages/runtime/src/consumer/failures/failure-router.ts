import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  GetQueueUrlCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { sqsText } from '../../aws/index.ts';
import { RetrySchedule } from '../../rocketmq/index.ts';
import type { Disposition } from '../settlement.ts';
import { messageGroupOf, REDRIVE_COUNT_ATTRIBUTE, sentAtOf } from '../sqs-attributes.ts';
import type { ConsumptionError } from './errors.ts';

/** Message attributes a dead letter carries, so a person (and `ops dlq`) can see why it is there. */
export const DEAD_LETTER_ATTRIBUTES = {
  code: 'failure-code',
  classification: 'failure-class',
  reason: 'failure-reason',
  group: 'consumer-group',
  msgId: 'rocketmq-msg-id',
  key: 'idempotency-key',
  attempt: 'attempt',
  sourceQueue: 'source-queue',
  deadLetteredAt: 'dead-lettered-at',
  /** When SQS took the record into the source queue (its `SentTimestamp`, which no sender sets). */
  sourceSentAt: 'source-sent-at',
} as const;

/** SQS allows 256 KB per attribute value, but a reason longer than this helps nobody. */
const MAX_REASON_CHARS = 1000;
/** Every other attribute is an id, a code or a timestamp; an attacker-chosen key is cut here. */
const MAX_ATTRIBUTE_CHARS = 256;

export interface FailureRouterOptions {
  sqs: SQSClient;
  group: string;
  /** The group's DLQ. Permanent errors and spent retries are sent here with their reason. */
  deadLetterQueueUrl: string;
  schedule?: RetrySchedule;
  now?: () => number;
}

const SQS_MAX_VISIBILITY_SECONDS = 12 * 3600;

/**
 * Gives a failed record RocketMQ's fate on SQS: a transient failure waits the scheduled
 * delay for its attempt (the record's visibility is changed, then it is reported as a
 * batch item failure); a permanent failure, or a transient one whose retries are spent,
 * is sent to the DLQ with its reason and acknowledged. The queue's redrive policy
 * (17 receives) remains the backstop for crashes that never reach this code.
 */
export class FailureRouter {
  readonly schedule: RetrySchedule;
  private readonly queueUrls = new Map<string, Promise<string>>();

  constructor(private readonly options: FailureRouterOptions) {
    this.schedule = options.schedule ?? new RetrySchedule();
  }

  async route(
    record: SQSRecord,
    error: ConsumptionError,
    context: { attempt: number; msgId?: string; key?: string },
  ): Promise<Disposition> {
    if (error.classification === 'transient') {
      const next = this.schedule.afterFailedAttempt(context.attempt);
      if (next.action === 'retry') {
        const delaySeconds = this.stretchToHint(next.delaySeconds, error.retryNotBefore);
        await this.delay(record, delaySeconds);
        return { action: 'retry', delaySeconds };
      }
    }
    const code = error.classification === 'transient' ? 'RETRIES_EXHAUSTED' : error.code;
    try {
      await this.deadLetter(record, error, code, context);
      return { action: 'dead-letter', code };
    } catch {
      // Leave the record in the source queue: the redrive policy or the next delivery
      // dead-letters it. Acknowledging here would lose it.
      return { action: 'retry-dead-letter' };
    }
  }

  /**
   * Makes records returned unprocessed (held back behind a failed message of their group)
   * visible again at once. Left alone they would stay in flight for the queue's visibility
   * timeout, and SQS FIFO delivers nothing of a group while any of its messages is in flight:
   * the group would wait minutes instead of its failed message's retry interval. Visible, they
   * still wait behind that message. A record not released comes back later, never out of order.
   */
  async release(records: readonly SQSRecord[]): Promise<void> {
    if (records.length === 0) return;
    try {
      const QueueUrl = await this.queueUrl(records[0]!.eventSourceARN);
      await this.options.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl,
          Entries: records.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle, VisibilityTimeout: 0 })),
        }),
      );
    } catch {
      // As above: its group waits for the queue's visibility timeout instead.
    }
  }

  private stretchToHint(delaySeconds: number, retryNotBefore: number | undefined): number {
    if (retryNotBefore === undefined) return delaySeconds;
    const untilHint = Math.ceil((retryNotBefore - (this.options.now ?? Date.now)()) / 1000);
    return Math.min(SQS_MAX_VISIBILITY_SECONDS, Math.max(delaySeconds, untilHint));
  }

  private async delay(record: SQSRecord, delaySeconds: number): Promise<void> {
    try {
      const QueueUrl = await this.queueUrl(record.eventSourceARN);
      await this.options.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: record.receiptHandle,
          VisibilityTimeout: delaySeconds,
        }),
      );
    } catch {
      // Without the delay the record still comes back after the queue's visibility
      // timeout: sooner than RocketMQ would retry, never lost.
    }
  }

  private async deadLetter(
    record: SQSRecord,
    error: ConsumptionError,
    code: string,
    context: { attempt: number; msgId?: string; key?: string },
  ) {
    const attributes: Record<string, string | undefined> = {
      [DEAD_LETTER_ATTRIBUTES.code]: code,
      [DEAD_LETTER_ATTRIBUTES.classification]: error.classification,
      // Spent retries are coded RETRIES_EXHAUSTED; the reason keeps the last error's own code.
      [DEAD_LETTER_ATTRIBUTES.reason]:
        sqsText(code === error.code ? error.message : `${error.code}: ${error.message}`, MAX_REASON_CHARS) ||
        error.code,
      [DEAD_LETTER_ATTRIBUTES.group]: this.options.group,
      [DEAD_LETTER_ATTRIBUTES.msgId]: context.msgId,
      [DEAD_LETTER_ATTRIBUTES.key]: context.key,
      [DEAD_LETTER_ATTRIBUTES.attempt]: String(context.attempt),
      [DEAD_LETTER_ATTRIBUTES.sourceQueue]: record.eventSourceARN,
      [DEAD_LETTER_ATTRIBUTES.deadLetteredAt]: new Date().toISOString(),
      // A letter that was redriven and failed again keeps its count.
      [REDRIVE_COUNT_ATTRIBUTE]: record.messageAttributes?.[REDRIVE_COUNT_ATTRIBUTE]?.stringValue,
    };
    // SQS allows 10 attributes. The source queue's sent time fits whenever msgId or key is not
    // recorded, as for every unauthenticated envelope: `ops dlq resign` dates a letter by it,
    // since the envelope's own store time is signed with the key that may have leaked.
    const sentAt = sentAtOf(record);
    if (Object.values(attributes).filter((v) => v !== undefined && v !== '').length < 10 && sentAt !== undefined)
      attributes[DEAD_LETTER_ATTRIBUTES.sourceSentAt] = new Date(sentAt).toISOString();
    const group = messageGroupOf(record);
    await this.options.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.options.deadLetterQueueUrl,
        // A FIFO source has a FIFO DLQ: the letter keeps its message group, so a redrive keeps
        // the group's order, and a second send of one letter (its delivery crashed after the
        // first) within five minutes is absorbed by SQS.
        ...(group ? { MessageGroupId: group, MessageDeduplicationId: record.messageId } : {}),
        MessageBody: record.body.length > 0 ? record.body : '(empty body)',
        MessageAttributes: Object.fromEntries(
          Object.entries(attributes)
            .filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '')
            .map(([name, value]) => [
              name,
              {
                DataType: 'String',
                StringValue: name === DEAD_LETTER_ATTRIBUTES.reason ? value : sqsText(value, MAX_ATTRIBUTE_CHARS),
              },
            ]),
        ),
      }),
    );
  }

  /** The event carries the queue's ARN; the SQS API wants its URL (which differs locally). */
  private queueUrl(arn: string): Promise<string> {
    let url = this.queueUrls.get(arn);
    if (!url) {
      const [, , , , account, name] = arn.split(':');
      url = this.options.sqs
        .send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }))
        .then((r) => r.QueueUrl!);
      url.catch(() => this.queueUrls.delete(arn));
      this.queueUrls.set(arn, url);
    }
    return url;
  }
}
