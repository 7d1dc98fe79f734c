/**
 * The example group of docs/adding-a-consumer-group.md: a team's fourth consumer group,
 * written the way the walk-through says. It lives under packages/tools/src/testing so that the catalogue
 * the project deploys stays as it is; the tests hand its entry to the CDK app, the local
 * resources and the operations tools next to the catalogue's own entries.
 *
 * REFUND_TOPIC `REFUNDED` → the order's status moves FINISHED → REFUNDED, by conditional update.
 */

import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  defineConsumer,
  IllegalTransitionError,
  identifier,
  parseJsonPayload,
} from '@rocketmq-lambda/runtime/consumer/index.ts';
import { z } from 'zod';

export const REFUNDS = {
  group: 'refund-consumer-group',
  strategy: 'state-transition',
  functionName: 'refund-consumer',
  topic: 'REFUND_TOPIC',
  tagExpression: 'REFUNDED',
  entry: 'packages/tools/src/testing/example-group/handler.ts',
  tables: ['orders'],
  tuning: { maxConcurrency: 4 },
} as const satisfies ConsumerGroupDefinition;

const refundSchema = z.object({ orderNo: identifier('orderNo') });

export const consumer = defineConsumer(REFUNDS, {
  parsePayload: (body) => parseJsonPayload(refundSchema, body),
  keyOf: (refund) => `${refund.orderNo}#REFUNDED`,
  business:
    ({ tables }) =>
    (msg) => ({
      update: {
        TableName: tables.orders,
        Key: { orderNo: msg.payload.orderNo },
        UpdateExpression: 'SET #status = :refunded',
        ConditionExpression: '#status = :finished',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':refunded': 'REFUNDED', ':finished': 'FINISHED' },
      },
      explainRejection: (current) => {
        if (current?.status === 'REFUNDED') return { outcome: 'duplicate', reason: 'state-already-advanced' };
        throw new IllegalTransitionError(
          `order ${msg.payload.orderNo} is ${String(current?.status ?? 'absent')}: only a FINISHED order is refunded`,
        );
      },
    }),
});
export const handler = consumer.handler;
