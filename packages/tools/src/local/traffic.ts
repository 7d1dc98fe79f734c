import {
  InvalidEnvelopeError,
  type MessageGroupFacts,
  messageGroupFactsOf,
  parseEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';

/**
 * One message the bridge hands to SQS. `topic` decides which consumer groups get a copy;
 * a body that is not an envelope has no topic the bridge could read, so every selected
 * group gets it and its real consumer dead-letters it.
 */
export interface TrafficMessage {
  readonly body: string;
  /** `undefined`: not an envelope (see `rejection`). */
  readonly topic: string | undefined;
  readonly msgId?: string;
  /**
   * What its message group on an orderly group's FIFO queue derives from (`messageGroupOf`); `undefined` when not an
   * envelope.
   */
  readonly orderingFacts?: MessageGroupFacts;
  /** Why the body is not an envelope, as the consumer will also find. */
  readonly rejection?: string;
  /** What this copy stands for in a scenario ("application re-send"), shown in the report. */
  readonly label?: string;
  /** Where it came from (a file's line number). */
  readonly line?: number;
  /** Milliseconds after its phase starts at which the bridge sends it. */
  readonly atMs?: number;
  /** Only these groups get it (a rebalance replays one group's offsets, not the topic's). */
  readonly groups?: readonly string[];
}

/** A run's traffic: phases run in order; a phase that waits for quiet starts once every queue is empty. */
export interface TrafficPhase {
  readonly name: string;
  readonly messages: readonly TrafficMessage[];
  /** Start only after everything sent before has been consumed (a rebalance replays processed offsets). */
  readonly afterQuiet?: boolean;
}

/** Describes a body as the bridge sees it: its topic and msgId, or why it is not an envelope. */
export function trafficMessage(
  body: string,
  extra: Partial<Omit<TrafficMessage, 'body' | 'topic' | 'msgId' | 'rejection'>> = {},
): TrafficMessage {
  try {
    const message = parseEnvelope(body);
    return { body, topic: message.topic, msgId: message.msgId, orderingFacts: messageGroupFactsOf(message), ...extra };
  } catch (error) {
    const rejection = error instanceof InvalidEnvelopeError ? error.reason : String(error);
    return { body, topic: undefined, rejection, ...extra };
  }
}

/**
 * Order numbers the traffic refers to (ORDER_TOPIC bodies with an `orderNo`): the orders
 * the order service must have created before they could be paid or finished.
 */
export function orderNumbersIn(phases: readonly TrafficPhase[]): string[] {
  const orders = new Set<string>();
  for (const phase of phases) {
    for (const m of phase.messages) {
      if (m.topic !== 'ORDER_TOPIC') continue;
      try {
        const body = JSON.parse(parseEnvelope(m.body).body) as { orderNo?: unknown };
        if (typeof body?.orderNo === 'string' && body.orderNo.trim() !== '') orders.add(body.orderNo.trim());
      } catch {
        // not an order body: the consumers will say why
      }
    }
  }
  return [...orders];
}
