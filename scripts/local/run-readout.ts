import { ChangeMessageVisibilityBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { scanTable } from '../../lib/aws/table-scan.ts';
import type { LocalResources } from './provision.ts';

/** A message read from a queue, with its message attributes as plain strings. */
export interface PeekedMessage {
  readonly body: string;
  readonly attributes: Record<string, string>;
}

export interface DeadLetter extends PeekedMessage {
  readonly group: string;
}

const SOURCE_COUNTS = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] as const;

/** Messages in the groups' source queues as SQS counts them: visible, in flight and delayed. */
export async function messagesInQueues(sqs: SQSClient, resources: LocalResources, groups: readonly string[]): Promise<number> {
  let total = 0;
  for (const g of groups) {
    const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: resources.queues[g]!.source.url, AttributeNames: [...SOURCE_COUNTS] }));
    for (const name of SOURCE_COUNTS) total += Number(Attributes[name] ?? 0);
  }
  return total;
}

/**
 * Every message of a queue, read without deleting: received under a long visibility
 * timeout, then made visible again at once, so a kept emulator still shows them to
 * `ops dlq` and the AWS CLI.
 */
export async function peekAllMessages(sqs: SQSClient, url: string): Promise<PeekedMessage[]> {
  const out: PeekedMessage[] = [];
  const handles: string[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 120 }));
    if (Messages.length === 0) break;
    for (const m of Messages) {
      handles.push(m.ReceiptHandle!);
      out.push({ body: m.Body ?? '', attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? ''])) });
    }
  }
  for (let i = 0; i < handles.length; i += 10) {
    await sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: handles.slice(i, i + 10).map((h, j) => ({ Id: String(j), ReceiptHandle: h, VisibilityTimeout: 0 })) }));
  }
  return out;
}

/** Every dead letter of the groups' DLQs, left in place. */
export async function readDeadLetters(sqs: SQSClient, resources: LocalResources, groups: readonly string[]): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  for (const group of groups) for (const m of await peekAllMessages(sqs, resources.queues[group]!.deadLetter.url)) out.push({ group, ...m });
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
  for (const a of await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.accounts)) balances[String(a.userId)] = Number(a.balance ?? 0);
  return { ledger, balances };
}
