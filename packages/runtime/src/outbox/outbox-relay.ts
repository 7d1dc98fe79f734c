import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { type OutboxItem, OutboxStatus, type RelayTargets } from '../config/index.ts';
import { DEAD_LETTER_KIND_ATTRIBUTE, type SigningKeyRing } from '../rocketmq/index.ts';
import { RecentEventIds } from './recent-event-ids.ts';
import { asRelayError, MarkFailedError, type RelayError } from './relay-errors.ts';
import { OUTBOX_NOTICE_KIND, OUTBOX_NOTICE_REASON_ATTRIBUTE, outboxNotice } from './relay-notice.ts';
import { RelaySender } from './relay-targets.ts';
import {
  eventIdOfImage,
  orderingKeyOf,
  outboxItemOf,
  relayedBody,
  type StreamImage,
  statusOf,
} from './relayed-envelope.ts';

export interface OutboxRelayOptions {
  /** The publishing group whose outbox this relay reads. */
  readonly group: string;
  readonly tableName: string;
  readonly targets: RelayTargets;
  readonly deadLetterQueueUrl: string;
  /** The stage's envelope signing key (the ring the consumers verify with); the relay signs with `current()`. */
  readonly signingKeys: SigningKeyRing;
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly eventBridge: EventBridgeClient;
  readonly now?: () => number;
  /** Every PENDING record's outcome: the handler's logs and metrics, the local run, tests. */
  readonly onReport?: (report: RelayReport) => void;
}

/** What became of one stream record whose image was PENDING. */
export type RelayOutcome =
  /** Sent and marked RELAYED (`relayedAt`). */
  | { readonly outcome: 'relayed'; readonly relayedAt: number; readonly requests: number }
  /** Sent; the mark found it no longer PENDING (another invocation marked it first): done. */
  | { readonly outcome: 'already-marked'; readonly requests: number }
  /** This relay sent and marked it moments ago (a redelivered batch): not sent again. */
  | { readonly outcome: 'already-relayed' }
  /** Refused for good: marked FAILED, a notice in the relay's DLQ. */
  | { readonly outcome: 'failed'; readonly code: string; readonly reason: string }
  /** Not sent this time: reported in `batchItemFailures`, the stream hands it back. */
  | { readonly outcome: 'retry'; readonly code: string; readonly reason: string }
  /** Not tried: an earlier record of its message group is to be retried. */
  | { readonly outcome: 'held-back' };

export type RelayReport = RelayOutcome & {
  readonly group: string;
  readonly sequenceNumber: string;
  readonly eventId: string | undefined;
  readonly topic: string | undefined;
  /** The message group (else business key) the record keeps its order in. */
  readonly orderingKey: string;
  readonly committedAt: number | undefined;
};

/** A stream record to relay: its item, or why it has none. */
interface Candidate {
  readonly sequenceNumber: string;
  readonly image: StreamImage;
  readonly item: OutboxItem | undefined;
  readonly unreadable: RelayError | undefined;
  readonly orderingKey: string;
}

/**
 * The outbox relay: takes a batch of its group's outbox stream and relays every record whose new
 * image is PENDING (an INSERT from a consumer's commit, or a MODIFY from `ops outbox redrive`); it
 * skips the rest (its own RELAYED / FAILED marks, TTL removals). Records keep their stream order
 * within their message group (`messageGroup ?? businessKey`); message groups run side by side.
 *
 * Partial batch failures, and why every later record of a failed group is reported too: with
 * `ReportBatchItemFailures` on a stream, Lambda checkpoints at the LOWEST sequence number reported
 * and retries every record from there, whatever else is reported (with `BisectBatchOnFunctionError`
 * too, it splits the batch at that number and retries the rest; AWS Lambda developer guide,
 * "Configuring partial batch response with DynamoDB and Lambda"). So the lowest failure alone decides
 * the retry; reporting the group's later records as well costs nothing and keeps the answer truthful
 * (none of them was sent). A record that fails every time holds the whole shard until the mapping's
 * retry limit or record age sends it to its on-failure destination. Records of other groups after that
 * checkpoint went on and were sent and marked; they come back with the retry and are skipped when
 * this instance remembers relaying them (`RecentEventIds`), else sent again with the same envelope,
 * which downstream dedups on the event id. A record of a failed group is never sent before the
 * failed one, so each group's order holds across retries.
 */
export class OutboxRelay {
  readonly group: string;
  readonly #sender: RelaySender;
  readonly #now: () => number;
  readonly #recent = new RecentEventIds(4096);

  constructor(private readonly options: OutboxRelayOptions) {
    this.group = options.group;
    this.#sender = new RelaySender(options);
    this.#now = options.now ?? Date.now;
  }

  async relay(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    // A key that cannot be read fails the whole batch before anything is sent: the stream hands it back.
    const key = await this.options.signingKeys.current();
    const lanes = new Map<string, Candidate[]>();
    for (const record of event.Records) {
      const candidate = candidateOf(record);
      if (candidate === undefined) continue;
      const lane = lanes.get(candidate.orderingKey) ?? [];
      lane.push(candidate);
      lanes.set(candidate.orderingKey, lane);
    }
    const failed: string[] = [];
    await Promise.all(
      [...lanes.values()].map(async (lane) => {
        let stopped = false;
        for (const candidate of lane) {
          if (stopped) {
            this.#report(candidate, { outcome: 'held-back' });
            failed.push(candidate.sequenceNumber);
          } else if (!(await this.#relayOne(candidate, key))) {
            stopped = true;
            failed.push(candidate.sequenceNumber);
          }
        }
      }),
    );
    failed.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  }

  /** Relays one record; false when it must be retried (and its group held back). */
  async #relayOne(candidate: Candidate, key: Uint8Array): Promise<boolean> {
    const { item } = candidate;
    try {
      if (item === undefined) throw candidate.unreadable;
      if (this.#recent.has(item.eventId)) {
        this.#report(candidate, { outcome: 'already-relayed' });
        return true;
      }
      const { requests } = await this.#sender.send(item, relayedBody(item, key));
      const relayedAt = this.#now();
      const marked = await this.#mark(item.eventId, OutboxStatus.RELAYED, { relayedAt });
      this.#recent.add(item.eventId);
      this.#report(
        candidate,
        marked ? { outcome: 'relayed', relayedAt, requests } : { outcome: 'already-marked', requests },
      );
      return true;
    } catch (thrown) {
      const error = asRelayError(thrown);
      if (error.classification === 'permanent') return this.#fail(candidate, error);
      this.#report(candidate, { outcome: 'retry', code: error.code, reason: error.message });
      return false;
    }
  }

  /**
   * A refused record: the notice first, then the FAILED mark. A crash between the two leaves the item
   * PENDING, and the retry sends a second notice (harmless); the other order could leave an item FAILED
   * with no notice, and nothing would alarm.
   */
  async #fail(candidate: Candidate, error: RelayError): Promise<boolean> {
    // `eventId` is the table's key: a stream image always has it.
    const eventId = candidate.item?.eventId ?? eventIdOfImage(candidate.image) ?? '';
    try {
      await this.#notify({ ...candidate.item, eventId }, error);
      await this.#mark(eventId, OutboxStatus.FAILED, { failureReason: `${error.code}: ${error.message}` });
    } catch (thrown) {
      const retry = asRelayError(thrown);
      this.#report(candidate, { outcome: 'retry', code: retry.code, reason: retry.message });
      return false;
    }
    this.#report(candidate, { outcome: 'failed', code: error.code, reason: error.message });
    return true;
  }

  async #notify(item: Partial<OutboxItem> & Pick<OutboxItem, 'eventId'>, error: RelayError): Promise<void> {
    try {
      await this.options.sqs.send(
        new SendMessageCommand({
          QueueUrl: this.options.deadLetterQueueUrl,
          MessageBody: JSON.stringify(outboxNotice(item, this.group, error.code, error.message)),
          MessageAttributes: {
            [DEAD_LETTER_KIND_ATTRIBUTE]: { DataType: 'String', StringValue: OUTBOX_NOTICE_KIND },
            [OUTBOX_NOTICE_REASON_ATTRIBUTE]: { DataType: 'String', StringValue: error.code },
          },
        }),
      );
    } catch (thrown) {
      throw new MarkFailedError(`the notice could not be sent to the relay's DLQ: ${(thrown as Error).name}`, {
        cause: thrown,
      });
    }
  }

  /**
   * Marks the item, only while it is PENDING: false when it no longer is (another invocation of a
   * redelivered batch marked it first, or an operator changed it), which is no failure.
   */
  async #mark(eventId: string, status: OutboxStatus, fields: Record<string, string | number>): Promise<boolean> {
    const names = Object.keys(fields);
    try {
      await this.options.dynamoDb.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { eventId },
          UpdateExpression: `SET #status = :status${names.map((_, i) => `, #f${i} = :f${i}`).join('')}`,
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status', ...Object.fromEntries(names.map((n, i) => [`#f${i}`, n])) },
          ExpressionAttributeValues: {
            ':status': status,
            ':pending': OutboxStatus.PENDING,
            ...Object.fromEntries(names.map((n, i) => [`:f${i}`, fields[n]])),
          },
        }),
      );
      return true;
    } catch (thrown) {
      if ((thrown as Error).name === 'ConditionalCheckFailedException') return false;
      throw new MarkFailedError(`the item could not be marked ${status}: ${(thrown as Error).name}`, { cause: thrown });
    }
  }

  #report(candidate: Candidate, outcome: RelayOutcome): void {
    this.options.onReport?.({
      ...outcome,
      group: this.group,
      sequenceNumber: candidate.sequenceNumber,
      eventId: candidate.item?.eventId ?? eventIdOfImage(candidate.image),
      topic: candidate.item?.topic,
      orderingKey: candidate.orderingKey,
      committedAt: candidate.item?.committedAt,
    });
  }
}

/** The record as something to relay, or `undefined` when its image is not PENDING (nothing to do). */
function candidateOf(record: DynamoDBRecord): Candidate | undefined {
  const image = record.dynamodb?.NewImage as StreamImage | undefined;
  const sequenceNumber = record.dynamodb?.SequenceNumber;
  if (image === undefined || sequenceNumber === undefined || statusOf(image) !== OutboxStatus.PENDING) return undefined;
  try {
    const item = outboxItemOf(image);
    return { sequenceNumber, image, item, unreadable: undefined, orderingKey: orderingKeyOf(item) };
  } catch (error) {
    // Unreadable: it keeps no order with anything, so it is a lane of its own.
    return {
      sequenceNumber,
      image,
      item: undefined,
      unreadable: asRelayError(error),
      orderingKey: `#${sequenceNumber}`,
    };
  }
}
