import type { Logger } from '@aws-lambda-powertools/logger';
import type { RouteMetrics } from './bridge-metrics.ts';
import type { RouteForwarder } from './route-forwarder.ts';
import type { MessageSource, ReceivedMessage } from './types.ts';

export const PumpState = {
  Idle: 'IDLE',
  Running: 'RUNNING',
  Stopping: 'STOPPING',
  Stopped: 'STOPPED',
} as const;
export type PumpState = (typeof PumpState)[keyof typeof PumpState];

export interface RoutePumpOptions {
  readonly group: string;
  readonly source: MessageSource;
  readonly forwarder: RouteForwarder;
  readonly metrics: RouteMetrics;
  readonly logger: Logger;
  /** Batches received and not yet acked at any one time; 1 is a strict receive → forward → ack loop. */
  readonly batchesInFlight: number;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/**
 * Receive → forward → ack for one route, in `batchesInFlight` lanes: each lane receives a batch,
 * forwards it and acks what landed, then receives the next, so that many receives and forwards
 * overlap while one lane waits on the network. A message is still acked only after its own
 * forward succeeded; lanes share nothing but the consumer and the backoff.
 *
 * Stopping lets every batch being forwarded finish (forward and ack), abandons the long polls in
 * progress (whatever they return is not processed and reappears after its invisible duration)
 * and then closes the consumer.
 */
export class RoutePump {
  readonly group: string;
  readonly #options: RoutePumpOptions;
  #state: PumpState = PumpState.Idle;
  readonly #forwarding = new Set<Promise<unknown>>();
  #backoffMs = MIN_BACKOFF_MS;
  #pause: Promise<void> | undefined;
  #endPause: (() => void) | undefined;

  constructor(options: RoutePumpOptions) {
    this.#options = options;
    this.group = options.group;
  }

  get state(): PumpState {
    return this.#state;
  }

  async start(): Promise<void> {
    await this.#options.source.start();
    this.#state = PumpState.Running;
    // The lanes end by themselves once the state leaves RUNNING; stop() waits for the forwards in flight, not for the
    // polls.
    for (let i = 0; i < this.#options.batchesInFlight; i++) void this.#lane();
  }

  async stop(): Promise<void> {
    if (this.#state === PumpState.Stopped || this.#state === PumpState.Stopping) return;
    const wasRunning = this.#state === PumpState.Running;
    this.#state = PumpState.Stopping;
    this.#endPause?.();
    await Promise.allSettled(this.#forwarding);
    if (wasRunning) {
      await this.#options.source
        .stop()
        .catch((err) =>
          this.#options.logger.warn('consumer shutdown failed', { group: this.group, error: String(err) }),
        );
    }
    this.#state = PumpState.Stopped;
  }

  async #lane(): Promise<void> {
    const { source, forwarder, metrics, logger } = this.#options;
    while (this.#state === PumpState.Running) {
      let messages: ReceivedMessage[];
      try {
        messages = await source.receive();
        this.#backoffMs = MIN_BACKOFF_MS;
      } catch (err) {
        if (this.#state !== PumpState.Running) return;
        metrics.receiveFailed();
        await this.#backOff(err);
        continue;
      }
      if (this.#state !== PumpState.Running) return;
      metrics.received(messages.length);
      if (messages.length === 0) continue;
      const batch = forwarder.forwardBatch(messages);
      this.#forwarding.add(batch);
      try {
        await batch;
      } catch (err) {
        // Nothing was acked past the failure point; RocketMQ redelivers the rest.
        logger.error('batch failed', { group: this.group, error: String(err) });
      } finally {
        this.#forwarding.delete(batch);
      }
    }
  }

  /**
   * One pause for the whole route, however many lanes' receives fail while it lasts: lanes that
   * fail during a pause wait out the same one, so the wait doubles once per pause, not per lane.
   */
  #backOff(err: unknown): Promise<void> {
    if (this.#pause) return this.#pause;
    const backoffMs = this.#backoffMs;
    this.#options.logger.warn('receive failed; backing off', { group: this.group, backoffMs, error: String(err) });
    this.#backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
    this.#pause = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, backoffMs);
      this.#endPause = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      this.#pause = undefined;
      this.#endPause = undefined;
    });
    return this.#pause;
  }
}
