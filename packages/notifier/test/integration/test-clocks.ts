import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../../src/index.ts';

/**
 * A clock that only moves when someone sleeps: a sequential invocation that waits out a 10-minute
 * ban finishes instantly. Only for one invocation at a time (concurrent sleepers would add up).
 */
export class SteppingClock implements Clock {
  constructor(private t = Date.parse('2026-11-30T03:24:40.000Z')) {}
  now(): number {
    return this.t;
  }
  async sleep(ms: number): Promise<void> {
    this.t += Math.max(0, ms);
    await Promise.resolve();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/**
 * Real time, `factor` times faster: concurrent invocations, DynamoDB round trips and the fake robot
 * all see one consistent timeline, so a one-minute storm takes 60 / factor seconds.
 */
export class AcceleratedClock implements Clock {
  private readonly realStart = performance.now();
  constructor(
    readonly factor: number,
    private readonly virtualStart = Date.parse('2026-11-30T03:24:00.000Z'),
  ) {}
  now(): number {
    return Math.floor(this.virtualStart + (performance.now() - this.realStart) * this.factor);
  }
  async sleep(ms: number): Promise<void> {
    await delay(Math.max(0, ms) / this.factor);
  }
}
