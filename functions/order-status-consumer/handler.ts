import { createDynamoDb, createSqs } from '../../lib/aws/clients.ts';
import { consumerGroup, recordIdPrefix } from '../../lib/config/resources.ts';
import { FailureRouter, stateTransitionStrategy } from '../../lib/consumer/index.ts';
import type { ConsumerRuntimeConfig, TablesOf } from '../../lib/consumer/lambda/consumer-config.ts';
import { type ConsumerHandler, consumerHandler } from '../../lib/consumer/lambda/consumer-handler.ts';
import { type ConsumerObservers, defineConsumer } from '../../lib/consumer/lambda/consumer-module.ts';
import { parseOrderEvent } from '../../lib/orders/order-events.ts';
import { transitionRequest } from '../../lib/orders/order-status.ts';

export const ORDER_STATUS = consumerGroup('order-status-consumer-group');
export const ORDER_STATUS_GROUP = ORDER_STATUS.group;

export interface OrderStatusConsumerDeps
  extends ConsumerRuntimeConfig<TablesOf<typeof ORDER_STATUS>>,
    ConsumerObservers {
  /** Fault injection and command recording between the consumer and AWS. */
  dynamoDb?: ReturnType<typeof createDynamoDb>;
  sqs?: ReturnType<typeof createSqs>;
}

/**
 * ORDER_TOPIC `PAID || FINISHED` → the order's status moves WAIT_PAY → PAID → FINISHED
 * by conditional update; the tag decides the target state. No dedup record: the
 * precondition is the idempotency check. An orderly group (catalogue): one order's events are
 * one FIFO message group, applied one at a time in the order they were sent; each message's
 * failures are counted in the idempotency table.
 */
export function createOrderStatusConsumer(deps: OrderStatusConsumerDeps): ConsumerHandler {
  const dynamoDb = deps.dynamoDb ?? createDynamoDb(deps.aws);
  const now = deps.now ?? Date.now;
  const tableName = deps.tables.orders;
  return consumerHandler({
    definition: ORDER_STATUS,
    parsePayload: (body, message) => parseOrderEvent(body, message.tags),
    // One key per transition: PAID and FINISHED of one order are different events, and
    // two copies of one transition are duplicates whatever their timestamps say.
    keyOf: (event) => `${event.orderNo}#${event.kind}`,
    fingerprintFields: (event) => ({ orderNo: event.orderNo, kind: event.kind }),
    strategy: stateTransitionStrategy({ client: dynamoDb }),
    failures: new FailureRouter({
      sqs: deps.sqs ?? createSqs(deps.aws),
      group: ORDER_STATUS.group,
      deadLetterQueueUrl: deps.deadLetterQueueUrl,
      schedule: deps.schedule,
    }),
    failureCounts: {
      client: dynamoDb,
      tableName: deps.tables.idempotency,
      recordIdPrefix: recordIdPrefix(ORDER_STATUS.group),
    },
    queues: deps.queueLifetimes,
    envelopeKeys: deps.envelopeKeys,
    business: (msg) =>
      transitionRequest(msg.payload, {
        tableName,
        msgId: msg.message.msgId,
        bornTimestamp: msg.message.bornTimestamp,
        now: new Date(now()),
      }),
    onReport: deps.onReport,
    now,
  });
}

export const consumer = defineConsumer(ORDER_STATUS, createOrderStatusConsumer);
export const handler = consumer.handler;
