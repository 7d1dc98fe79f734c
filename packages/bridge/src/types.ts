/**
 * The bridge's own words, which its modules pass between them: a message as a source received it,
 * the source a route's pump drives, the target it forwards to. Types only: the implementations import
 * them from here, never from one another.
 */

/**
 * One RocketMQ message as the broker delivered it, with everything the envelope preserves.
 * `handle` is what the source that produced the message needs to ack it (a `MessageView` from
 * RocketMQ 5, a pending delivery from RocketMQ 4); nothing else in the bridge looks inside it.
 */
export interface ReceivedMessage {
  readonly handle: unknown;
  /** `UNIQ_KEY` when the producer set one; otherwise the offset message id. */
  readonly msgId: string;
  /** RocketMQ 4 only: store host + commit-log offset (the gRPC protocol does not carry it). */
  readonly offsetMsgId?: string;
  readonly topic: string;
  readonly tag: string | undefined;
  readonly keys: readonly string[];
  /** Set on FIFO topics: the unit of ordering (RocketMQ 4's sharding key). */
  readonly messageGroup: string | undefined;
  readonly body: Buffer;
  readonly userProperties: Readonly<Record<string, string>>;
  readonly bornHost: string;
  readonly bornTimestamp: number | undefined;
  readonly storeHost: string | undefined;
  readonly storeTimestamp: number | undefined;
  /**
   * When the producer asked RocketMQ to deliver the message, epoch milliseconds. RocketMQ 5: the
   * delivery timestamp of a delay message (`MessageView.deliveryTimestamp`, from the proxy's
   * `delivery_timestamp`). RocketMQ 4: the `__STARTDELIVERTIME` property of a timed message, when it
   * is a number of milliseconds.
   */
  readonly deliveryTimestamp?: number;
  /** RocketMQ 4 only: the delay level the broker held the message back on (`DELAY`). */
  readonly delayTimeLevel?: number;
  readonly queueId: number;
  readonly queueOffset: number | undefined;
  readonly brokerName: string | undefined;
  /**
   * The consumer failures RocketMQ counted before the bridge received the message: what the
   * envelope's `reconsumeTimes` says, and what the consumer's retry schedule starts from. Never the
   * bridge's own redeliveries. RocketMQ 4: the broker's `reconsumeTimes`, which only a send-back to
   * `%RETRY%<group>` raises and the bridge never sends back (a retry backlog left by the group's
   * previous consumer keeps its count). RocketMQ 5: 0, because every redelivery of the bridge's
   * group is the bridge's (a failed forward or ack, a task that died), however the proxy counts it.
   */
  readonly reconsumeTimes: number;
  /** RocketMQ 5 only: the trace-context system property, where the producer's instrumentation put its `traceparent`. */
  readonly traceContext?: string;
}

export type AckResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Where a route's messages come from: a RocketMQ consumer group in production. */
export interface MessageSource {
  start(): Promise<void>;
  /** One long poll; resolves empty when nothing arrived. Several may be outstanding at once. */
  receive(): Promise<ReceivedMessage[]>;
  /**
   * Acks messages whose forward succeeded, in as few requests as the protocol allows. One result
   * per message, in order; a failed ack is a result, never a rejection.
   */
  ack(messages: readonly ReceivedMessage[]): Promise<AckResult[]>;
  stop(): Promise<void>;
}

/** Called with the messages about to be acked, after their forward succeeded: a seam for fault-injection tests. */
export type BeforeAckHook = (messages: readonly ReceivedMessage[]) => Promise<void>;

/**
 * Where a route's envelopes go: an SQS queue or an EventBridge bus. Both accept batches of ten
 * and answer entry by entry, so a target reports one result per message and the caller acks
 * exactly the ones that landed.
 */
export interface OutboundMessage {
  /** Unique within one `forward` call; results refer to it. */
  readonly id: string;
  readonly body: string;
  /** FIFO only: the RocketMQ message group (or the topic when the producer set none). */
  readonly messageGroupId?: string;
  /** FIFO only: the RocketMQ msgId, so a redelivery inside SQS's 5-minute window is dropped by SQS. */
  readonly deduplicationId?: string;
  /** The broker's store time, the event's time on EventBridge. */
  readonly time?: Date;
  /** X-Ray back end only: the forward span's context in X-Ray's format (SQS `AWSTraceHeader`, EventBridge `TraceHeader`). */
  readonly awsTraceHeader?: string;
}

export type ForwardResult =
  | { readonly id: string; readonly ok: true }
  | { readonly id: string; readonly ok: false; readonly reason: string };

export interface ForwardTarget {
  /** Bytes this message counts for against the target's per-message and per-batch limits. */
  sizeOf(message: OutboundMessage): number;
  forward(messages: readonly OutboundMessage[]): Promise<ForwardResult[]>;
}

/**
 * One message the outbound route produces to RocketMQ: what the outbox relay's envelope says, with its
 * event id, the id downstream consumers deduplicate on, first among the keys and as a user property.
 */
export interface ProducedMessage {
  readonly eventId: string;
  readonly topic: string;
  readonly tag: string | undefined;
  /** The event id, then the business's keys. */
  readonly keys: readonly string[];
  readonly body: Buffer;
  /** The business's properties and `OUTBOX_EVENT_ID`. */
  readonly userProperties: Readonly<Record<string, string>>;
  /** RocketMQ 5 FIFO message group (4.x: the sharding key, and the queue it selects). */
  readonly messageGroup: string | undefined;
}

/** What the outbound route produces with: the cluster's producer, 5.x (gRPC) or 4.x (remoting). */
export interface RocketMQProducer {
  start(): Promise<void>;
  /**
   * Resolves once the broker stored the message (4.x: `SEND_OK`), with the msgId its consumers see;
   * rejects otherwise, and the caller sends it again later.
   */
  send(message: ProducedMessage): Promise<{ readonly msgId: string }>;
  stop(): Promise<void>;
}
