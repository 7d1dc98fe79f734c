import type { Logger } from '@aws-lambda-powertools/logger';
import { messageGroupOf, type SigningKeyRing, signEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { BridgeRoute } from './bridge-config.ts';
import type { RouteMetrics } from './bridge-metrics.ts';
import { type BridgeTracing, endForward, type TracedForward, traceForward } from './bridge-tracing.ts';
import { type DeadLetterQueue, DeadLetterReason } from './dead-letter-queue.ts';
import { type Envelope, envelopeOf, serializeEnvelope } from './received-envelope.ts';
import type { BeforeAckHook, ForwardTarget, MessageSource, OutboundMessage, ReceivedMessage } from './types.ts';

export interface RouteForwarderOptions {
  readonly route: BridgeRoute;
  readonly clusterName: string;
  readonly target: ForwardTarget;
  readonly deadLetters: DeadLetterQueue;
  readonly maxMessageBytes: number;
  readonly metrics: RouteMetrics;
  readonly logger: Logger;
  readonly ack: MessageSource['ack'];
  readonly beforeAck?: BeforeAckHook;
  /** Signs every envelope (and dead letter) with the ring's current key, for consumers that require it. */
  readonly signingKeys?: SigningKeyRing;
  /** A span per forward, its context carried on in the envelope; absent when the stage's tracing is off. */
  readonly tracing?: BridgeTracing;
  readonly now?: () => Date;
}

export interface BatchOutcome {
  readonly acked: readonly string[];
  readonly deadLettered: readonly string[];
  /** Left un-acked: RocketMQ redelivers each once its invisible duration ends. */
  readonly notAcked: readonly { readonly msgId: string; readonly reason: string }[];
}

interface Prepared {
  /** Position in the received batch: the order RocketMQ handed the messages over in. */
  readonly index: number;
  readonly message: ReceivedMessage;
  readonly envelope: Envelope;
  readonly outbound: OutboundMessage;
  readonly forward?: TracedForward;
}

/**
 * Forwards one received batch and acks exactly the messages that reached the target (or the DLQ).
 * The ack comes after the forward on purpose: a crash in between redelivers the message, so the
 * target may see it twice, never zero times; consumers deduplicate on the business key.
 */
export class RouteForwarder {
  constructor(private readonly options: RouteForwarderOptions) {}

  async forwardBatch(messages: readonly ReceivedMessage[]): Promise<BatchOutcome> {
    const { target, maxMessageBytes, signingKeys } = this.options;
    // A key that cannot be read fails the batch before anything is sent: it stays un-acked and comes back.
    const key = signingKeys ? await signingKeys.current() : undefined;
    const prepared = messages.map((message, index) => this.#prepare(message, index, key));
    const tooLarge = prepared.filter((p) => target.sizeOf(p.outbound) > maxMessageBytes);

    const notAcked: { msgId: string; reason: string }[] = [];
    const deadLettered: Prepared[] = [];
    const stops = new GroupStops(this.options.route.fifo);
    for (const p of tooLarge) {
      const outcome = await this.#deadLetterTooLarge(p);
      if (outcome.ok) {
        deadLettered.push(p);
        continue;
      }
      notAcked.push({ msgId: p.message.msgId, reason: `dead-lettering failed: ${outcome.reason}` });
      stops.stopAt(p);
    }
    const forwarded = await this.#forwardFitting(
      prepared.filter((p) => !tooLarge.includes(p)),
      stops,
      notAcked,
    );
    this.#record(forwarded, deadLettered, notAcked);
    if (this.options.tracing) {
      for (const p of prepared)
        endForward(
          p.forward,
          forwarded.includes(p) ? 'forwarded' : deadLettered.includes(p) ? 'dead-lettered' : 'not-acked',
        );
    }

    const toAck = [...deadLettered, ...forwarded].map((p) => p.message);
    if (toAck.length > 0 && this.options.beforeAck) await this.options.beforeAck(toAck);
    const acked = await this.#ackAll(toAck);
    return { acked, deadLettered: deadLettered.map((p) => p.message.msgId), notAcked };
  }

  /**
   * Forwards what fits and returns what landed; the rest goes to `notAcked`. FIFO: nothing of a
   * group after a message that did not land (in the target, or a too-large one in the DLQ) is sent
   * or acked, so RocketMQ hands the group back from that message on, in order. The SQS target
   * sends nothing of a group after its failure itself (group-ordered-sending.ts); the check here
   * keeps the acks right whatever a target does.
   */
  async #forwardFitting(
    fitting: readonly Prepared[],
    stops: GroupStops,
    notAcked: { msgId: string; reason: string }[],
  ): Promise<Prepared[]> {
    const sendable = fitting.filter((p) => !stops.isBehindStop(p));
    const results = new Map(
      (sendable.length > 0 ? await this.options.target.forward(sendable.map((p) => p.outbound)) : []).map((r) => [
        r.id,
        r,
      ]),
    );
    const forwarded: Prepared[] = [];
    for (const p of fitting) {
      const result = results.get(p.outbound.id);
      if (stops.isBehindStop(p)) {
        notAcked.push({ msgId: p.message.msgId, reason: 'an earlier message of its FIFO group did not land' });
      } else if (result?.ok) {
        forwarded.push(p);
      } else {
        notAcked.push({ msgId: p.message.msgId, reason: result && !result.ok ? result.reason : 'no forward result' });
        stops.stopAt(p);
      }
    }
    return forwarded;
  }

  #prepare(message: ReceivedMessage, index: number, key: Uint8Array | undefined): Prepared {
    const { tracing, route } = this.options;
    const forward = tracing ? traceForward(tracing, message, route.group, route.target.kind) : undefined;
    const unsigned = envelopeOf(message, this.options.clusterName, this.options.now, forward?.hop);
    const envelope = key ? signEnvelope(unsigned, key) : unsigned;
    const fifo = this.options.route.fifo;
    return {
      index,
      message,
      envelope,
      ...(forward ? { forward } : {}),
      outbound: {
        ...(forward?.awsTraceHeader ? { awsTraceHeader: forward.awsTraceHeader } : {}),
        id: `m${index}`,
        body: serializeEnvelope(envelope),
        ...(fifo
          ? {
              messageGroupId: messageGroupOf(message, this.options.route.messageGroupFrom),
              deduplicationId: message.msgId,
            }
          : {}),
        ...(message.storeTimestamp !== undefined ? { time: new Date(message.storeTimestamp) } : {}),
      },
    };
  }

  #deadLetterTooLarge(p: Prepared) {
    const size = this.options.target.sizeOf(p.outbound);
    const detail = `envelope is ${size} bytes; the target accepts at most ${this.options.maxMessageBytes}`;
    this.options.logger.error('message too large to forward, sending it to the DLQ', {
      msgId: p.message.msgId,
      topic: p.message.topic,
      group: this.options.route.group,
      reason: DeadLetterReason.BodyTooLarge,
      detail,
    });
    return this.options.deadLetters.send({
      envelope: p.envelope,
      reason: DeadLetterReason.BodyTooLarge,
      detail,
      ...(p.outbound.messageGroupId !== undefined ? { messageGroupId: p.outbound.messageGroupId } : {}),
    });
  }

  #record(forwarded: Prepared[], deadLettered: Prepared[], notAcked: { msgId: string; reason: string }[]): void {
    const { metrics, logger, route } = this.options;
    const now = (this.options.now?.() ?? new Date()).getTime();
    const newestStore = Math.max(...forwarded.map((p) => p.message.storeTimestamp ?? Number.NEGATIVE_INFINITY));
    metrics.forwarded(forwarded.length, Number.isFinite(newestStore) ? Math.max(0, now - newestStore) : undefined);
    metrics.deadLettered(deadLettered.length);
    metrics.forwardFailed(notAcked.length);
    if (forwarded.length > 0) {
      logger.info('forwarded', {
        group: route.group,
        topic: route.topic,
        count: forwarded.length,
        msgIds: forwarded.map((p) => p.message.msgId),
      });
    }
    for (const failure of notAcked) {
      logger.warn('forward failed; left un-acked for RocketMQ to redeliver', { group: route.group, ...failure });
    }
  }

  async #ackAll(messages: ReceivedMessage[]): Promise<string[]> {
    if (messages.length === 0) return [];
    const results = await this.options.ack(messages);
    const acked: string[] = [];
    results.forEach((result, index) => {
      const msgId = messages[index]!.msgId;
      if (result.ok) {
        acked.push(msgId);
        return;
      }
      // The message is in the target already; RocketMQ will deliver it again and the bridge will
      // forward a duplicate, which the consumers' idempotency absorbs.
      this.options.metrics.ackFailed(1);
      this.options.logger.warn('ack failed after a successful forward; expect a duplicate', {
        group: this.options.route.group,
        msgId,
        error: result.reason,
      });
    });
    return acked;
  }
}

/** Where each FIFO message group of a batch stopped: the position of its first message that did not land. */
class GroupStops {
  readonly #first = new Map<string, number>();
  constructor(private readonly fifo: boolean) {}

  stopAt(p: Prepared): void {
    const group = p.outbound.messageGroupId;
    if (!this.fifo || group === undefined) return;
    this.#first.set(group, Math.min(p.index, this.#first.get(group) ?? p.index));
  }

  isBehindStop(p: Prepared): boolean {
    const group = p.outbound.messageGroupId;
    const stop = group === undefined ? undefined : this.#first.get(group);
    return stop !== undefined && stop < p.index;
  }
}
