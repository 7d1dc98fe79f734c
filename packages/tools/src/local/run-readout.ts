import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { LocalResources } from './provision.ts';

/** A message read from a queue, with its message attributes as plain strings. */
export interface PeekedMessage {
  readonly body: string;
  readonly attributes: Record<string, string>;
}

export interface DeadLetter extends PeekedMessage {
  readonly group: string;
}

const SOURCE_COUNTS = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;

/** Messages in the groups' source queues as SQS counts them: visible, in flight and delayed. */
export async function messagesInQueues(
  sqs: SQSClient,
  resources: LocalResources,
  groups: readonly string[],
): Promise<number> {
  let total = 0;
  for (const g of groups) {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: resources.queues[g]!.source.url, AttributeNames: [...SOURCE_COUNTS] }),
    );
    for (const name of SOURCE_COUNTS) total += Number(Attributes[name] ?? 0);
  }
  return total;
}

/**
 * Every message of a queue, left in place: received under a long visibility timeout, then
 * made visible again at once (a FIFO queue's are put back instead), so a kept emulator still
 * shows them to `ops dlq` and the AWS CLI.
 */
export async function peekAllMessages(sqs: SQSClient, url: string): Promise<PeekedMessage[]> {
  if (url.endsWith('.fifo')) return peekFifoMessages(sqs, url);
  const received = await receiveAll(sqs, url);
  for (let i = 0; i < received.length; i += 10) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: received
          .slice(i, i + 10)
          .map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
  }
  return received.map(peeked);
}

/**
 * A FIFO queue hands out none of a message group while one of its messages is in flight, so
 * a group with more messages than one receive returns cannot be read by hiding them: each
 * round's messages are deleted, then all are put back in their order, in their groups, with
 * their attributes (a fresh deduplication id, or SQS would drop them as copies of themselves).
 */
async function peekFifoMessages(sqs: SQSClient, url: string): Promise<PeekedMessage[]> {
  const received: Message[] = [];
  for (;;) {
    const round = await receiveAll(sqs, url);
    if (round.length === 0) break;
    received.push(...round);
    for (let i = 0; i < round.length; i += 10) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: round.slice(i, i + 10).map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    }
  }
  for (let i = 0; i < received.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: received.slice(i, i + 10).map((m, j) => ({
          Id: String(j),
          MessageBody: m.Body ?? '',
          MessageAttributes: m.MessageAttributes,
          MessageGroupId: m.Attributes?.MessageGroupId,
          MessageDeduplicationId: m.MessageId,
        })),
      }),
    );
  }
  return received.map(peeked);
}

async function receiveAll(sqs: SQSClient, url: string): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['MessageGroupId'],
        VisibilityTimeout: 120,
      }),
    );
    if (Messages.length === 0) return out;
    out.push(...Messages);
  }
}

function peeked(m: Message): PeekedMessage {
  return {
    body: m.Body ?? '',
    attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? ''])),
  };
}

/** Every dead letter of the groups' DLQs, left in place. */
export async function readDeadLetters(
  sqs: SQSClient,
  resources: LocalResources,
  groups: readonly string[],
): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  for (const group of groups)
    for (const m of await peekAllMessages(sqs, resources.queues[group]!.deadLetter.url)) out.push({ group, ...m });
  return out;
}

/** The point ledger and the account balances at the end of a run. */
export async function readPoints(dynamoDb: DynamoDBDocumentClient, resources: LocalResources) {
  const ledger = (await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.ledger)).map((e) => ({
    userId: String(e.userId),
    entryId: String(e.entryId),
    points: Number(e.points),
    msgId: e.msgId as string | undefined,
    orderNo: e.orderNo as string | undefined,
  }));
  const balances: Record<string, number> = {};
  for (const a of await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.accounts))
    balances[String(a.userId)] = Number(a.balance ?? 0);
  return { ledger, balances };
}
