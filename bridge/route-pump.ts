import type { Logger } from '@aws-lambda-powertools/logger';
import type { RouteMetrics } from './bridge-metrics.ts';
import type { ReceivedMessage } from './route-consumer.ts';
import type { RouteForwarder } from './route-forwarder.ts';

export type AckResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Where a route's messages come from: a RocketMQ consumer group in production. */
export interface MessageSource {
  start(): Promise<void>;
  /** One long poll; resolves empty when nothing arrived. */
  receive(): Promise<ReceivedMessage[]>;
  /**
   * Acks messages whose forward succeeded, in as few requests as the protocol allows. One result
   * per message, in order; a failed ack is a result, never a rejection.
   */
  ack(messages: readonly ReceivedMessage[]): Promise<AckResult[]>;
  stop(): Promise<void>;
}

export const PumpState = {
  Idle: 'IDLE',
  Running: 'RUNNING',
  Stopping: 'STOPPING',
  Stopped: 'STOPPED',
} as const;
export type PumpState = (typeof PumpState)[keyof typeof PumpState];

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/**
 * Receive → forward → ack, one batch at a time, for one route. Stopping lets the batch being
 * forwarded finish (forward and ack), abandons the long poll in progress (whatever it returns
 * is not processed and reappears after its invisible duration) and then closes the consumer.
 */
export class RoutePump {
  #state: PumpState = PumpState.Idle;
  #inFlight: Promise<unknown> | undefined;
  #wakeBackoff: (() => void) | undefined;

  constructor(
    readonly group: string,
    private readonly source: MessageSource,
    private readonly forwarder: RouteForwarder,
    private readonly metrics: RouteMetrics,
    private readonly logger: Logger,
  ) {}

  get state(): PumpState {
    return this.#state;
  }

  async start(): Promise<void> {
    await this.source.start();
    this.#state = PumpState.Running;
    // The loop ends by itself once the state leaves RUNNING; stop() waits for the batch in flight, not for the poll.
    void this.#run();
  }

  async stop(): Promise<void> {
    if (this.#state === PumpState.Stopped || this.#state === PumpState.Stopping) return;
    const wasRunning = this.#state === PumpState.Running;
    this.#state = PumpState.Stopping;
    this.#wakeBackoff?.();
    await this.#inFlight?.catch(() => undefined);
    if (wasRunning) await this.source.stop().catch((err) => this.logger.warn('consumer shutdown failed', { group: this.group, error: String(err) }));
    this.#state = PumpState.Stopped;
  }

  async #run(): Promise<void> {
    let backoffMs = MIN_BACKOFF_MS;
    while (this.#state === PumpState.Running) {
      let messages: ReceivedMessage[];
      try {
        messages = await this.source.receive();
        backoffMs = MIN_BACKOFF_MS;
      } catch (err) {
        if (this.#state !== PumpState.Running) return;
        this.metrics.receiveFailed();
        this.logger.warn('receive failed; backing off', { group: this.group, backoffMs, error: String(err) });
        await this.#sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        continue;
      }
      if (this.#state !== PumpState.Running) return;
      this.metrics.received(messages.length);
      if (messages.length === 0) continue;
      const batch = this.forwarder.forwardBatch(messages);
      this.#inFlight = batch;
      try {
        await batch;
      } catch (err) {
        // Nothing was acked past the failure point; RocketMQ redelivers the rest.
        this.logger.error('batch failed', { group: this.group, error: String(err) });
      } finally {
        this.#inFlight = undefined;
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wakeBackoff = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
