import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaContext } from './lambda-context.ts';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

export interface PollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: SqsHandler;
  functionName: string;
  /**
   * Records per invocation (Lambda: 1–10, or up to 10,000 with a batching window; at most 10 and no window on a FIFO
   * queue).
   */
  batchSize?: number;
  /** How long to gather a batch, like `MaximumBatchingWindowInSeconds`. */
  batchingWindowMs?: number;
  /** The function's timeout: the context's deadline. */
  timeoutMs?: number;
}

/** What one poll did. */
export interface PollResult {
  received: number;
  deleted: number;
  failed: number;
  /** The handler threw or overran its timeout (Lambda would retry the whole batch after the visibility timeout). */
  crashed: boolean;
  /** The handler returned, but after the context's deadline: Lambda would have killed it, so nothing was deleted. */
  timedOut?: boolean;
  /** The records handed to the handler (empty when nothing was received). */
  records?: SQSRecord[];
  /**
   * When the batch was in hand (`Date.now()`), before the handler saw it: nothing of the invocation was applied
   * earlier.
   */
  receivedAt?: number;
  /** SQS message ids deleted after the invocation. */
  deletedIds?: string[];
  /**
   * Ids whose delete SQS refused as `ReceiptHandleIsInvalid`: the message is no longer in the
   * queue under any receipt handle (SQS redrive moved it to the DLQ while the invocation ran).
   */
  goneIds?: string[];
}

/**
 * Behaves like Lambda's SQS event source for one poller: receive a batch, invoke the
 * handler with a Lambda-like event and context, delete the records the handler did not
 * name in `batchItemFailures`, leave the failed ones (with whatever visibility the handler
 * gave them). A handler that throws leaves the whole batch in the queue.
 */
export async function pollOnce(options: PollerOptions): Promise<PollResult> {
  const batchSize = options.batchSize ?? 10;
  const messages = await receiveBatch(options, batchSize);
  if (messages.length === 0) return { received: 0, deleted: 0, failed: 0, crashed: false, records: [], deletedIds: [] };
  const receivedAt = Date.now();
  const event: SQSEvent = { Records: messages.map((m) => toRecord(m, options.queueArn)) };
  const records = event.Records;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const started = Date.now();
  let response: SQSBatchResponse | undefined;
  try {
    response = await options.handler(event, lambdaContext(options.functionName, timeoutMs));
  } catch {
    return {
      received: messages.length,
      deleted: 0,
      failed: messages.length,
      crashed: true,
      records,
      receivedAt,
      deletedIds: [],
    };
  }
  // A handler cannot be killed here; one that overran its deadline is treated as Lambda
  // treats a timeout: the invocation failed and the whole batch comes back.
  if (Date.now() - started > timeoutMs) {
    return {
      received: messages.length,
      deleted: 0,
      failed: messages.length,
      crashed: true,
      timedOut: true,
      records,
      receivedAt,
      deletedIds: [],
    };
  }
  const failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  const done = messages.filter((m) => !failed.has(m.MessageId!));
  const { deletedIds, goneIds } = await deleteAll(options, done);
  return {
    received: messages.length,
    deleted: deletedIds.length,
    failed: failed.size,
    crashed: false,
    records,
    receivedAt,
    deletedIds,
    goneIds,
  };
}

async function receiveBatch(options: PollerOptions, batchSize: number): Promise<Message[]> {
  const windowEnds = Date.now() + (options.batchingWindowMs ?? 0);
  const messages: Message[] = [];
  do {
    const { Messages = [] } = await options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: options.queueUrl,
        MaxNumberOfMessages: Math.min(10, batchSize - messages.length),
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
        WaitTimeSeconds: 0,
      }),
    );
    messages.push(...Messages);
    if (Messages.length === 0 && Date.now() < windowEnds) await new Promise((r) => setTimeout(r, 20));
  } while (messages.length < batchSize && Date.now() < windowEnds);
  return messages;
}

async function deleteAll(options: PollerOptions, messages: Message[]) {
  const deletedIds: string[] = [];
  const goneIds: string[] = [];
  for (let i = 0; i < messages.length; i += 10) {
    const chunk = messages.slice(i, i + 10);
    const { Failed = [] } = await options.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
    const failed = new Map(Failed.map((f) => [Number(f.Id), f.Code]));
    chunk.forEach((m, j) => {
      const code = failed.get(j);
      if (!failed.has(j)) deletedIds.push(m.MessageId!);
      else if (code === 'ReceiptHandleIsInvalid') goneIds.push(m.MessageId!);
    });
  }
  return { deletedIds, goneIds };
}

function toRecord(message: Message, queueArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      // Lambda's records from a FIFO queue carry the group, the deduplication id and the sequence number.
      ...(attributes.MessageGroupId !== undefined
        ? {
            MessageGroupId: attributes.MessageGroupId,
            MessageDeduplicationId: attributes.MessageDeduplicationId,
            SequenceNumber: attributes.SequenceNumber,
          }
        : {}),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          stringValue: value.StringValue,
          dataType: value.DataType ?? 'String',
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(':')[3] ?? 'us-east-1',
  };
}
