import { newMsgId, orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { awsError, injectFault } from '../retries/sdk-faults.ts';
import { couponFixture } from './consumer-fixtures.ts';

const ORDER = { orderNo: 'SO202007051422310088', userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' };
const KEY = ORDER.orderNo;
const TEN_MINUTES = 10 * 60_000;

describe('lease mode: coupon grant through an HTTP service (emulator + local coupon service)', () => {
  it('grants once, sends the order as Idempotency-Key and stores the coupon id in a COMPLETED record', async () => {
    // Prepare
    const f = await couponFixture();
    const msgId = newMsgId();
    // Act
    const response = await f.invoke([orderEnvelope(ORDER, { msgId })]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const couponId = f.service.couponFor(KEY)!;
    expect(f.reports[0]!.settlement).toEqual({ outcome: 'processed', result: couponId });
    expect(f.service.received).toHaveLength(1);
    expect(f.service.received[0]).toMatchObject({ idempotencyKey: KEY, body: { orderNo: KEY, userId: '88372' } });
    const record = await f.dedupRecord(KEY);
    expect(record).toMatchObject({
      status: 'COMPLETED',
      token: 1,
      result: couponId,
      firstMsgId: msgId,
      lastMsgId: msgId,
    });
    expect(record!.leaseUntil).toBeUndefined();
  });

  it('replays the stored result to later duplicates with zero calls to the coupon service', async () => {
    // Prepare
    const f = await couponFixture();
    const original = orderEnvelope(ORDER, { msgId: newMsgId() });
    await f.invoke([original]);
    const couponId = f.service.couponFor(KEY);
    // Act: a broker redelivery (same msgId) and an application re-send (new msgId, new paidAt)
    const redelivery = await f.invoke([original]);
    const resend = await f.invoke([orderEnvelope({ ...ORDER, paidAt: '2020-07-05T14:22:35Z' }, { msgId: newMsgId() })]);
    // Assess
    expect(redelivery.batchItemFailures).toEqual([]);
    expect(resend.batchItemFailures).toEqual([]);
    expect(f.reports.slice(1).map((r) => r.settlement)).toEqual([
      expect.objectContaining({ outcome: 'duplicate', reason: 'lease-completed', result: couponId }),
      expect.objectContaining({ outcome: 'duplicate', reason: 'lease-completed', result: couponId }),
    ]);
    expect(f.service.requests(KEY)).toBe(1);
  });

  it('retries (neither acknowledges nor dead-letters) a duplicate that arrives while a live lease is held', async () => {
    // Prepare: the first delivery holds the lease while the service keeps its answer back
    const f = await couponFixture();
    const held = f.service.holdNext();
    const first = f.invoke([orderEnvelope(ORDER)]);
    await held.arrived;
    // Act: a second copy arrives while the holder is still inside the coupon call
    const duplicate = f.record(orderEnvelope(ORDER));
    const during = await f.invoke([duplicate]);
    held.release();
    await first;
    const after = await f.invoke([
      { ...duplicate, attributes: { ...duplicate.attributes, ApproximateReceiveCount: '2' } },
    ]);
    // Assess
    expect(during.batchItemFailures).toEqual([{ itemIdentifier: duplicate.messageId }]);
    const whileHeld = f.reports.find((r) => r.sqsMessageId === duplicate.messageId)!;
    expect(whileHeld.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'LEASE_HELD', classification: 'transient' },
    });
    expect(whileHeld.disposition.action).toBe('retry');
    // Retried when the holder's lease (its 30 s deadline + 5 s margin) ends, not at the schedule's 0 s.
    expect(whileHeld.disposition).toMatchObject({ delaySeconds: expect.toSatisfy((s: number) => s >= 30 && s <= 36) });
    expect(after.batchItemFailures).toEqual([]);
    expect(f.reports.at(-1)!.settlement).toMatchObject({
      outcome: 'duplicate',
      reason: 'lease-completed',
      result: f.service.couponFor(KEY),
    });
    expect(f.service.requests(KEY)).toBe(1);
    expect(await f.deadLetters()).toEqual([]);
  });

  it('marks a failed grant RETRYABLE (not deleted) and lets the next delivery take over at once', async () => {
    // Prepare: the service is down for one request
    const f = await couponFixture();
    f.service.failNext(1, 503);
    // Act: the first delivery fails
    const failed = await f.invoke([orderEnvelope(ORDER)]);
    const afterFailure = await f.dedupRecord(KEY);
    // Act: the next delivery comes at once (no lease to wait out)
    const startedAt = Date.now();
    const retried = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(failed.batchItemFailures).toHaveLength(1);
    expect(f.reports[0]!.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'COUPON_SERVICE_UNAVAILABLE', classification: 'transient' },
    });
    expect(afterFailure).toMatchObject({ status: 'RETRYABLE', token: 1 });
    expect(afterFailure!.leaseUntil).toBeUndefined();
    expect(retried.batchItemFailures).toEqual([]);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(await f.dedupRecord(KEY)).toMatchObject({ status: 'COMPLETED', token: 2, result: f.service.couponFor(KEY) });
    expect(f.service.requests(KEY)).toBe(2);
    expect(f.service.grants(KEY)).toBe(1);
  });

  it('gives up a call that would run past the deadline, frees the key, and the retry gets the same coupon', async () => {
    // Prepare: the service grants but answers only after 5 s; the invocation has 1.5 s
    const f = await couponFixture({ outsideCallReserveMs: 500 });
    f.service.delayNext(5_000);
    // Act
    const startedAt = Date.now();
    const timedOut = await f.invoke([orderEnvelope(ORDER)], { timeoutMs: 1_500 });
    const elapsed = Date.now() - startedAt;
    const afterTimeout = await f.dedupRecord(KEY);
    const retried = await f.invoke([orderEnvelope(ORDER)]);
    // Assess: the handler finished inside its deadline, with the key marked for takeover
    expect(elapsed).toBeLessThan(1_500);
    expect(timedOut.batchItemFailures).toHaveLength(1);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'failed', error: { code: 'COUPON_SERVICE_TIMEOUT' } });
    expect(afterTimeout).toMatchObject({ status: 'RETRYABLE', token: 1 });
    expect(retried.batchItemFailures).toEqual([]);
    // The first call did grant; the Idempotency-Key made the service answer the retry with that coupon
    expect(f.reports[1]!.settlement).toEqual({ outcome: 'processed', result: f.service.couponFor(KEY) });
    expect(f.service.requests(KEY)).toBe(2);
    expect(f.service.grants(KEY)).toBe(1);
  });

  it('takes over an expired lease and rejects the old holder’s late completion by its fencing token', async () => {
    // Prepare: holder A (token 1) is stuck in the coupon call, its answer held back
    const f = await couponFixture();
    const held = f.service.holdNext();
    const zombieMsg = f.record(orderEnvelope(ORDER, { msgId: newMsgId() }));
    const zombie = f.invoke([zombieMsg]);
    await held.arrived;
    const leased = await f.dedupRecord(KEY);
    // Act: B arrives after A's lease ended (its clock is 10 minutes later) and takes over
    const later = f.instance({ now: () => Date.now() + TEN_MINUTES });
    const takeoverMsgId = newMsgId();
    const takeover = await f.invoke([orderEnvelope(ORDER, { msgId: takeoverMsgId })], { handler: later });
    const afterTakeover = await f.dedupRecord(KEY);
    // Act: A wakes up and tries to complete with its stale token
    held.release();
    const zombieResponse = await zombie;
    // Assess
    expect(leased).toMatchObject({ status: 'IN_PROGRESS', token: 1 });
    expect(leased!.leaseUntil).toBeGreaterThan(Date.now());
    expect(takeover.batchItemFailures).toEqual([]);
    expect(afterTakeover).toMatchObject({ status: 'COMPLETED', token: 2, lastMsgId: takeoverMsgId });
    const zombieReport = f.reports.find((r) => r.sqsMessageId === zombieMsg.messageId)!;
    expect(zombieReport.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'LEASE_LOST', classification: 'transient' },
    });
    expect(zombieResponse.batchItemFailures).toEqual([{ itemIdentifier: zombieMsg.messageId }]);
    expect(await f.dedupRecord(KEY)).toMatchObject({
      status: 'COMPLETED',
      token: 2,
      lastMsgId: takeoverMsgId,
      result: f.service.couponFor(KEY),
    });
    // The zombie's redelivery settles as a duplicate with the stored coupon
    await f.invoke([{ ...zombieMsg, attributes: { ...zombieMsg.attributes, ApproximateReceiveCount: '2' } }]);
    expect(f.reports.at(-1)!.settlement).toMatchObject({
      outcome: 'duplicate',
      reason: 'lease-completed',
      result: f.service.couponFor(KEY),
    });
    // Two calls reached the service (A's and B's); the Idempotency-Key kept it to one coupon
    expect(f.service.requests(KEY)).toBe(2);
    expect(f.service.grants(KEY)).toBe(1);
  });

  it('dead-letters a conflicting payload for the same order without calling the service', async () => {
    // Prepare
    const f = await couponFixture();
    await f.invoke([orderEnvelope(ORDER)]);
    // Act: the same order number for another user
    const response = await f.invoke([orderEnvelope({ ...ORDER, userId: 99999 })]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[1]!.settlement).toMatchObject({ outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } });
    expect(f.reports[1]!.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    const dlq = await f.deadLetters();
    expect(dlq.map((d) => d.attributes)).toEqual([
      expect.objectContaining({ 'failure-code': 'PAYLOAD_CONFLICT', 'idempotency-key': KEY, attempt: '1' }),
    ]);
    expect(f.service.requests(KEY)).toBe(1);
  });

  it('dead-letters a grant the service refuses (4xx) on its first attempt and leaves the key retryable for a redrive', async () => {
    // Prepare
    const f = await couponFixture();
    f.service.failNext(1, 422);
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.disposition).toEqual({ action: 'dead-letter', code: 'COUPON_GRANT_REJECTED' });
    const [dead] = await f.deadLetters();
    expect(dead!.attributes).toMatchObject({
      'failure-class': 'permanent',
      'consumer-group': 'coupon-consumer-group',
      attempt: '1',
    });
    expect(dead!.attributes['failure-reason']).toMatch(/422/);
    expect(await f.dedupRecord(KEY)).toMatchObject({ status: 'RETRYABLE' });
  });

  it('dead-letters a refusal whose text SQS would refuse (control characters, an emoji at the cut) with an escaped reason, calling the service once', async () => {
    // Prepare: the 200th character of the service's text is an emoji (two UTF-16 units)
    const f = await couponFixture();
    f.service.failNext(1, 422, `${'x'.repeat(150)}\u0001\u0007 ${'y'.repeat(46)}🎉 tail`);
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess: the letter was written (not retry-dead-letter), so the service is not called again
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.disposition).toEqual({ action: 'dead-letter', code: 'COUPON_GRANT_REJECTED' });
    const [dead] = await f.deadLetters();
    expect(dead!.attributes['failure-reason']).toMatch(/x\\u0001\\u0007 y{46}🎉"… \(206 characters\)$/);
    expect(f.service.requests(KEY)).toBe(1);
  });

  it('is not blocked by its own lease when the answer to the acquisition is lost and the SDK retries it', async () => {
    // Prepare: DynamoDB applies the lease update, the answer never arrives, the SDK retries
    const f = await couponFixture();
    const fault = injectFault(f.dynamoDb, {
      command: (name, input) => name === 'UpdateItemCommand' && String(input.UpdateExpression).includes('ADD'),
      times: 1,
      when: 'after-send',
      error: () => awsError('TimeoutError', 'socket timed out after the request was sent'),
    });
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(fault.injected).toBe(1);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'processed' });
    expect(await f.dedupRecord(KEY)).toMatchObject({ status: 'COMPLETED', token: 1 });
    expect(f.service.requests(KEY)).toBe(1);
  });

  it('counts a completion whose answer was lost as done when the SDK retries it', async () => {
    // Prepare: the COMPLETED update is applied but its answer is lost
    const f = await couponFixture();
    injectFault(f.dynamoDb, {
      command: (name, input) => name === 'UpdateItemCommand' && String(input.UpdateExpression).includes('#result'),
      times: 1,
      when: 'after-send',
      error: () => awsError('TimeoutError', 'socket timed out after the request was sent'),
    });
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toEqual({ outcome: 'processed', result: f.service.couponFor(KEY) });
    expect(f.service.requests(KEY)).toBe(1);
  });

  it('retries a throttled lease acquisition inside the invocation before the coupon is granted', async () => {
    // Prepare: DynamoDB throttles the acquisition twice (the SDK retries; the third attempt passes)
    const f = await couponFixture();
    const fault = injectFault(f.dynamoDb, {
      command: (name, input) => name === 'UpdateItemCommand' && String(input.UpdateExpression).includes('ADD'),
      times: 2,
      error: () =>
        awsError('ProvisionedThroughputExceededException', 'Rate of requests exceeds the allowed throughput.'),
    });
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(fault.injected).toBe(2);
    expect(fault.calls).toBe(3);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'processed' });
    expect(f.service.requests(KEY)).toBe(1);
  });
});
