import middy from '@middy/core';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { type OrderPaid, parseOrderPaid } from '@rocketmq-lambda/consumers/points/index.ts';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import {
  IMMEDIATE_RETRIES,
  orderEnvelope,
  pointsFixture,
  sqsRecord,
} from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { recordIdPrefix } from '../../../src/config/index.ts';
import type { TransactionalResult } from '../../../src/consumer/index.ts';
import {
  ConsumerEngine,
  type ConsumerInternal,
  FailureRouter,
  rocketmqConsumer,
  transactionalStrategy,
} from '../../../src/consumer/internal.ts';

describe('a batch is finished once', () => {
  it.each([
    ['per record', false],
    ['packed', true],
  ])('routes each record once when a report observer throws after routing (%s)', async (_, packing) => {
    // Prepare: the first report throws; Middy then runs onError, which used to route the batch again
    let reportCalls = 0;
    const f = await pointsFixture({
      packing,
      onReport: () => {
        if (reportCalls++ === 0) throw new Error('metrics sink down');
      },
    });
    const errors: string[] = [];
    const original = console.error;
    console.error = (line: string) => errors.push(line);
    // Act
    let response: SQSBatchResponse;
    try {
      response = await f.invoke([
        orderEnvelope({ orderNo: 'SO-ONCE-BAD', userId: '7301', points: -1 }),
        orderEnvelope({ orderNo: 'SO-ONCE-OK', userId: '7301', points: 40 }),
      ]);
    } finally {
      console.error = original;
    }
    // Assess: one letter for the bad record, one award, every record reported once, the answer as routed
    expect(response.batchItemFailures).toEqual([]);
    expect((await f.deadLetters()).map((l) => l.attributes['failure-code'])).toEqual(['INVALID_PAYLOAD']);
    expect(reportCalls).toBe(2);
    expect(await f.balance('7301')).toBe(40);
    expect(errors).toEqual([expect.stringContaining('consumer batch settled, then failed after routing')]);
  });
});

describe('a batch that fails after routing is answered without cutting the other middlewares short', () => {
  it('lets the onError of middlewares used before it run (metric flush, logger cleanup) and still answers with the routed batch', async () => {
    // Prepare: an observer in front of the consumer middleware; the business fails (the record is
    // retried), then the report observer throws after routing
    const f = await pointsFixture();
    const queue = f.resources.queues[POINTS_GROUP]!;
    const ran: string[] = [];
    const handler = middy<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal>()
      .use({ onError: async () => void ran.push('earlier middleware') })
      .use(
        rocketmqConsumer(
          new ConsumerEngine<OrderPaid, TransactionalResult>({
            group: POINTS_GROUP,
            tagExpression: 'PAID',
            parsePayload: parseOrderPaid,
            keyOf: (order) => order.orderNo,
            strategy: transactionalStrategy({
              client: f.dynamoDb,
              tableName: f.resources.tables.idempotency,
              group: POINTS_GROUP,
              recordIdPrefix: recordIdPrefix(POINTS_GROUP),
            }),
            business: () => {
              throw new Error('points rate table unavailable');
            },
            failures: new FailureRouter({
              sqs: f.sqs,
              group: POINTS_GROUP,
              deadLetterQueueUrl: queue.deadLetter.url,
              schedule: IMMEDIATE_RETRIES,
            }),
            envelopeKeys: PROCESS_SIGNING_KEY.ring,
          }),
          () => {
            throw new Error('metrics sink down');
          },
        ),
      );
    const record = sqsRecord(orderEnvelope({ orderNo: 'SO-ONERR', userId: '7401', points: 5 }), queue.source.arn);
    // Act
    const response = await handler({ Records: [record] }, lambdaContext('points-consumer', 30_000));
    // Assess
    expect(ran).toEqual(['earlier middleware']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
  });
});
