import { describe, expect, it } from 'vitest';
import { ContentionError, TransientFailureError } from '../../../../src/consumer/failures/errors.ts';
import { consumeConcurrently } from '../../../../src/consumer/runners/concurrent.ts';
import { awardRecord } from '../consumer-under-test.ts';
import { inMemoryStrategy } from '../in-memory-strategy.ts';
import { serviceError } from '../recording-sqs.ts';
import { runnerSetup, settlementOf } from './runner-setup.ts';

interface Grant {
  readonly points: number;
}

describe('consumeConcurrently: each key begun, run and committed on its own', () => {
  it('settles every message: committed, known to begin already, or failed in its business, each apart', async () => {
    // Prepare: SO-DONE was committed before; SO-BAD's business fails
    const store = inMemoryStrategy<Grant>();
    const r = runnerSetup<Grant>(store.strategy, (msg) => {
      if (msg.key === 'SO-BAD') throw new TransientFailureError('ledger unavailable');
      return { points: msg.payload.points };
    });
    const done = awardRecord({ orderNo: 'SO-DONE', points: 1 });
    const first = await r.prepare([done]);
    await consumeConcurrently(r.setup, first);
    const [fine, again, bad] = [
      awardRecord({ orderNo: 'SO1', points: 2 }),
      awardRecord({ orderNo: 'SO-DONE', points: 1 }),
      awardRecord({ orderNo: 'SO-BAD', points: 3 }),
    ];
    const batch = await r.prepare([fine!, again!, bad!]);
    // Act
    await consumeConcurrently(r.setup, batch);
    // Assess
    expect(settlementOf(batch, fine!)).toEqual({ outcome: 'processed' });
    expect(settlementOf(batch, again!)).toMatchObject({ outcome: 'duplicate', reason: 'dedup-record-exists' });
    expect(settlementOf(batch, bad!)).toMatchObject({ outcome: 'failed', error: { message: 'ledger unavailable' } });
    expect(store.keysOf('abort')).toEqual(['SO-BAD']);
    expect(store.keysOf('commit')).toEqual(['SO-DONE', 'SO1']);
  });

  it('runs the business once for copies of one key, and judges the later copies against the first after it', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const runs: string[] = [];
    const r = runnerSetup<Grant>(store.strategy, (msg) => {
      runs.push(msg.message.msgId);
      return { points: msg.payload.points };
    });
    const [first, copy, conflicting] = [
      awardRecord({ orderNo: 'SO1', points: 5 }),
      awardRecord({ orderNo: 'SO1', points: 5 }),
      awardRecord({ orderNo: 'SO1', points: 50 }),
    ];
    const batch = await r.prepare([first!, copy!, conflicting!]);
    // Act
    await consumeConcurrently(r.setup, batch);
    // Assess
    expect(runs).toEqual([batch.messages[0]!.message.msgId]);
    expect(settlementOf(batch, copy!)).toMatchObject({ outcome: 'duplicate', reason: 'in-batch-duplicate' });
    expect(settlementOf(batch, conflicting!)).toMatchObject({ outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } });
  });

  it('commits again after contention, with a growing backoff, and aborts once the retries are spent', async () => {
    // Prepare: SO1 meets contention twice, SO2 always
    const store = inMemoryStrategy<Grant>({
      commit: (msg, _value, call) =>
        msg.key === 'SO2' || call <= 2 ? new ContentionError('conflict', 'TransactionConflict') : undefined,
    });
    const r = runnerSetup<Grant>(store.strategy, (msg) => ({ points: msg.payload.points }), { concurrency: 1 });
    const [so1, so2] = [awardRecord({ orderNo: 'SO1', points: 1 }), awardRecord({ orderNo: 'SO2', points: 2 })];
    const batch = await r.prepare([so1!, so2!]);
    // Act
    await consumeConcurrently(r.setup, batch);
    // Assess: SO1 on its third commit; SO2 after 1 + 3 commits, then aborted
    expect(settlementOf(batch, so1!)).toEqual({ outcome: 'processed' });
    expect(settlementOf(batch, so2!)).toMatchObject({ outcome: 'failed', error: { code: 'TransactionConflict' } });
    expect(store.keysOf('commit')).toEqual(['SO1', 'SO1', 'SO1', 'SO2', 'SO2', 'SO2', 'SO2']);
    expect(store.keysOf('abort')).toEqual(['SO2']);
    // Backoff before rounds 1, 2 (SO1) and 1, 2, 3 (SO2): jitter(25 · 2^round) lies in [12.5, 37.5) · 2^round
    const rounds = [0, 1, 0, 1, 2];
    expect(r.sleeps.map((ms, i) => ms >= 12.5 * 2 ** rounds[i]! && ms < 37.5 * 2 ** rounds[i]!)).toEqual(
      Array(5).fill(true),
    );
  });

  it('fails a message whose abort throws as HANDLER_CRASHED, aborting it again, and leaves its batch-mates alone', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({
      abort: (_msg, _error, call) => (call === 1 ? new Error('abort lost its connection') : undefined),
    });
    const r = runnerSetup<Grant>(store.strategy, (msg) => {
      if (msg.key === 'SO2') throw serviceError('InternalServerError');
      return { points: msg.payload.points };
    });
    const [so1, so2] = [awardRecord({ orderNo: 'SO1', points: 1 }), awardRecord({ orderNo: 'SO2', points: 2 })];
    const batch = await r.prepare([so1!, so2!]);
    // Act
    await consumeConcurrently(r.setup, batch);
    // Assess
    expect(settlementOf(batch, so1!)).toEqual({ outcome: 'processed' });
    expect(settlementOf(batch, so2!)).toMatchObject({
      outcome: 'failed',
      error: { code: 'HANDLER_CRASHED', message: 'handler failed: abort lost its connection' },
    });
    expect(store.keysOf('abort')).toEqual(['SO2', 'SO2']);
  });

  it('keeps at most `concurrency` messages in flight', async () => {
    // Prepare
    let inFlight = 0;
    let most = 0;
    const r = runnerSetup<Grant>(
      inMemoryStrategy<Grant>().strategy,
      async (msg) => {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return { points: msg.payload.points };
      },
      { concurrency: 3 },
    );
    const batch = await r.prepare(Array.from({ length: 10 }, (_, i) => awardRecord({ orderNo: `SO${i}`, points: 1 })));
    // Act
    await consumeConcurrently(r.setup, batch);
    // Assess
    expect(most).toBe(3);
    expect(batch.records.every((record) => settlementOf(batch, record)?.outcome === 'processed')).toBe(true);
  });
});
