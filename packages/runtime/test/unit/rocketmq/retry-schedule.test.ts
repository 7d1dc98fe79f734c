import { describe, expect, it } from 'vitest';
import { InvalidRetryScheduleError, RetrySchedule } from '../../../src/rocketmq/retry-schedule.ts';

describe('RetrySchedule', () => {
  const schedule = new RetrySchedule();

  it('is RocketMQ’s: 16 retries, 10 s to 2 h, 4h45m40s in all, 17 deliveries', () => {
    expect(schedule.retries).toBe(16);
    expect(schedule.maxDeliveries).toBe(17);
    expect(schedule.totalDelaySeconds).toBe(4 * 3600 + 45 * 60 + 40);
  });

  it.each([
    [1, 10],
    [2, 30],
    [3, 60],
    [12, 600],
    [13, 1200],
    [16, 7200],
  ])('waits the scheduled delay after failed attempt %i (%i s)', (attempt, seconds) => {
    expect(schedule.afterFailedAttempt(attempt)).toEqual({ action: 'retry', delaySeconds: seconds });
  });

  it('dead-letters after the 17th failed delivery and beyond', () => {
    expect(schedule.afterFailedAttempt(17)).toEqual({ action: 'dead-letter' });
    expect(schedule.afterFailedAttempt(40)).toEqual({ action: 'dead-letter' });
  });

  it('parses a configured schedule and rejects delays SQS cannot express', () => {
    expect(RetrySchedule.parse('1, 2,3').delaysSeconds).toEqual([1, 2, 3]);
    expect(RetrySchedule.parse(undefined).retries).toBe(16);
    expect(() => RetrySchedule.parse('10,abc')).toThrow(InvalidRetryScheduleError);
    expect(() => new RetrySchedule([13 * 3600])).toThrow(InvalidRetryScheduleError);
    expect(() => new RetrySchedule([])).toThrow(InvalidRetryScheduleError);
  });
});
