import type { AckResult, MessageSource, ReceivedMessage } from '@rocketmq-lambda/bridge/index.ts';
import { type CpuMeter, type CpuReading, cpuBetween } from './cpu-meter.ts';

/** One consumer's drain of the preloaded topic. */
export interface Drain {
  readonly ms: number;
  /** CPU spent during the drain by the consumer and by the broker. */
  readonly cpu: CpuReading;
}

/**
 * A route's source with a stopwatch. It times each message from the receive that returned it to
 * the ack that settled it (what the bridge adds per message: forward and ack), and the whole drain
 * from the first receive that returned messages until `expected` distinct messages were acked, so
 * that the consumer's start-up (route lookups, rebalancing) does not count.
 */
export class TimedSource implements MessageSource {
  readonly forwardMs: number[] = [];
  readonly #receivedAt = new Map<string, number>();
  readonly #acked = new Set<string>();
  readonly #drained = Promise.withResolvers<Drain>();
  #first: { at: number; cpu: Promise<CpuReading> } | undefined;

  constructor(
    private readonly inner: MessageSource,
    private readonly expected: number,
    private readonly cpu: CpuMeter,
  ) {}

  /** Resolves once `expected` distinct messages were acked. */
  get drained(): Promise<Drain> {
    return this.#drained.promise;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async receive(): Promise<ReceivedMessage[]> {
    const messages = await this.inner.receive();
    const now = performance.now();
    if (messages.length > 0) this.#first ??= { at: now, cpu: this.cpu.read() };
    for (const m of messages) this.#receivedAt.set(m.msgId, now);
    return messages;
  }

  async ack(messages: readonly ReceivedMessage[]): Promise<AckResult[]> {
    const results = await this.inner.ack(messages);
    const now = performance.now();
    results.forEach((result, i) => {
      if (result.ok) this.#settled(messages[i]!, now);
    });
    return results;
  }

  stop(): Promise<void> {
    return this.inner.stop();
  }

  #settled(message: ReceivedMessage, now: number): void {
    this.forwardMs.push(now - this.#receivedAt.get(message.msgId)!);
    this.#acked.add(message.msgId);
    if (this.#acked.size === this.expected) {
      const first = this.#first!;
      this.#drained.resolve(
        Promise.all([first.cpu, this.cpu.read()]).then(([before, after]) => ({
          ms: now - first.at,
          cpu: cpuBetween(before, after),
        })),
      );
    }
  }
}
