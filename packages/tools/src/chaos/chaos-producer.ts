import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { trafficMessage } from '../local/traffic.ts';
import type { ChaosFact, ChaosMessage } from './chaos-plugin.ts';

/**
 * One plug-in's producer on one topic: msgIds in a range of its own (`msgIdPrefix`, an IP
 * address in hex), born timestamps from the seed rather than the clock, so one seed gives the
 * same bytes.
 */
export class ChaosProducer {
  readonly bornBase: number;
  private readonly ids: MsgIdGenerator;
  private clock = 0;

  constructor(
    readonly topic: string,
    protected readonly seed: number,
    msgIdPrefix: string,
  ) {
    this.bornBase = Date.UTC(2024, 0, 1) + (Math.abs(seed) % 1_000_000) * 1000;
    this.ids = new MsgIdGenerator(msgIdPrefix, seed & 0xffff);
  }

  /** A message of the topic standing for `fact`; `keys` are its RocketMQ keys (the business key). */
  send<F extends ChaosFact>(
    tags: string,
    body: string,
    fact: F,
    label: string,
    keys: readonly string[] = [],
  ): ChaosMessage<F> {
    return { ...trafficMessage(this.envelope(tags, body, keys), { label }), fact };
  }

  /** The envelope alone, for a plug-in that breaks it on purpose. */
  envelope(tags: string, body: string, keys: readonly string[] = []): string {
    const born = this.bornBase + this.clock++;
    return writeEnvelope({ topic: this.topic, msgId: this.ids.next(born), tags, keys, body, bornTimestamp: born });
  }
}
