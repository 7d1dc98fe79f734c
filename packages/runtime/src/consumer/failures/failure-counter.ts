import { createHash } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { SQSRecord } from 'aws-lambda';

export interface FailureCounterOptions {
  client: DynamoDBDocumentClient;
  /** The idempotency table. */
  tableName: string;
  group: string;
  /** The group's record-id prefix: counts live under it, where the group's role may write. */
  recordIdPrefix: string;
  /** How long a count is kept: as long as the source queue can hold its message. */
  ttlSeconds: number;
  now?: () => number;
}

/**
 * An orderly group's count of one message's own failures: its attempt number. On SQS FIFO, a
 * message returned unprocessed behind a failed predecessor of its group is received again, so
 * its ApproximateReceiveCount grows without an attempt of its own and would dead-letter it
 * early. This item grows only when the message itself fails, and is read when it comes back.
 *
 * Keyed by the SQS message id, which every receive of one message shares. A letter redriven
 * from the DLQ, or a bridge re-forward after SQS's five-minute deduplication window, is a new
 * SQS message and counts from zero (RocketMQ, too, restarts a message resent from %DLQ%). The
 * count outlives its message, so no reader ever sees one past its TTL.
 */
export class FailureCounter {
  constructor(private readonly options: FailureCounterOptions) {}

  /**
   * Failures counted so far. An eventually consistent read: the count was written an interval ago, and it only names
   * the attempt.
   */
  async failures(record: SQSRecord): Promise<number> {
    const out = await this.options.client.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { id: this.idOf(record) },
        ProjectionExpression: 'failures',
      }),
    );
    return Number(out.Item?.failures ?? 0);
  }

  /**
   * Counts this delivery's failure and returns the count with it. One failure is counted once,
   * whatever the SDK does with the request (the condition names the delivery):
   *
   *   ADD failures 1, lastDelivery = d  ─ applied, answer lost (timeout)
   *   the SDK sends it again            ─ lastDelivery = d: refused, ALL_OLD holds the count
   *
   * A later delivery of the message has another receipt handle, so its failure counts.
   */
  async countFailure(record: SQSRecord, msgId: string | undefined): Promise<number> {
    const nowMs = (this.options.now ?? Date.now)();
    try {
      const out = await this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { id: this.idOf(record) },
          UpdateExpression:
            'ADD failures :one SET lastDelivery = :delivery, #group = :group, sqsMessageId = :sqsMessageId, msgId = :msgId, expiresAt = :expiresAt',
          ConditionExpression: 'attribute_not_exists(lastDelivery) OR lastDelivery <> :delivery',
          ExpressionAttributeNames: { '#group': 'group' },
          ExpressionAttributeValues: {
            ':one': 1,
            ':delivery': deliveryOf(record),
            ':group': this.options.group,
            ':sqsMessageId': record.messageId,
            ':msgId': msgId ?? null,
            ':expiresAt': Math.floor(nowMs / 1000) + this.options.ttlSeconds,
          },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return Number(out.Attributes!.failures);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item)
        return Number(unmarshall(error.Item).failures);
      throw error;
    }
  }

  /**
   * Under the group's own record prefix, where its role may write (`dynamodb:LeadingKeys`). It
   * would meet a dedup record only for a business key of `failures#` and an SQS message id.
   */
  private idOf(record: SQSRecord): string {
    return `${this.options.recordIdPrefix}failures#${record.messageId}`;
  }
}

/** One receive of a message: its receipt handle (up to 1 KB), hashed to keep the item small. */
function deliveryOf(record: SQSRecord): string {
  return createHash('sha256').update(record.receiptHandle).digest('hex').slice(0, 32);
}
