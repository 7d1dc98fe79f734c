import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { inject } from 'vitest';
import { createDynamoDb, createSqs, emulatorConfig } from '../../lib/aws/clients.ts';
import { DeliveryLifetimes } from '../../lib/config/delivery-lifetimes.ts';
import { FIFO_QUEUE_ATTRIBUTES, deadLetterQueueName, queueName } from '../../lib/config/resources.ts';
import type { ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import { recordId } from '../../lib/idempotency/record.ts';
import type { RecordReport } from '../../lib/idempotency/settlement.ts';
import type { Order } from '../../lib/orders/order-status.ts';
import type { RetrySchedule } from '../../lib/rocketmq/retry-schedule.ts';
import { createOrderStatusConsumer, ORDER_STATUS } from '../../functions/order-status-consumer/handler.ts';
import { lambdaContext } from '../../scripts/local/lambda-context.ts';
import { provisionLocal } from '../../scripts/local/provision.ts';
import { readAllMessages } from './queue-reading.ts';

/**
 * The order-status group on FIFO queues of the emulator, created from the catalogue's
 * attributes and the lifetimes the given schedule derives (the local provisioning still makes
 * every queue standard), and a Lambda-like poller that keeps what FIFO records carry.
 */
export async function orderlyFixture(options: { schedule: RetrySchedule; visibilityTimeoutSeconds?: number }) {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const prefix = `t${randomUUID().slice(0, 8)}`;
  const { tables } = await provisionLocal(endpoint, prefix, { groups: [] });
  const sqs = createSqs(aws);
  const dynamoDb = createDynamoDb(aws);
  const { queues } = DeliveryLifetimes.derive(options.schedule, 'orderly');
  const deadLetter = await createFifoQueue(sqs, deadLetterQueueName(prefix, ORDER_STATUS.group), { MessageRetentionPeriod: String(queues.deadLetterRetentionSeconds) });
  const source = await createFifoQueue(sqs, queueName(prefix, ORDER_STATUS.group), {
    VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30),
    MessageRetentionPeriod: String(queues.sourceRetentionSeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetter.arn, maxReceiveCount: queues.maxReceiveCount }),
  });
  const reports: RecordReport[] = [];
  const handler: ConsumerHandler = createOrderStatusConsumer({
    aws,
    tables,
    deadLetterQueueUrl: deadLetter.url,
    schedule: options.schedule,
    queueLifetimes: queues,
    dynamoDb,
    sqs,
    onReport: (r) => reports.push(r),
  });
  return {
    sqs,
    dynamoDb,
    tables,
    source,
    deadLetter,
    reports,
    /** Sends as the bridge does: the message group, and the RocketMQ msgId as deduplication id. */
    send: async (messageGroupId: string, body: string) => {
      const msgId = (JSON.parse(body) as { data: { msgId: string } }).data.msgId;
      await sqs.send(new SendMessageCommand({ QueueUrl: source.url, MessageBody: body, MessageGroupId: messageGroupId, MessageDeduplicationId: msgId }));
    },
    /** One Lambda-like poll: receive up to 10, invoke, delete what the handler did not return. */
    poll: () => pollFifo(sqs, source, handler),
    createOrder: (orderNo: string, status = 'WAIT_PAY') => dynamoDb.send(new PutCommand({ TableName: tables.orders, Item: { orderNo, status, userId: '88372' } })),
    order: async (orderNo: string) =>
      (await dynamoDb.send(new GetCommand({ TableName: tables.orders, Key: { orderNo }, ConsistentRead: true }))).Item as (Order & Record<string, unknown>) | undefined,
    /** The failure count the consumer keeps for one SQS message (0 when it never failed). */
    failuresOf: async (sqsMessageId: string) =>
      Number(
        (await dynamoDb.send(new GetCommand({ TableName: tables.idempotency, Key: { id: recordId(ORDER_STATUS.group, `failures#${sqsMessageId}`) }, ConsistentRead: true }))).Item?.failures ?? 0,
      ),
    deadLetters: () => readAllMessages(sqs, deadLetter.url),
  };
}

async function createFifoQueue(sqs: SQSClient, name: string, attributes: Record<string, string>) {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { ...FIFO_QUEUE_ATTRIBUTES, ...attributes } }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

/** What one poll received (the records as the handler saw them) and answered. */
export interface FifoPoll {
  records: SQSRecord[];
  response?: SQSBatchResponse;
}

async function pollFifo(sqs: SQSClient, queue: { url: string; arn: string }, handler: ConsumerHandler): Promise<FifoPoll> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'], WaitTimeSeconds: 0 }),
  );
  if (Messages.length === 0) return { records: [] };
  const records: SQSRecord[] = Messages.map((m) => ({
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? '',
    // Lambda's FIFO records carry the group, the deduplication id and the sequence number.
    attributes: {
      ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
      SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      MessageGroupId: m.Attributes?.MessageGroupId,
      MessageDeduplicationId: m.Attributes?.MessageDeduplicationId,
      SequenceNumber: m.Attributes?.SequenceNumber,
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queue.arn,
    awsRegion: 'us-east-1',
  }));
  const response = await handler({ Records: records }, lambdaContext('order-status-consumer', 30_000));
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const done = Messages.filter((m) => !failed.has(m.MessageId!));
  if (done.length > 0) {
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queue.url, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
  }
  return { records, response };
}
