import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { HeldBackError, InvalidPayloadError, TransientFailureError } from '../../../../src/consumer/failures/errors.ts';
import { consumeInGroups } from '../../../../src/consumer/runners/orderly.ts';
import { awardRecord } from '../consumer-under-test.ts';
import { inMemoryStrategy } from '../in-memory-strategy.ts';
import { serviceError } from '../recording-sqs.ts';
import { runnerSetup, settlementOf } from './runner-setup.ts';

interface Grant {
  readonly points: number;
}
const inGroup = (group: string, record: SQSRecord): SQSRecord => ({
  ...record,
  attributes: { ...record.attributes, MessageGroupId: group },
});
const award = (group: string, orderNo: string, points = 1) => inGroup(group, awardRecord({ orderNo, points }));

describe('consumeInGroups: one record of a message group at a time', () => {
  it('begins a record only after the one before it in its group committed', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const r = runnerSetup<Grant>(store.strategy, (msg) => ({ points: msg.payload.points }));
    const batch = await r.prepare([award('A', 'SO-A1'), award('A', 'SO-A2')]);
    // Act
    await consumeInGroups(r.setup, batch);
    // Assess
    expect(store.calls.map((c) => `${c.op} ${'key' in c ? c.key : ''}`)).toEqual([
      'begin SO-A1',
      'commit SO-A1',
      'begin SO-A2',
      'commit SO-A2',
    ]);
  });

  it('holds back the rest of a group behind a record that will be retried, decides its fate in turn, and goes on with the other groups', async () => {
    // Prepare
    const runs: string[] = [];
    const r = runnerSetup<Grant>(inMemoryStrategy<Grant>().strategy, (msg) => {
      runs.push(msg.key);
      if (msg.key === 'SO-A1') throw new TransientFailureError('not ready');
      return { points: msg.payload.points };
    });
    const [a1, a2, b1] = [award('A', 'SO-A1'), award('A', 'SO-A2'), award('B', 'SO-B1')];
    const batch = await r.prepare([a1!, a2!, b1!]);
    // Act
    await consumeInGroups(r.setup, batch);
    // Assess: A1's retry was routed during the run (its group stopped on it); A2 never ran
    expect(runs.sort()).toEqual(['SO-A1', 'SO-B1']);
    expect(await batch.dispositions.get(a1!)).toEqual({ action: 'retry', delaySeconds: 10 });
    expect(r.inputsOf('ChangeMessageVisibilityCommand')).toHaveLength(1);
    const heldBack = settlementOf(batch, a2!);
    expect(heldBack).toMatchObject({ outcome: 'failed' });
    expect((heldBack as { error: unknown }).error).toBeInstanceOf(HeldBackError);
    expect(settlementOf(batch, b1!)).toEqual({ outcome: 'processed' });
  });

  it('fails a record whose abort throws as HANDLER_CRASHED, aborting it again, as the other runners do; other groups go on', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>({
      abort: (_msg, _error, call) => (call === 1 ? new Error('abort lost its connection') : undefined),
    });
    const r = runnerSetup<Grant>(store.strategy, (msg) => {
      if (msg.key === 'SO-A1') throw serviceError('InternalServerError');
      return { points: msg.payload.points };
    });
    const [a1, b1] = [award('A', 'SO-A1'), award('B', 'SO-B1')];
    const batch = await r.prepare([a1!, b1!]);
    // Act
    await consumeInGroups(r.setup, batch);
    // Assess
    expect(settlementOf(batch, a1!)).toMatchObject({
      outcome: 'failed',
      error: { code: 'HANDLER_CRASHED', message: 'handler failed: abort lost its connection' },
    });
    expect(store.keysOf('abort')).toEqual(['SO-A1', 'SO-A1']);
    expect(settlementOf(batch, b1!)).toEqual({ outcome: 'processed' });
  });

  it('goes on after a record that is dead-lettered', async () => {
    // Prepare
    const r = runnerSetup<Grant>(inMemoryStrategy<Grant>().strategy, (msg) => {
      if (msg.key === 'SO-A1') throw new InvalidPayloadError('user is closed');
      return { points: msg.payload.points };
    });
    const [a1, a2] = [award('A', 'SO-A1'), award('A', 'SO-A2')];
    const batch = await r.prepare([a1!, a2!]);
    // Act
    await consumeInGroups(r.setup, batch);
    // Assess
    expect(await batch.dispositions.get(a1!)).toEqual({ action: 'dead-letter', code: 'INVALID_PAYLOAD' });
    expect(settlementOf(batch, a2!)).toEqual({ outcome: 'processed' });
  });

  it('judges a later copy of a key in its group against the first once that committed', async () => {
    // Prepare
    const store = inMemoryStrategy<Grant>();
    const r = runnerSetup<Grant>(store.strategy, (msg) => ({ points: msg.payload.points }));
    const [first, copy] = [award('A', 'SO1', 5), award('A', 'SO1', 5)];
    const batch = await r.prepare([first!, copy!]);
    // Act
    await consumeInGroups(r.setup, batch);
    // Assess
    expect(settlementOf(batch, copy!)).toMatchObject({ outcome: 'duplicate', reason: 'in-batch-duplicate' });
    expect(store.keysOf('begin')).toEqual(['SO1']);
  });
});
