import { describe, expect, it } from 'vitest';
import { ContentionError, TransientFailureError } from '../../../../src/consumer/failures/errors.ts';
import type { Settlement } from '../../../../src/consumer/settlement.ts';
import { commitRetryingContention } from '../../../../src/consumer/steps/contention.ts';

const contended = (together?: string): Settlement => ({
  outcome: 'failed',
  error: new ContentionError('transaction cancelled: TransactionConflict', 'TransactionConflict', together),
});

/** A commit that answers from a script per round, recording what each round was given. */
function scripted(rounds: ((item: string) => Settlement)[]) {
  const given: string[][] = [];
  const commit = async (items: readonly string[]) => {
    given.push([...items]);
    const answer = rounds[Math.min(given.length - 1, rounds.length - 1)]!;
    return items.map(answer);
  };
  const sleeps: number[] = [];
  const policy = (retries: number) => ({ retries, backoffMs: 25, sleep: async (ms: number) => void sleeps.push(ms) });
  return { commit, given, sleeps, policy };
}

describe('commitRetryingContention: the one place contention is retried', () => {
  it('commits again only what met contention, items that share `retryTogether` in one commit, the others alone', async () => {
    // Prepare: a and c contend on one item, d alone; b commits
    const s = scripted([
      (item) => (item === 'b' ? { outcome: 'processed' } : contended(item === 'd' ? undefined : 'hot')),
      () => ({ outcome: 'processed' }),
    ]);
    // Act
    const settlements = await commitRetryingContention(['a', 'b', 'c', 'd'], s.commit, s.policy(3));
    // Assess
    expect(s.given).toEqual([['a', 'b', 'c', 'd'], ['a', 'c'], ['d']]);
    expect(settlements).toEqual(Array(4).fill({ outcome: 'processed' }));
    expect(s.sleeps).toHaveLength(1);
  });

  it('stops after the retries, leaving the contention as the failure, and never retries another failure', async () => {
    // Prepare
    const other: Settlement = {
      outcome: 'failed',
      error: new TransientFailureError('throttled', 'ThrottlingException'),
    };
    const s = scripted([(item) => (item === 'a' ? contended() : other)]);
    // Act
    const settlements = await commitRetryingContention(['a', 'b'], s.commit, s.policy(2));
    // Assess: a three times (the commit and two retries), b once
    expect(s.given).toEqual([['a', 'b'], ['a'], ['a']]);
    expect(settlements[0]).toMatchObject({ outcome: 'failed', error: { code: 'TransactionConflict' } });
    expect(settlements[1]).toBe(other);
  });

  it('backs off exponentially, jittered: [12.5, 37.5) ms, then twice that', async () => {
    const s = scripted([() => contended()]);
    await commitRetryingContention(['a'], s.commit, s.policy(2));
    expect(s.sleeps).toHaveLength(2);
    expect(s.sleeps[0]).toBeGreaterThanOrEqual(12.5);
    expect(s.sleeps[0]).toBeLessThan(37.5);
    expect(s.sleeps[1]).toBeGreaterThanOrEqual(25);
    expect(s.sleeps[1]).toBeLessThan(75);
  });
});
