import { setTimeout as sleep } from 'node:timers/promises';
import type { QueueOccupancy } from './queue-occupancy.ts';

/**
 * When a run's queues are quiet: nothing in any source queue, no invocation running.
 *
 * Quiet is what the run's own account says, confirmed by the queue attributes twice in a
 * row: a message at the redrive limit leaves only on a later receive, and stock moto computes
 * each count separately, so a message whose visibility ends between two of them is briefly
 * counted nowhere. Should the account ever keep counting messages SQS no longer holds, the
 * queues seen empty three times, a second apart, with no invocation running, are quiet too:
 * the run must never wait for a message that is gone. Such messages are counted as
 * `untrackedDepartures`.
 */
export class QuietDetector {
  untrackedDepartures = 0;

  constructor(
    private readonly idle: () => boolean,
    private readonly occupancy: QueueOccupancy,
    /** Messages in the source queues as SQS counts them. */
    private readonly messagesInQueues: () => Promise<number>,
    private readonly deadline: number,
  ) {}

  /** True once quiet; false if the deadline passed first. */
  async wait(): Promise<boolean> {
    let confirmations = 0;
    let emptyWhileCounted = 0;
    let lastLook = 0;
    while (Date.now() < this.deadline) {
      const idle = this.idle();
      if (idle && this.occupancy.total() === 0) {
        confirmations = (await this.messagesInQueues()) === 0 ? confirmations + 1 : 0;
        if (confirmations >= 2) return true;
        await sleep(confirmations > 0 ? 20 : 200);
        continue;
      }
      confirmations = 0;
      if (idle && Date.now() - lastLook >= 1000) {
        lastLook = Date.now();
        emptyWhileCounted = (await this.messagesInQueues()) === 0 ? emptyWhileCounted + 1 : 0;
        if (emptyWhileCounted >= 3) {
          this.untrackedDepartures += this.occupancy.reconcile();
          return true;
        }
      } else if (!idle) emptyWhileCounted = 0;
      await sleep(20);
    }
    return false;
  }
}
