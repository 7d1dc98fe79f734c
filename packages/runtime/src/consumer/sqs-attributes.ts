import type { SQSRecord } from 'aws-lambda';

/**
 * What Lambda's SQS event says of a record beside its body: read here, below the steps and the
 * runners, so that no step imports a runner to learn a record's message group.
 */

/** Set by `ops dlq redrive` on the messages it sends back. */
export const REDRIVE_COUNT_ATTRIBUTE = 'redrive-count';

/** The SQS FIFO message group a record belongs to (Lambda puts it in its attributes); none on a standard queue. */
export function messageGroupOf(record: SQSRecord): string | undefined {
  return record.attributes?.MessageGroupId || undefined;
}

/** SQS's receive count of this copy (1 on its first delivery). */
export const receiveCountOf = (record: SQSRecord): number =>
  Number(record.attributes?.ApproximateReceiveCount ?? '1') || 1;

/** How many times `ops dlq redrive` sent this copy back (0: never dead-lettered, or moved by other means). */
export function redriveCountOf(record: SQSRecord): number {
  return Number(record.messageAttributes?.[REDRIVE_COUNT_ATTRIBUTE]?.stringValue ?? 0) || 0;
}

/** When SQS took the record into the source queue (its `SentTimestamp`, epoch ms; no sender sets it). */
export function sentAtOf(record: SQSRecord): number | undefined {
  return Number(record.attributes?.SentTimestamp) || undefined;
}
