import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { sqsText } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  DEAD_LETTER_KIND_ATTRIBUTE,
  InvalidEnvelopeError,
  NOTICE_REASON_ATTRIBUTE,
  parseEnvelope,
  type SigningKeyRing,
  signatureRefusals,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { OutboundRouteConfig } from './bridge-config.ts';
import type { RouteMetrics } from './bridge-metrics.ts';
import { describeError } from './forward-target.ts';
import { producedMessageOf } from './outbound-message.ts';
import { PumpState } from './route-pump.ts';
import type { ProducedMessage, RocketMQProducer } from './types.ts';

/** The name the outbound route goes by in the bridge's status, logs and metrics (`ConsumerGroup` dimension). */
export const OUTBOUND_ROUTE_NAME = 'outbound';
/** `dead-letter-kind` of what the outbound route refused: the relayed body itself, kept byte for byte. */
export const OUTBOUND_REFUSAL_KIND = 'bridge-outbound-refusal';

/** Why the outbound route refused a message: it is never produced, and goes to the outbound DLQ with the reason. */
export const OutboundRefusalReason = {
  /** Not an envelope signed with one of the stage's keys: anyone but the relay could have put it there. */
  UNAUTHENTICATED: 'UNAUTHENTICATED_MESSAGE',
  /** Signed (or not JSON at all), but not an envelope the parser accepts. */
  INVALID_ENVELOPE: 'INVALID_ENVELOPE',
} as const;
export type OutboundRefusalReason = (typeof OutboundRefusalReason)[keyof typeof OutboundRefusalReason];

/** A message the outbound route will not produce, with its reason. */
export class OutboundRefusedError extends Error {
  override readonly name = 'OutboundRefusedError';
  constructor(
    readonly reason: OutboundRefusalReason,
    readonly detail: string,
  ) {
    super(`${reason}: ${detail}`);
  }
}

export interface OutboundRouteOptions {
  readonly sqs: SQSClient;
  readonly config: OutboundRouteConfig;
  readonly producer: RocketMQProducer;
  readonly signingKeys: SigningKeyRing;
  readonly metrics: RouteMetrics;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** What became of one received message: deleted from the outbound queue (produced or refused), or left there. */
type Settled = { readonly message: Message; readonly done: boolean };

/**
 * The bridge's reverse route: polls the outbound queue, verifies each relayed envelope's signature,
 * produces it to RocketMQ, and deletes it from the queue only once the broker stored it. A send that
 * fails leaves the message to come back after the queue's visibility timeout: at least once, and
 * downstream consumers deduplicate on the event id. What is not a signed envelope is never produced:
 * it goes to the outbound DLQ, body untouched, with its reason (`OutboundRefusalReason`).
 */
export class OutboundRoute {
  readonly #options: OutboundRouteOptions;
  readonly #abort = new AbortController();
  #state: PumpState = PumpState.Idle;
  #loop: Promise<void> | undefined;

  constructor(options: OutboundRouteOptions) {
    this.#options = options;
  }

  get state(): PumpState {
    return this.#state;
  }

  async start(): Promise<void> {
    await this.#options.producer.start();
    this.#state = PumpState.Running;
    this.#loop = this.#run();
  }

  /** Stops polling (an outstanding long poll is abandoned), lets the batch in hand finish, stops the producer. */
  async stop(): Promise<void> {
    if (this.#state === PumpState.Stopped) return;
    this.#state = PumpState.Stopping;
    this.#abort.abort();
    await this.#loop;
    await this.#options.producer.stop().catch(() => undefined);
    this.#state = PumpState.Stopped;
  }

  async #run(): Promise<void> {
    let backoffMs = 0;
    while (this.#state === PumpState.Running) {
      try {
        await this.pollOnce();
        backoffMs = 0;
      } catch (err) {
        if (this.#abort.signal.aborted) return;
        this.#options.metrics.receiveFailed();
        backoffMs = Math.min(30_000, Math.max(500, backoffMs * 2));
        this.#options.logger.warn('outbound poll failed', { error: describeError(err), retryInMs: backoffMs });
        await sleep(backoffMs, undefined, { signal: this.#abort.signal }).catch(() => undefined);
      }
    }
  }

  /** One receive and everything it brought settled; the number of messages received. */
  async pollOnce(): Promise<number> {
    const { sqs, config, signingKeys, metrics } = this.#options;
    const { Messages: messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: config.queueUrl,
        MaxNumberOfMessages: config.receiveBatchSize,
        WaitTimeSeconds: config.waitTimeSeconds,
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
      { abortSignal: this.#abort.signal },
    );
    if (messages.length === 0) return 0;
    metrics.received(messages.length);
    // Keys that cannot be read throw here: nothing is produced or refused, and the batch comes back.
    const refusals = await signatureRefusals(
      messages.map((m) => m.Body ?? ''),
      signingKeys,
    );
    const settled = await this.#settleInGroupOrder(messages, refusals);
    await this.#delete(settled.filter((s) => s.done).map((s) => s.message));
    return messages.length;
  }

  /**
   * Messages of one message group one after the other, stopping at the first that stays (a FIFO queue
   * hands the rest back after it); messages of different groups, or of none, at once.
   */
  async #settleInGroupOrder(messages: readonly Message[], refusals: Map<number, string>): Promise<Settled[]> {
    const lanes = new Map<string, { message: Message; refusal: string | undefined }[]>();
    for (const [i, message] of messages.entries()) {
      const lane = message.Attributes?.MessageGroupId ?? message.MessageId ?? String(i);
      lanes.set(lane, [...(lanes.get(lane) ?? []), { message, refusal: refusals.get(i) }]);
    }
    const settleLane = async (lane: { message: Message; refusal: string | undefined }[]) => {
      const out: Settled[] = [];
      for (const { message, refusal } of lane) {
        const done = await this.#settle(message, refusal);
        out.push({ message, done });
        if (!done) break;
      }
      return out;
    };
    return (await Promise.all([...lanes.values()].map(settleLane))).flat();
  }

  /** Produces one message, or dead-letters it when refused; true when it may leave the outbound queue. */
  async #settle(message: Message, refusal: string | undefined): Promise<boolean> {
    let produced: ProducedMessage;
    let bornTimestamp: number | undefined;
    try {
      if (refusal !== undefined) throw new OutboundRefusedError(OutboundRefusalReason.UNAUTHENTICATED, refusal);
      const envelope = parseEnvelopeOrRefuse(message.Body ?? '');
      produced = producedMessageOf(envelope);
      bornTimestamp = envelope.bornTimestamp;
    } catch (err) {
      if (err instanceof OutboundRefusedError) return this.#deadLetter(message, err);
      throw err;
    }
    return this.#produce(produced, bornTimestamp);
  }

  async #produce(produced: ProducedMessage, bornTimestamp: number | undefined): Promise<boolean> {
    const { producer, metrics, logger } = this.#options;
    try {
      const { msgId } = await producer.send(produced);
      const now = (this.#options.now ?? Date.now)();
      metrics.forwarded(1, bornTimestamp === undefined ? undefined : now - bornTimestamp);
      logger.info('produced', { eventId: produced.eventId, msgId, topic: produced.topic, tag: produced.tag });
      return true;
    } catch (err) {
      metrics.forwardFailed(1);
      logger.warn('outbound send failed; the message stays on the outbound queue and comes back', {
        eventId: produced.eventId,
        topic: produced.topic,
        error: describeError(err),
      });
      return false;
    }
  }

  /** The refused body to the outbound DLQ with its reason; true once the DLQ took it. */
  async #deadLetter(message: Message, refused: OutboundRefusedError): Promise<boolean> {
    const { sqs, config, metrics, logger } = this.#options;
    const fifo = config.dlqUrl.endsWith('.fifo');
    try {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: config.dlqUrl,
          MessageBody: message.Body ?? '',
          MessageAttributes: {
            [DEAD_LETTER_KIND_ATTRIBUTE]: { DataType: 'String', StringValue: OUTBOUND_REFUSAL_KIND },
            [NOTICE_REASON_ATTRIBUTE]: { DataType: 'String', StringValue: refused.reason },
            detail: { DataType: 'String', StringValue: sqsText(refused.detail, 1_024) },
          },
          ...(fifo
            ? {
                MessageGroupId: message.Attributes?.MessageGroupId ?? OUTBOUND_ROUTE_NAME,
                MessageDeduplicationId: message.MessageId,
              }
            : {}),
        }),
      );
    } catch (err) {
      logger.error('outbound DLQ refused a notice; the message stays on the outbound queue', {
        error: describeError(err),
      });
      return false;
    }
    metrics.deadLettered(1);
    logger.error('outbound message refused, dead-lettered', {
      reason: refused.reason,
      detail: refused.detail,
      sqsMessageId: message.MessageId,
    });
    return true;
  }

  async #delete(messages: readonly Message[]): Promise<void> {
    if (messages.length === 0) return;
    const { sqs, config, metrics, logger } = this.#options;
    const entries = messages.map((m, i) => ({ Id: `e${i}`, ReceiptHandle: m.ReceiptHandle! }));
    try {
      const { Failed = [] } = await sqs.send(
        new DeleteMessageBatchCommand({ QueueUrl: config.queueUrl, Entries: entries }),
      );
      if (Failed.length > 0) metrics.ackFailed(Failed.length);
    } catch (err) {
      // Produced and not deleted: it comes back and is produced again, a duplicate downstream dedups.
      metrics.ackFailed(messages.length);
      logger.warn('outbound delete failed; those messages will be produced again', { error: describeError(err) });
    }
  }
}

function parseEnvelopeOrRefuse(body: string) {
  try {
    return parseEnvelope(body);
  } catch (err) {
    if (err instanceof InvalidEnvelopeError)
      throw new OutboundRefusedError(OutboundRefusalReason.INVALID_ENVELOPE, err.reason);
    throw err;
  }
}
