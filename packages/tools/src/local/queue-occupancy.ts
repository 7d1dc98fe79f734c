/**
 * What the local run itself knows about its source queues, kept from the bridge's sends
 * and the pollers' receives and deletes: which messages were put on each queue and have
 * not left it yet.
 *
 * Why not ask SQS: the bridge used to pace itself, and the run used to detect quiet, by
 * reading the queues' approximate counts every 50 ms. The emulator computes each count by
 * walking every message of the queue, so those reads were most of its CPU (docs/emulator.md).
 * The run has the same facts first hand; the queue attributes are read only to confirm the
 * end of a phase and for the final invariants.
 *
 * A message leaves a source queue in two ways: a poller deletes it, or SQS moves it to the
 * DLQ on the next receive after its `maxReceiveCount`-th delivery went unacknowledged (the
 * redrive backstop). The second is invisible to the pollers, so such a message is counted
 * apart (`atRedriveLimit`), and the end of a phase is confirmed from the queue attributes.
 */
export class QueueOccupancy {
  /** group → SQS message id → its body and the highest receive count a poller saw (0: not received yet). */
  private readonly waiting = new Map<string, Map<string, { body: string; receiveCount: number }>>();
  /**
   * Ids settled before their send was registered (the send's answer can be handled after a poller's receive and
   * delete).
   */
  private readonly settledEarly = new Map<string, Set<string>>();

  constructor(private readonly maxReceiveCount: Readonly<Record<string, number>>) {
    for (const group of Object.keys(maxReceiveCount)) {
      this.waiting.set(group, new Map());
      this.settledEarly.set(group, new Set());
    }
  }

  /** The bridge put these messages on the group's queue. */
  sent(group: string, messages: ReadonlyArray<{ messageId: string; body: string }>): void {
    const waiting = this.waitingIn(group);
    const early = this.settledEarly.get(group)!;
    for (const m of messages) {
      if (!early.delete(m.messageId)) waiting.set(m.messageId, { body: m.body, receiveCount: 0 });
    }
  }

  /** A poller received these messages (deliveries carry SQS's `ApproximateReceiveCount`). */
  received(group: string, deliveries: ReadonlyArray<{ messageId: string; receiveCount: number }>): void {
    const waiting = this.waitingIn(group);
    for (const d of deliveries) {
      const seen = waiting.get(d.messageId);
      if (seen && d.receiveCount > seen.receiveCount) seen.receiveCount = d.receiveCount;
    }
  }

  /** These messages left the queue: a poller deleted them, or SQS no longer knows their receipt handle (redriven). */
  settled(group: string, messageIds: readonly string[]): void {
    const waiting = this.waitingIn(group);
    const early = this.settledEarly.get(group)!;
    for (const id of messageIds) {
      if (!waiting.delete(id)) early.add(id);
    }
  }

  /**
   * Messages in the group's source queue (visible, in flight or waiting for a retry), not counting those at the redrive
   * limit.
   */
  inQueue(group: string): number {
    const limit = this.maxReceiveCount[group]!;
    let n = 0;
    for (const m of this.waitingIn(group).values()) if (m.receiveCount < limit) n++;
    return n;
  }

  /** Bodies of the messages still in the group's queue (the redrive-limited ones included). */
  bodiesIn(group: string): string[] {
    return [...this.waitingIn(group).values()].map((m) => m.body);
  }

  /** Delivered `maxReceiveCount` times and not deleted: SQS moves them to the DLQ on a later receive. */
  atRedriveLimit(group: string): number {
    return this.waitingIn(group).size - this.inQueue(group);
  }

  /**
   * Forgets every message still counted: SQS showed every source queue empty while no
   * invocation ran, so they left by a way the account did not see (a poll that failed after
   * its delete, for one). Returns how many were forgotten.
   */
  reconcile(): number {
    let n = 0;
    for (const waiting of this.waiting.values()) {
      n += waiting.size;
      waiting.clear();
    }
    return n;
  }

  /** `inQueue` over every group. */
  total(): number {
    let n = 0;
    for (const group of this.waiting.keys()) n += this.inQueue(group);
    return n;
  }

  private waitingIn(group: string): Map<string, { body: string; receiveCount: number }> {
    const waiting = this.waiting.get(group);
    if (!waiting) throw new Error(`no source queue is tracked for group "${group}"`);
    return waiting;
  }
}
