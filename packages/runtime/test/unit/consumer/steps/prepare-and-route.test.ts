import { describe, expect, it } from 'vitest';
import { TransientFailureError } from '../../../../src/consumer/failures/errors.ts';
import { routeBatch } from '../../../../src/consumer/steps/route.ts';
import { awardRecord, rawRecord } from '../consumer-under-test.ts';
import { inMemoryStrategy } from '../in-memory-strategy.ts';
import { runnerSetup, settlementOf } from '../runners/runner-setup.ts';

interface Grant {
  readonly points: number;
}

describe('prepareBatch: every record read before anything is trusted or written', () => {
  it('settles what it refuses or filters, and hands on the rest with key, fingerprint and attempt', async () => {
    // Prepare
    const r = runnerSetup<Grant>(inMemoryStrategy<Grant>().strategy, () => ({ points: 1 }));
    const [ready, filtered, unreadable, invalid] = [
      awardRecord({ orderNo: 'SO1', points: 1 }, { envelope: { reconsumeTimes: 2 }, receiveCount: 3 }),
      awardRecord({ orderNo: 'SO2', points: 1 }, { envelope: { tags: 'FINISHED' } }),
      rawRecord('{"not":"an envelope"}'),
      awardRecord({ orderNo: 'SO3', points: -1 }),
    ];
    // Act
    const batch = await r.prepare([ready!, filtered!, unreadable!, invalid!]);
    // Assess
    expect(batch.messages.map((m) => [m.key, m.attempt])).toEqual([['SO1', 5]]);
    expect(batch.messages[0]!.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(settlementOf(batch, ready!)).toBeUndefined();
    expect(settlementOf(batch, filtered!)).toEqual({ outcome: 'filtered', tag: 'FINISHED' });
    expect(settlementOf(batch, unreadable!)).toMatchObject({ outcome: 'failed', error: { code: 'INVALID_ENVELOPE' } });
    expect(batch.settledAs(unreadable!)?.msgId).toBeUndefined();
    expect(settlementOf(batch, invalid!)).toMatchObject({ outcome: 'failed', error: { code: 'INVALID_PAYLOAD' } });
  });
});

describe('routeBatch: every record routed once, reported in batch order', () => {
  it('answers with the records that come back, dead-letters the permanent failures and acknowledges the rest', async () => {
    // Prepare: a prepared batch whose one message is settled as failed, transiently
    const r = runnerSetup<Grant>(inMemoryStrategy<Grant>().strategy, () => ({ points: 1 }));
    const [retried, refused, filtered] = [
      awardRecord({ orderNo: 'SO1', points: 1 }),
      awardRecord({ orderNo: 'SO2', points: -1 }),
      awardRecord({ orderNo: 'SO3', points: 1 }, { envelope: { tags: 'FINISHED' } }),
    ];
    const batch = await r.prepare([retried!, refused!, filtered!]);
    batch.settleMessage(batch.messages[0]!, {
      outcome: 'failed',
      error: new TransientFailureError('ledger unavailable'),
    });
    // Act
    const { response, reports } = await routeBatch(r.setup, batch);
    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: retried!.messageId }] });
    expect(reports.map((x) => x.disposition)).toEqual([
      { action: 'retry', delaySeconds: 10 },
      { action: 'dead-letter', code: 'INVALID_PAYLOAD' },
      { action: 'ack' },
    ]);
    expect(reports[0]).toMatchObject({ group: 'points-consumer-group', key: 'SO1', attempt: 1 });
    expect(r.inputsOf('SendMessageCommand')).toHaveLength(1);
    expect(r.inputsOf('ChangeMessageVisibilityCommand')).toHaveLength(1);
  });
});
