import { type ConsumerGroupDefinition, lifetimesOf } from '@rocketmq-lambda/runtime/config/index.ts';
import { RetrySchedule, ROCKETMQ_RETRY_DELAYS_SECONDS } from '@rocketmq-lambda/runtime/rocketmq/index.ts';

export class InvalidTimeScaleError extends Error {
  override readonly name = 'InvalidTimeScaleError';
}

/**
 * RocketMQ's retry schedule compressed for a local run: every delay divided by `scale`.
 * Only the local run builds this; deployed functions read their schedule from
 * `RETRY_DELAYS_SECONDS` and never see a scale.
 *
 * SQS visibility timeouts are whole seconds (and `RetrySchedule` enforces that), so a
 * compressed delay is rounded to the nearest second, and never below 1 s: a zero delay
 * would turn a lease still held by a crashed invocation into a hot loop that burns all
 * seventeen deliveries in a moment, which RocketMQ (10 s minimum) never does. At the
 * default 600: twelve retries after 1 s, then 2, 3, 6 and 12 s, 35 s for all sixteen
 * instead of 4 h 45 min. `scale` 1 is the real schedule.
 */
export function compressedRetrySchedule(
  scale: number,
  delaysSeconds: readonly number[] = ROCKETMQ_RETRY_DELAYS_SECONDS,
): RetrySchedule {
  if (!Number.isFinite(scale) || scale < 1)
    throw new InvalidTimeScaleError(`time scale must be a number >= 1, got ${scale}`);
  return new RetrySchedule(delaysSeconds.map((d) => (d === 0 ? 0 : Math.max(1, Math.round(d / scale)))));
}

/**
 * The schedule a group's handler runs with locally: its own schedule from the catalogue
 * (RocketMQ's growing delays for a concurrent group, the fixed `orderlySchedule` interval for
 * an orderly one), compressed. The number of deliveries stays the catalogue's, so the redrive
 * count the provisioning derives still fits.
 */
export function compressedScheduleOf(definition: ConsumerGroupDefinition, scale: number): RetrySchedule {
  return compressedRetrySchedule(scale, lifetimesOf(definition).lifetimes.schedule.delaysSeconds);
}
