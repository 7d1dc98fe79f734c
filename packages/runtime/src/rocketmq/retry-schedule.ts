/**
 * RocketMQ's retry schedule for concurrent consumers. The broker has 18 delay levels
 * (1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h); a retry uses level
 * 3 + reconsumeTimes, so the 16 retries wait 10s … 2h (4h45m40s in all) and the 17th
 * failed delivery goes to the group's DLQ (`%DLQ%<group>`).
 */
export const ROCKETMQ_RETRY_DELAYS_SECONDS: readonly number[] = [
  10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
];

/** SQS caps a message's visibility timeout at 12 hours. */
const SQS_MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

export class RetrySchedule {
  /** `delaysSeconds[i]` is the wait after the (i+1)-th failed delivery. */
  constructor(readonly delaysSeconds: readonly number[] = ROCKETMQ_RETRY_DELAYS_SECONDS) {
    if (delaysSeconds.length === 0) throw new InvalidRetryScheduleError('at least one retry delay is required');
    for (const d of delaysSeconds) {
      if (!Number.isInteger(d) || d < 0 || d > SQS_MAX_VISIBILITY_SECONDS) {
        throw new InvalidRetryScheduleError(
          `delay ${d}s must be an integer between 0 and ${SQS_MAX_VISIBILITY_SECONDS}`,
        );
      }
    }
  }

  static parse(csv: string | undefined): RetrySchedule {
    if (csv === undefined || csv.trim() === '') return new RetrySchedule();
    return new RetrySchedule(csv.split(',').map((s) => Number(s.trim())));
  }

  get retries(): number {
    return this.delaysSeconds.length;
  }

  /** Deliveries before the message is dead-lettered: the first one plus every retry (17 by default). */
  get maxDeliveries(): number {
    return this.retries + 1;
  }

  /** Seconds from the first delivery to the last one if every attempt fails. */
  get totalDelaySeconds(): number {
    return this.delaysSeconds.reduce((a, b) => a + b, 0);
  }

  /**
   * What to do after delivery `attempt` (1-based) failed: wait the scheduled delay, or
   * dead-letter when the retries are spent.
   */
  afterFailedAttempt(attempt: number): { action: 'retry'; delaySeconds: number } | { action: 'dead-letter' } {
    if (attempt >= this.maxDeliveries) return { action: 'dead-letter' };
    return { action: 'retry', delaySeconds: this.delaysSeconds[Math.max(1, attempt) - 1]! };
  }
}

export class InvalidRetryScheduleError extends Error {
  override readonly name = 'InvalidRetryScheduleError';
}
