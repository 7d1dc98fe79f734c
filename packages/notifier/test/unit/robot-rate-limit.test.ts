import { describe, expect, it } from 'vitest';
import { classifyErrcode } from '../../src/robot-client.ts';
import { type BucketState, DEFAULT_BUCKET_POLICY, takeToken } from '../../src/robot-rate-limit.ts';

/** Grants within any window of `windowMs` (sliding). */
function maxInWindow(times: number[], windowMs: number): number {
  let best = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

describe('robot token bucket', () => {
  it('never grants more than 19 permits in any 75 s (60 s + dispatch delay + timeout), however hard it is asked', () => {
    // Prepare: callers hammering every 10-500 ms for an hour.
    let state: BucketState | null = null;
    const grants: number[] = [];
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    // Act
    for (let t = 0; t < 3_600_000; t += 10 + Math.floor(random() * 490)) {
      const { permit, next } = takeToken(state, t, DEFAULT_BUCKET_POLICY);
      state = next;
      if (permit.granted) grants.push(t);
    }
    // Assess
    expect(maxInWindow(grants, 75_000)).toBeLessThanOrEqual(19);
    expect(maxInWindow(grants, 60_000)).toBeLessThanOrEqual(16);
    expect(grants.length).toBeGreaterThan(700); // ~12 a minute sustained
  });

  it('says when the next permit will be available', () => {
    let state: BucketState | null = null;
    for (let i = 0; i < DEFAULT_BUCKET_POLICY.capacity; i++)
      state = takeToken(state, 1_000, DEFAULT_BUCKET_POLICY).next;
    const { permit } = takeToken(state, 1_000, DEFAULT_BUCKET_POLICY);
    expect(permit).toEqual({ granted: false, retryAt: 1_000 + DEFAULT_BUCKET_POLICY.refillIntervalMs });
  });

  it('grants nothing while paused after a throttle answer', () => {
    const paused: BucketState = { tokens: 4, refilledAt: 0, pausedUntil: 60_000 };
    expect(takeToken(paused, 59_999, DEFAULT_BUCKET_POLICY).permit).toEqual({ granted: false, retryAt: 60_000 });
    expect(takeToken(paused, 60_000, DEFAULT_BUCKET_POLICY).permit).toEqual({ granted: true });
  });

  it('does not mint tokens when a container clock runs behind', () => {
    const state: BucketState = { tokens: 0, refilledAt: 100_000, pausedUntil: 0 };
    expect(takeToken(state, 90_000, DEFAULT_BUCKET_POLICY).permit.granted).toBe(false);
  });
});

describe('errcode classification', () => {
  it.each([
    [0, 'ok'],
    [410100, 'throttled'],
    [130101, 'throttled'],
    [310000, 'configuration'],
    [400101, 'configuration'],
    [400106, 'configuration'],
    [300001, 'configuration'],
    [430102, 'content'],
    [460101, 'content'],
    [-1, 'transient'],
    [999999, 'transient'],
  ])('%i is %s', (errcode, expected) => {
    expect(classifyErrcode(errcode)).toBe(expected);
  });
});
