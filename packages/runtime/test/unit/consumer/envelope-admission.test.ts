import { describe, expect, it } from 'vitest';
import { DEFAULT_RECORD_TTL_SECONDS } from '../../../src/config/index.ts';
import { DEAD_LETTER_ATTRIBUTES } from '../../../src/consumer/failures/failure-router.ts';
import type { RecordReport, Settlement } from '../../../src/consumer/index.ts';
import { RetrySchedule } from '../../../src/rocketmq/index.ts';
import { type Award, awardRecord, consumerUnderTest } from './consumer-under-test.ts';
import { inMemoryStrategy } from './in-memory-strategy.ts';

interface Grant {
  readonly points: number;
}
const grant = (msg: { payload: Award }): Grant => ({ points: msg.payload.points });
const failureOf = (report: RecordReport | undefined) =>
  (report?.settlement as Extract<Settlement, { outcome: 'failed' }> | undefined)?.error;
const attributesOf = (input: Record<string, unknown> | undefined) =>
  Object.fromEntries(
    Object.entries((input?.MessageAttributes ?? {}) as Record<string, { StringValue: string }>).map(([k, v]) => [
      k,
      v.StringValue,
    ]),
  );

describe('rocketmqConsumer: envelopes the group does not admit', () => {
  it('dead-letters a genuine envelope of another topic as UNSUBSCRIBED_TOPIC, whatever its tag, and acts on none of it', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, topic: 'ORDER_TOPIC' });
    const refund = awardRecord({ orderNo: 'SO1', points: 10 }, { envelope: { topic: 'REFUND_TOPIC' } });
    const otherTag = awardRecord(
      { orderNo: 'SO2', points: 10 },
      { envelope: { topic: 'REFUND_TOPIC', tags: 'FINISHED' } },
    );
    const own = awardRecord({ orderNo: 'SO3', points: 10 });
    // Act
    const response = await c.invoke([refund, otherTag, own]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    for (const record of [refund, otherTag]) {
      expect(c.reportOf(record)).toMatchObject({
        attempt: 1,
        disposition: { action: 'dead-letter', code: 'UNSUBSCRIBED_TOPIC' },
      });
      expect(c.reportOf(record)?.msgId).toMatch(/^[0-9A-F]{32}$/);
      expect(failureOf(c.reportOf(record))).toMatchObject({
        classification: 'permanent',
        message: `the envelope's topic "REFUND_TOPIC" is not ORDER_TOPIC, the topic this consumer group subscribes to`,
      });
    }
    expect(c.reportOf(own)?.settlement).toMatchObject({ outcome: 'processed' });
    expect(c.businessCalls.map((m) => m.key)).toEqual(['SO3']);
    expect(store.calls.filter((call) => !('key' in call) || call.key !== 'SO3')).toEqual([]);
    const letters = c.inputsOf('SendMessageCommand').map(attributesOf);
    expect(letters.map((l) => l[DEAD_LETTER_ATTRIBUTES.code])).toEqual(['UNSUBSCRIBED_TOPIC', 'UNSUBSCRIBED_TOPIC']);
  });

  it('without a subscribed topic (the raw middleware), judges no topic', async () => {
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant });
    const refund = awardRecord({ orderNo: 'SO1', points: 10 }, { envelope: { topic: 'REFUND_TOPIC' } });
    await c.invoke([refund]);
    expect(c.reportOf(refund)?.settlement).toMatchObject({ outcome: 'processed' });
  });

  it("dead-letters a genuine envelope stored longer ago than the group's redrive horizon as PAST_REDRIVE_HORIZON", async () => {
    // Prepare: the horizon is the record TTL minus the retry schedule's length, on the consumer's clock
    const now = Date.UTC(2026, 11, 1);
    const horizonMs = (DEFAULT_RECORD_TTL_SECONDS - new RetrySchedule().totalDelaySeconds) * 1000;
    const store = inMemoryStrategy<Grant>();
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, now: () => now });
    const stale = awardRecord({ orderNo: 'SO1', points: 10 }, { envelope: { storeTimestamp: now - horizonMs - 1 } });
    const atHorizon = awardRecord({ orderNo: 'SO2', points: 10 }, { envelope: { storeTimestamp: now - horizonMs } });
    // Act
    const response = await c.invoke([stale, atHorizon]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(c.reportOf(stale)).toMatchObject({ disposition: { action: 'dead-letter', code: 'PAST_REDRIVE_HORIZON' } });
    expect(failureOf(c.reportOf(stale))).toMatchObject({ classification: 'permanent' });
    expect(failureOf(c.reportOf(stale))?.message).toMatch(/^the message was stored 29d 19h 14m ago/);
    expect(c.reportOf(atHorizon)?.settlement).toMatchObject({ outcome: 'processed' });
    expect(c.businessCalls.map((m) => m.key)).toEqual(['SO2']);
  });

  it('derives the horizon from the record TTL the strategy keeps: a longer TTL admits older envelopes', async () => {
    const now = Date.UTC(2026, 11, 1);
    const store = inMemoryStrategy<Grant>({ recordTtlSeconds: 60 * 86_400 });
    const c = consumerUnderTest({ strategy: store.strategy, business: grant, now: () => now });
    const fortyDays = awardRecord(
      { orderNo: 'SO1', points: 10 },
      { envelope: { storeTimestamp: now - 40 * 86_400_000 } },
    );
    await c.invoke([fortyDays]);
    expect(c.reportOf(fortyDays)?.settlement).toMatchObject({ outcome: 'processed' });
  });
});
