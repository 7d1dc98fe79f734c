import { randomUUID } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  ORDER_STATUS,
  consumer as orderStatusConsumer,
} from '@rocketmq-lambda/consumers/functions/order-status-consumer/handler.ts';
import type { Order } from '@rocketmq-lambda/consumers/orders/index.ts';
import { createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { lifetimesOf, recordId } from '@rocketmq-lambda/runtime/config/index.ts';
import type { ConsumerHandler, RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { RetrySchedule, SigningKeyRing } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { inject } from 'vitest';
import { PROCESS_SIGNING_KEY } from '../local/local-signing-key.ts';
import { provisionLocal } from '../local/provision.ts';
import { pollOnce } from '../local/sqs-poller.ts';
import { readAllMessages } from './queue-reading.ts';

/**
 * The order-status group as the local run provisions it (FIFO source queue and DLQ, the
 * catalogue's redrive count), its consumer on the given schedule, and the local run's poller,
 * which hands the handler FIFO records as Lambda does.
 */
export async function orderlyFixture(options: {
  schedule: RetrySchedule;
  visibilityTimeoutSeconds?: number;
  /** The keys its consumer verifies with; default the process's (`orderEnvelope` signs with it). */
  envelopeKeys?: SigningKeyRing;
}) {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const { tables, queues } = await provisionLocal(endpoint, `t${randomUUID().slice(0, 8)}`, {
    groups: [ORDER_STATUS.group],
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
  });
  const { source, deadLetter } = queues[ORDER_STATUS.group]!;
  const sqs = createSqs(aws);
  const dynamoDb = createDynamoDb(aws);
  const reports: RecordReport[] = [];
  const handler: ConsumerHandler = orderStatusConsumer.create({
    aws,
    tables,
    deadLetterQueueUrl: deadLetter.url,
    schedule: options.schedule,
    queueLifetimes: lifetimesOf(ORDER_STATUS).lifetimes.queues,
    dynamoDb,
    sqs,
    envelopeKeys: options.envelopeKeys ?? PROCESS_SIGNING_KEY.ring,
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
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: source.url,
          MessageBody: body,
          MessageGroupId: messageGroupId,
          MessageDeduplicationId: msgId,
        }),
      );
    },
    /** One Lambda-like poll: receive up to 10, invoke, delete what the handler did not return. */
    poll: () => pollFifo(sqs, source, handler),
    createOrder: (orderNo: string, status = 'WAIT_PAY') =>
      dynamoDb.send(new PutCommand({ TableName: tables.orders, Item: { orderNo, status, userId: '88372' } })),
    order: async (orderNo: string) =>
      (await dynamoDb.send(new GetCommand({ TableName: tables.orders, Key: { orderNo }, ConsistentRead: true })))
        .Item as (Order & Record<string, unknown>) | undefined,
    /** The failure count the consumer keeps for one SQS message (0 when it never failed). */
    failuresOf: async (sqsMessageId: string) =>
      Number(
        (
          await dynamoDb.send(
            new GetCommand({
              TableName: tables.idempotency,
              Key: { id: recordId(ORDER_STATUS.group, `failures#${sqsMessageId}`) },
              ConsistentRead: true,
            }),
          )
        ).Item?.failures ?? 0,
      ),
    deadLetters: () => readAllMessages(sqs, deadLetter.url),
  };
}

/** What one poll received (the records as the handler saw them) and answered. */
export interface FifoPoll {
  records: SQSRecord[];
  response?: SQSBatchResponse;
}

async function pollFifo(
  sqs: SQSClient,
  queue: { url: string; arn: string },
  handler: ConsumerHandler,
): Promise<FifoPoll> {
  let response: SQSBatchResponse | undefined;
  const { records = [] } = await pollOnce({
    sqs,
    queueUrl: queue.url,
    queueArn: queue.arn,
    functionName: ORDER_STATUS.functionName,
    handler: async (event, context) => {
      response = await handler(event, context);
      return response;
    },
  });
  return { records, ...(response ? { response } : {}) };
}
