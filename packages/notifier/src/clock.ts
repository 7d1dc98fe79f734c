import { setTimeout as delay } from 'node:timers/promises';

/**
 * Time as the notifier sees it. Injected so tests of a 10-minute DingTalk ban or a one-minute storm
 * can run on a fast or manually advanced clock instead of waiting in real time.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => (ms > 0 ? delay(ms) : Promise.resolve()),
};
