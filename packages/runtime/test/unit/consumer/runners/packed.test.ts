import { describe, expect, it } from 'vitest';
import { ContentionError, InvalidPayloadError } from '../../../../src/consumer/failures/errors.ts';
import { consumePacked } from '../../../../src/consumer/runners/packed.ts';
import type { Settlement } from '../../../../src/consumer/settlement.ts';
import { awardRecord } from '../consumer-under-test.ts';
import { inMemoryStrategy } from '../in-memory-strategy.ts';
import { serviceError } from '../recording-sqs.ts';
import { runnerSetup, settlementOf } from './runner-setup.ts';

interface Grant {
  readonly points: number;
}
const grant = (msg: { payload: { points: number } }): Grant => ({ points: msg.payload.points });

describe('consumePacked: a batch committed together', () => {
  it('commits the messages whose business succeeded in one batch commit, and judges copies after it', async () => {
    // Prepare: SO2's business refuses it; SO1 comes twice
    const store = inMemoryStrategy<Grant>({ commitBatch: () => undefined });
    const r = runnerSetup<Grant>(store.strategy, (msg) => {
      if (msg.key === 'SO2') throw new InvalidPayloadError('user is closed');
      return grant(msg);
    });
    const records = [
      awardRecord({ orderNo: 'SO1', points: 1 }),
      awardRecord({ orderNo: 'SO2', points: 2 }),
      awardRecord({ orderNo: 'SO3', points: 3 }),
      awardRecord({ orderNo: 'SO1', points: 1 }),
    ];
    const batch = await r.prepare(records);
    // Act
    await consumePacked(r.setup, batch);
    // Assess
    expect(store.calls.filter((c) => c.op === 'commitBatch')).toEqual([{ op: 'commitBatch', keys: ['SO1', 'SO3'] }]);
    expect(store.keysOf('commit')).toEqual([]);
    expect(store.keysOf('abort')).toEqual(['SO2']);
    expect(records.map((record) => settlementOf(batch, record)?.outcome)).toEqual([
      'processed',
      'failed',
      'processed',
      'duplicate',
    ]);
  });

  it('commits the records that met contention again, those that share a hot item together, after one backoff', async () => {
    // Prepare: the first batch commit finds SO1 and SO3 contended on one item, SO2 on another
    const contended = (together: string): Settlement => ({
      outcome: 'failed',
      error: new ContentionError('transaction cancelled: TransactionConflict', 'TransactionConflict', together),
    });
    let round = 0;
    const store = inMemoryStrategy<Grant>({
      commitBatch: (msgs) => {
        if (round++ > 0) return undefined;
        return msgs.map((m) => (m.key === 'SO4' ? { outcome: 'processed' } : contended(m.key === 'SO2' ? 'u2' : 'u7')));
      },
    });
    const r = runnerSetup<Grant>(store.strategy, grant);
    const keys = ['SO1', 'SO2', 'SO3', 'SO4'];
    const batch = await r.prepare(keys.map((orderNo) => awardRecord({ orderNo, points: 1 })));
    // Act
    await consumePacked(r.setup, batch);
    // Assess
    expect(store.calls.filter((c) => c.op === 'commitBatch')).toEqual([
      { op: 'commitBatch', keys },
      { op: 'commitBatch', keys: ['SO1', 'SO3'] },
      { op: 'commitBatch', keys: ['SO2'] },
    ]);
    expect(r.sleeps).toHaveLength(1);
    expect(batch.records.map((record) => settlementOf(batch, record)?.outcome)).toEqual(Array(4).fill('processed'));
    expect(store.keysOf('abort')).toEqual([]);
  });

  it('fails and aborts every ready message when the batch commit throws, classified', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({ commitBatch: () => serviceError('RequestLimitExceeded') });
    const r = runnerSetup<Grant>(store.strategy, grant);
    const batch = await r.prepare([
      awardRecord({ orderNo: 'SO1', points: 1 }),
      awardRecord({ orderNo: 'SO2', points: 2 }),
    ]);
    // Act
    await consumePacked(r.setup, batch);
    // Assess
    expect(store.keysOf('abort')).toEqual(['SO1', 'SO2']);
    for (const record of batch.records)
      expect(settlementOf(batch, record)).toMatchObject({ outcome: 'failed', error: { code: 'RequestLimitExceeded' } });
  });

  it('settles the messages it began as HANDLER_CRASHED when an abort throws, and never calls the batch commit empty', async () => {
    // Prepare: every business fails, and the first abort throws
    const store = inMemoryStrategy<Grant>({
      commitBatch: () => undefined,
      abort: (_msg, _error, call) => (call === 1 ? new Error('abort lost its connection') : undefined),
    });
    const r = runnerSetup<Grant>(store.strategy, () => {
      throw new InvalidPayloadError('user is closed');
    });
    const batch = await r.prepare([awardRecord({ orderNo: 'SO1', points: 1 })]);
    // Act
    await consumePacked(r.setup, batch);
    // Assess
    expect(store.keysOf('commitBatch')).toEqual([]);
    expect(settlementOf(batch, batch.records[0]!)).toMatchObject({
      outcome: 'failed',
      error: { code: 'HANDLER_CRASHED' },
    });
  });
});
