import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { inMessageGroup, newMsgId, orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { awsError, injectFault } from '../retries/sdk-faults.ts';
import { orderStatusFixture } from './consumer-fixtures.ts';

const ORDER_NO = 'SO202007051422310088';
const paid = (fields: Record<string, unknown> = {}, msgId = newMsgId()) =>
  orderEnvelope(
    { orderNo: ORDER_NO, userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z', ...fields },
    { msgId, tags: 'PAID' },
  );
const finished = (fields: Record<string, unknown> = {}, msgId = newMsgId(), keys?: string[]) =>
  orderEnvelope(
    { orderNo: ORDER_NO, finishedAt: '2020-07-12T09:00:00Z', ...fields },
    { msgId, tags: 'FINISHED', ...(keys ? { keys } : {}) },
  );

describe('state-transition mode: order status by conditional update, an orderly group (emulator)', () => {
  it('moves WAIT_PAY → PAID → FINISHED, stamping each transition', async () => {
    // Prepare
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    const paidMsgId = newMsgId();
    const finishedMsgId = newMsgId();
    // Act
    const first = await f.invoke([paid({}, paidMsgId)]);
    const afterPaid = await f.order(ORDER_NO);
    const second = await f.invoke([finished({}, finishedMsgId)]);
    // Assess
    expect(first.batchItemFailures).toEqual([]);
    expect(second.batchItemFailures).toEqual([]);
    expect(afterPaid).toMatchObject({ status: 'PAID', paidAt: '2020-07-05T14:22:31Z', statusMsgId: paidMsgId });
    expect(await f.order(ORDER_NO)).toMatchObject({
      status: 'FINISHED',
      paidAt: '2020-07-05T14:22:31Z',
      finishedAt: '2020-07-12T09:00:00Z',
      statusMsgId: finishedMsgId,
    });
    expect(f.outcomes()).toEqual([
      ['processed', 'ack'],
      ['processed', 'ack'],
    ]);
  });

  it('acknowledges a duplicate or late event as success without touching the order', async () => {
    // Prepare
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    const paidMsgId = newMsgId();
    await f.invoke([paid({}, paidMsgId)]);
    const afterFirst = await f.order(ORDER_NO);
    // Act: a broker redelivery, an application re-send with another paidAt, then a PAID arriving after FINISHED
    const redelivery = await f.invoke([paid({}, paidMsgId)]);
    const resend = await f.invoke([paid({ paidAt: '2020-07-05T14:22:40Z' })]);
    const afterDuplicates = await f.order(ORDER_NO);
    await f.invoke([finished()]);
    const late = await f.invoke([paid()]);
    // Assess
    for (const r of [redelivery, resend, late]) expect(r.batchItemFailures).toEqual([]);
    expect(afterDuplicates).toEqual(afterFirst);
    const duplicates = f.reports.filter((r) => r.settlement.outcome === 'duplicate');
    expect(duplicates).toHaveLength(3);
    expect(duplicates.map((r) => r.settlement)).toEqual([
      { outcome: 'duplicate', reason: 'state-already-advanced', winnerMsgId: paidMsgId },
      { outcome: 'duplicate', reason: 'state-already-advanced', winnerMsgId: paidMsgId },
      expect.objectContaining({ outcome: 'duplicate', reason: 'state-already-advanced' }),
    ]);
    expect((await f.order(ORDER_NO))!.status).toBe('FINISHED');
    expect(await f.deadLetters()).toEqual([]);
  });

  it('retries an event that overtook the order’s creation and applies it once the order exists', async () => {
    // Prepare: PAID arrives before the order is written
    const f = await orderStatusFixture();
    await f.send(paid());
    // Act: the first delivery finds no order; the order is created; the retry applies
    await pollOnce({
      sqs: f.sqs,
      queueUrl: f.queue.source.url,
      queueArn: f.queue.source.arn,
      handler: f.handler,
      functionName: 'order-status-consumer',
    });
    const beforeCreation = await f.order(ORDER_NO);
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    await f.drain();
    // Assess
    expect(beforeCreation).toBeUndefined(); // the update never created a half order
    expect(f.reports[0]!.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'NOT_YET_APPLICABLE', classification: 'transient' },
    });
    expect(f.reports[0]!.disposition).toEqual({ action: 'retry', delaySeconds: 0 });
    expect(f.reports[1]).toMatchObject({
      attempt: 2,
      settlement: { outcome: 'processed' },
      disposition: { action: 'ack' },
    });
    expect((await f.order(ORDER_NO))!.status).toBe('PAID');
  });

  it('retries FINISHED that overtook PAID and applies it after PAID: never dead-lettered', async () => {
    // Prepare: FINISHED ahead of PAID, each in its own message group (a producer that keyed the
    // FINISHED by something else), so nothing holds FINISHED back behind its PAID
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    // Act: FINISHED is attempted before PAID is even sent (in one batch the two groups run at
    // once, and which commits first would be the machine's choice), then both are drained
    await f.send(finished({}, newMsgId(), [`${ORDER_NO}-F`]));
    await pollOnce({
      sqs: f.sqs,
      queueUrl: f.queue.source.url,
      queueArn: f.queue.source.arn,
      handler: f.handler,
      functionName: 'order-status-consumer',
    });
    await f.send(paid());
    await f.drain();
    // Assess
    const finishedFirst = f.reports.find((r) => r.key === `${ORDER_NO}#FINISHED`)!;
    expect(finishedFirst.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'NOT_YET_APPLICABLE', classification: 'transient' },
    });
    expect(finishedFirst.disposition).toEqual({ action: 'retry', delaySeconds: 0 });
    expect(f.reports.filter((r) => r.settlement.outcome === 'processed').map((r) => r.key)).toEqual([
      `${ORDER_NO}#PAID`,
      `${ORDER_NO}#FINISHED`,
    ]);
    expect(await f.deadLetters()).toEqual([]);
    expect((await f.order(ORDER_NO))!.status).toBe('FINISHED');
  });

  it('retries FINISHED for an order still WAIT_PAY and dead-letters it only at its maximum, never as an illegal transition', async () => {
    // Prepare: its PAID never comes; every retry interval is 0 s
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    const before = await f.order(ORDER_NO);
    await f.send(finished());
    // Act
    await f.drain();
    // Assess: 17 attempts, each one counted failure, the last dead-lettered as RETRIES_EXHAUSTED
    expect(f.reports.map((r) => r.attempt)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    expect(
      f.reports.every((r) => r.settlement.outcome === 'failed' && r.settlement.error.code === 'NOT_YET_APPLICABLE'),
    ).toBe(true);
    expect(f.reports[16]!.disposition).toEqual({ action: 'dead-letter', code: 'RETRIES_EXHAUSTED' });
    const [dead] = await f.deadLetters();
    expect(dead!.attributes).toMatchObject({
      'failure-code': 'RETRIES_EXHAUSTED',
      'idempotency-key': `${ORDER_NO}#FINISHED`,
      attempt: '17',
    });
    expect(dead!.attributes['failure-reason']).toMatch(
      /^NOT_YET_APPLICABLE: order .* is WAIT_PAY: FINISHED needs PAID first/,
    );
    expect(await f.order(ORDER_NO)).toEqual(before);
  });

  it('dead-letters an illegal transition (an order in a status outside the lifecycle) on its first attempt', async () => {
    // Prepare
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'CANCELLED');
    const before = await f.order(ORDER_NO);
    // Act
    const response = await f.invoke([finished()]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'ILLEGAL_TRANSITION', classification: 'permanent' },
    });
    expect(f.reports[0]!.disposition).toEqual({ action: 'dead-letter', code: 'ILLEGAL_TRANSITION' });
    const [dead] = await f.deadLetters();
    expect(dead!.attributes).toMatchObject({
      'failure-code': 'ILLEGAL_TRANSITION',
      'idempotency-key': `${ORDER_NO}#FINISHED`,
      attempt: '1',
    });
    expect(dead!.attributes['failure-reason']).toMatch(/CANCELLED: FINISHED needs PAID/);
    expect(await f.order(ORDER_NO)).toEqual(before);
  });

  it('applies PAID then FINISHED of one order from one batch in order, and a repeated PAID in the batch once', async () => {
    // Prepare: one order is one message group
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    // Act
    const response = await f.invoke(
      [paid(), paid(), finished()].map((body) => inMessageGroup(f.record(body), ORDER_NO)),
    );
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports.map((r) => r.settlement.outcome).sort()).toEqual(['duplicate', 'processed', 'processed']);
    expect(f.reports.find((r) => r.settlement.outcome === 'duplicate')!.settlement).toMatchObject({
      reason: 'in-batch-duplicate',
    });
    expect((await f.order(ORDER_NO))!.status).toBe('FINISHED');
  });

  it('filters other tags and dead-letters a body without an order number', async () => {
    // Prepare
    const f = await orderStatusFixture();
    // Act
    const response = await f.invoke([
      orderEnvelope({ orderNo: ORDER_NO }, { tags: 'REFUNDED' }),
      orderEnvelope({ finishedAt: '2020-07-12T09:00:00Z' }, { tags: 'FINISHED' }),
    ]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(
      f.reports.map((r) => (r.settlement.outcome === 'failed' ? r.settlement.error.code : r.settlement.outcome)).sort(),
    ).toEqual(['INVALID_PAYLOAD', 'filtered']);
  });

  it('rides out throttling with the SDK’s own retries inside the invocation', async () => {
    // Prepare: the update is throttled twice, then passes
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    const fault = injectFault(f.dynamoDb, {
      command: 'UpdateItemCommand',
      times: 2,
      error: () =>
        awsError('ProvisionedThroughputExceededException', 'Rate of requests exceeds the allowed throughput.'),
    });
    // Act
    const response = await f.invoke([paid()]);
    // Assess
    expect(fault.calls).toBe(3);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toEqual({ outcome: 'processed' });
    expect((await f.order(ORDER_NO))!.status).toBe('PAID');
  });

  it('fails a record whose throttling outlasts the SDK retries as transient, retried on the schedule', async () => {
    // Prepare
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    const fault = injectFault(f.dynamoDb, {
      command: (name, input) => name === 'UpdateItemCommand' && input.TableName === f.resources.tables.orders,
      error: () => awsError('ThrottlingException', 'Throughput exceeds the current capacity.'),
    });
    // Act
    const response = await f.invoke([paid()]);
    // Assess: three SDK attempts, then one scheduled retry; nothing dead-lettered, nothing applied
    expect(fault.calls).toBe(3);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(f.reports[0]!.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'ThrottlingException', classification: 'transient' },
    });
    expect(f.reports[0]!.disposition).toEqual({ action: 'retry', delaySeconds: 0 });
    expect((await f.order(ORDER_NO))!.status).toBe('WAIT_PAY');
  });

  it('does not apply a transition twice when its answer is lost and the SDK retries it', async () => {
    // Prepare: the update is applied, its answer lost; the SDK retries the same update
    const f = await orderStatusFixture();
    await f.createOrder(ORDER_NO, 'WAIT_PAY');
    injectFault(f.dynamoDb, {
      command: 'UpdateItemCommand',
      times: 1,
      when: 'after-send',
      error: () => awsError('TimeoutError', 'socket timed out'),
    });
    // Act
    const response = await f.invoke([paid()]);
    // Assess: the retry's precondition fails because the order moved on: a duplicate, not an error
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'duplicate', reason: 'state-already-advanced' });
    expect((await f.order(ORDER_NO))!.status).toBe('PAID');
  });
});
