import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  COUPON_GROUP,
  type COUPONS,
  consumer as couponConsumer,
} from '@rocketmq-lambda/consumers/functions/coupon-consumer/handler.ts';
import {
  type ORDER_STATUS,
  ORDER_STATUS_GROUP,
  consumer as orderStatusConsumer,
} from '@rocketmq-lambda/consumers/functions/order-status-consumer/handler.ts';
import type { Order } from '@rocketmq-lambda/consumers/orders/index.ts';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { type LocalResources, provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { trafficMessage } from '@rocketmq-lambda/tools/local/traffic.ts';
import { type ServiceAccess, startFakeCouponService } from '@rocketmq-lambda/tools/testing/fake-coupon-service.ts';
import { IMMEDIATE_RETRIES, inMessageGroup, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { queueDepth, readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { inject, onTestFinished } from 'vitest';
import { createDynamoDb, createSqs, emulatorConfig } from '../../../src/aws/index.ts';
import { consumerGroup, recordId, type ServiceAuth } from '../../../src/config/index.ts';
import type { ConsumerConfig, ConsumerHandler, RecordReport } from '../../../src/consumer/index.ts';
import type { DedupRecord } from '../../../src/consumer/internal.ts';
import { messageGroupOf } from '../../../src/rocketmq/index.ts';

/** Queue, clients and the Lambda-like ways of feeding one consumer group. */
async function groupFixture(group: string) {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const resources: LocalResources = await provisionLocal(endpoint, `t${randomUUID().slice(0, 8)}`, { groups: [group] });
  const queue = resources.queues[group]!;
  const dynamoDb = createDynamoDb(aws);
  const sqs = createSqs(aws);
  const reports: RecordReport[] = [];
  return {
    aws,
    resources,
    queue,
    dynamoDb,
    sqs,
    reports,
    base: {
      aws,
      tables: resources.tables,
      deadLetterQueueUrl: queue.deadLetter.url,
      schedule: IMMEDIATE_RETRIES,
      dynamoDb,
      sqs,
      envelopeKeys: PROCESS_SIGNING_KEY.ring,
      onReport: (r: RecordReport) => reports.push(r),
    },
    /** A record as Lambda delivers it; from an orderly group's FIFO queue it carries its message group. */
    record: (body: string, receiveCount = 1): SQSRecord => {
      const record = sqsRecord(body, queue.source.arn, receiveCount);
      return queue.fifo ? inMessageGroup(record, groupOf(body)) : record;
    },
    /**
     * Puts each body on the group's source queue as its own SQS message. On an orderly group's
     * FIFO queue it goes into its message group as the bridge would put it; the deduplication id
     * is fresh per send, because tests send copies of one msgId on purpose (as after SQS's
     * five-minute window), and SQS would otherwise drop them.
     */
    send: async (...bodies: string[]) => {
      for (const body of bodies) {
        const fifo = queue.fifo ? { MessageGroupId: groupOf(body), MessageDeduplicationId: randomUUID() } : {};
        await sqs.send(new SendMessageCommand({ QueueUrl: queue.source.url, MessageBody: body, ...fifo }));
      }
    },
    deadLetters: () => readAllMessages(sqs, queue.deadLetter.url),
    /** Messages in the source queue: visible, and in flight. */
    sourceDepth: () => queueDepth(sqs, queue.source.url),
    outcomes: () => reports.map((r) => [r.settlement.outcome, r.disposition.action]),
  };
}

/** Invokes a handler with records built from bodies (or given records), with a Lambda-like context. */
function invoker(handler: ConsumerHandler, functionName: string, record: (body: string) => SQSRecord) {
  return (bodies: Array<string | SQSRecord>, options: { timeoutMs?: number; handler?: ConsumerHandler } = {}) =>
    (options.handler ?? handler)(
      { Records: bodies.map((b) => (typeof b === 'string' ? record(b) : b)) } satisfies SQSEvent,
      lambdaContext(functionName, options.timeoutMs ?? 30_000),
    );
}

function drainer(g: Awaited<ReturnType<typeof groupFixture>>, handler: () => ConsumerHandler, functionName: string) {
  return async (maxPolls = 200) => {
    for (let i = 0; i < maxPolls; i++) {
      const r = await pollOnce({
        sqs: g.sqs,
        queueUrl: g.queue.source.url,
        queueArn: g.queue.source.arn,
        handler: handler(),
        functionName,
      });
      if (r.received === 0) return i;
    }
    throw new Error('queue did not drain');
  };
}

/**
 * A coupon consumer on fresh resources, talking to its own fake coupon service: one that lets
 * anyone in and is called without credentials, unless `calls` says who it admits and how the
 * consumer authenticates.
 */
export async function couponFixture(
  overrides: Partial<ConsumerConfig<typeof COUPONS>> = {},
  calls: { access?: ServiceAccess; auth?: ServiceAuth } = {},
) {
  const g = await groupFixture(COUPON_GROUP);
  const service = await startFakeCouponService(calls.access);
  onTestFinished(() => service.close());
  const endpoint = calls.auth
    ? { services: { 'coupon-service': { url: service.url, auth: calls.auth } } }
    : { services: { 'coupon-service': service.url } };
  const deps: ConsumerConfig<typeof COUPONS> = { ...g.base, ...endpoint, outsideCallReserveMs: 500, ...overrides };
  /** Another instance of the function (another execution environment), e.g. with its own clock. */
  const instance = (more: Partial<ConsumerConfig<typeof COUPONS>> = {}) => couponConsumer.create({ ...deps, ...more });
  const handler = instance();
  return {
    ...g,
    service,
    handler,
    instance,
    invoke: invoker(handler, 'coupon-consumer', (b) => g.record(b)),
    drain: drainer(g, () => handler, 'coupon-consumer'),
    dedupRecord: async (key: string) =>
      (
        await g.dynamoDb.send(
          new GetCommand({
            TableName: g.resources.tables.idempotency,
            Key: { id: recordId(COUPON_GROUP, key) },
            ConsistentRead: true,
          }),
        )
      ).Item as (DedupRecord & { holder?: string }) | undefined,
  };
}

/** An order-status consumer on fresh resources, with a way to seed orders. */
export async function orderStatusFixture(overrides: Partial<ConsumerConfig<typeof ORDER_STATUS>> = {}) {
  const g = await groupFixture(ORDER_STATUS_GROUP);
  const deps: ConsumerConfig<typeof ORDER_STATUS> = { ...g.base, ...overrides };
  const handler = orderStatusConsumer.create(deps);
  return {
    ...g,
    handler,
    invoke: invoker(handler, 'order-status-consumer', (b) => g.record(b)),
    drain: drainer(g, () => handler, 'order-status-consumer'),
    createOrder: (orderNo: string, status = 'WAIT_PAY', extra: Record<string, unknown> = {}) =>
      g.dynamoDb.send(
        new PutCommand({
          TableName: g.resources.tables.orders,
          Item: { orderNo, status, userId: '88372', createdAt: new Date().toISOString(), ...extra },
        }),
      ),
    order: async (orderNo: string) =>
      (
        await g.dynamoDb.send(
          new GetCommand({ TableName: g.resources.tables.orders, Key: { orderNo }, ConsistentRead: true }),
        )
      ).Item as (Order & Record<string, unknown>) | undefined,
  };
}

/**
 * The message group the bridge gives a body on the order-status group's FIFO queue, or one group for unreadable bodies.
 */
function groupOf(body: string): string {
  const facts = trafficMessage(body).orderingFacts;
  return facts ? messageGroupOf(facts, consumerGroup('order-status-consumer-group').messageGroupFrom) : 'unreadable';
}
