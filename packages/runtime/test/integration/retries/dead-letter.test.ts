import { SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { newMsgId, orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { orderStatusFixture } from '../strategies/consumer-fixtures.ts';

const ORDER_NO = 'SO202007051422310088';

describe('dead-lettering like RocketMQ’s %DLQ% (emulator, zero-delay schedule)', () => {
  it('moves a message that fails 17 times to the group’s DLQ with its reason', async () => {
    // Prepare: PAID for an order that never appears; every delay of the schedule is 0 s
    const f = await orderStatusFixture();
    const msgId = newMsgId();
    await f.send(orderEnvelope({ orderNo: ORDER_NO, userId: 88372, points: 300 }, { msgId, tags: 'PAID' }));
    // Act
    await f.drain();
    // Assess: 16 scheduled retries, the 17th delivery dead-lettered and acknowledged
    expect(f.reports.map((r) => r.attempt)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    expect(f.reports.slice(0, 16).every((r) => r.disposition.action === 'retry')).toBe(true);
    expect(f.reports[16]!.disposition).toEqual({ action: 'dead-letter', code: 'RETRIES_EXHAUSTED' });
    const dlq = await f.deadLetters();
    expect(dlq).toHaveLength(1);
    expect(dlq[0]!.attributes).toMatchObject({
      'failure-code': 'RETRIES_EXHAUSTED',
      'failure-class': 'transient',
      'consumer-group': 'order-status-consumer-group',
      'rocketmq-msg-id': msgId,
      'idempotency-key': `${ORDER_NO}#PAID`,
      attempt: '17',
      'source-queue': f.queue.source.arn,
    });
    expect(dlq[0]!.attributes['failure-reason']).toMatch(
      /^NOT_YET_APPLICABLE: order SO202007051422310088 does not exist yet/,
    );
    expect(JSON.parse(dlq[0]!.body).data.msgId).toBe(msgId);
    expect(await f.sourceDepth()).toEqual({ visible: 0, inFlight: 0 });
  });

  it('sends a permanent error to the DLQ on its first attempt, never retried', async () => {
    // Prepare: FINISHED for an order in a status outside the lifecycle
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'CANCELLED');
    await f.send(orderEnvelope({ orderNo: ORDER_NO, finishedAt: '2020-07-12T09:00:00Z' }, { tags: 'FINISHED' }));
    // Act
    await f.drain();
    // Assess
    expect(f.reports).toHaveLength(1);
    expect(f.reports[0]).toMatchObject({
      attempt: 1,
      disposition: { action: 'dead-letter', code: 'ILLEGAL_TRANSITION' },
    });
    const dlq = await f.deadLetters();
    expect(dlq.map((d) => [d.attributes['failure-code'], d.attributes['failure-class'], d.attributes.attempt])).toEqual(
      [['ILLEGAL_TRANSITION', 'permanent', '1']],
    );
    expect(await f.sourceDepth()).toEqual({ visible: 0, inFlight: 0 });
    expect((await f.order(ORDER_NO))!.status).toBe('CANCELLED');
  });

  it('still reaches the DLQ through the queue’s redrive policy when the function crashes on every delivery', async () => {
    // Prepare: a handler that dies before it can route anything; the queue hands the message back at once
    const f = await orderStatusFixture();
    await f.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: f.queue.source.url, Attributes: { VisibilityTimeout: '0' } }),
    );
    await f.send(orderEnvelope({ orderNo: ORDER_NO, userId: 88372, points: 300 }, { tags: 'PAID' }));
    let deliveries = 0;
    const crashing = async () => {
      deliveries++;
      throw new Error('out of memory');
    };
    // Act
    for (let i = 0; i < f.queue.maxReceiveCount + 10; i++) {
      const r = await pollOnce({
        sqs: f.sqs,
        queueUrl: f.queue.source.url,
        queueArn: f.queue.source.arn,
        handler: crashing,
        functionName: 'order-status-consumer',
      });
      if (r.received === 0 && (await f.sourceDepth()).visible === 0) break;
    }
    // Assess: maxReceiveCount deliveries, then SQS moved it; no reason attributes on this path.
    // An orderly group's count is 10 × 17 + 1: it never comes before the consumer's own count.
    expect(deliveries).toBe(f.queue.maxReceiveCount);
    expect(f.queue.maxReceiveCount).toBe(10 * 17 + 1);
    const dlq = await f.deadLetters();
    expect(dlq).toHaveLength(1);
    expect(dlq[0]!.attributes['failure-code']).toBeUndefined();
  });
});
