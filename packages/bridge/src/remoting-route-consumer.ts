import { setImmediate as nextTurn } from 'node:timers/promises';
import { excerpt, TagExpression } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type ClientLogger, Consumer, type Message, type MessageHandler, type MessageQueue, Producer } from 'ali-ons';
import { StartWithoutOffset } from './bridge-config.ts';
import { describeError } from './forward-target.ts';
import {
  GroupWithoutOffsetsError,
  queuesWithoutOffset,
  type RemotingAdmin,
  startQueuesWithoutOffsetAt,
} from './group-takeover.ts';
import { ForeignMessageError } from './route-consumer.ts';
import type { AckResult, MessageSource, ReceivedMessage } from './types.ts';

/**
 * A route's source on a RocketMQ 4 cluster: the remoting protocol through the name servers, one
 * clustering-mode consumer group per route, built on `ali-ons`.
 *
 * The client pulls a queue, hands up to `batchSize` × `batchesInFlight` of its messages to the
 * handler at once and moves the queue's consume offset past them only when every handler call has
 * resolved. Here a handler call resolves when the bridge acks the message, i.e. after its forward
 * succeeded, so the offset can never pass an unforwarded message; a crash before the ack leaves
 * the offset where it was and the broker hands the messages out again (a duplicate, never a loss).
 *
 * A message whose forward failed stays pending in this process and is handed out again after
 * `redeliverAfterMs`, while the client holds the queue (and, as it consumes one queue at a time
 * per topic, the topic) behind it: the same back-pressure an orderly consumer applies. The
 * client's own failure path (send the message back to `%RETRY%<group>`, and drop it locally once
 * `reconsumeTimes` exceeds `maxReconsumeTimes`) is replaced, because it can drop a message.
 *
 * That is also what makes a FIFO route (`batchesInFlight` 1) keep each queue's order without the
 * broker queue locks of RocketMQ 4's orderly listener (`LOCK_BATCH_MQ`, which this client lacks):
 * one slice of one queue is handed over at a time, in offset order; a message that failed is
 * forwarded again before anything after it; a restart resumes from the committed offset, at or
 * before the first unforwarded message. What a lock would prevent, two tasks pulling one queue
 * for up to a rebalance interval, yields two in-order copies of one sequence; the FIFO queue
 * keeps the first copy of each msgId (its deduplication id, five minutes), so what it holds is
 * still in order.
 */
export interface RemotingRouteConsumerOptions {
  readonly nameServers: readonly string[];
  readonly consumerGroup: string;
  readonly topic: string;
  readonly tagExpression: string;
  /** Messages per receive (≤ 32, the client's pull size). */
  readonly batchSize: number;
  /**
   * Receives the pump keeps outstanding at once; the client hands over `batchSize` × this many messages of a queue at a
   * time.
   */
  readonly batchesInFlight: number;
  /** How long one receive waits for the first message. */
  readonly awaitDurationMs: number;
  /** How soon a handed-out message that was not acked is handed out again. */
  readonly redeliverAfterMs: number;
  readonly credentials?: { accessKey: string; accessSecret: string };
  readonly logger: ClientLogger;
  /** How often consume offsets are committed to the broker (they also ride along on every pull). */
  readonly persistOffsetIntervalMs?: number;
  /** The group is taken over from other consumers: start at its committed offsets (see group-takeover.ts). */
  readonly takeOver?: { readonly startWithoutOffset: StartWithoutOffset };
}

/** The name servers were given; the client's address-server lookup (Alibaba Cloud only) must never run. */
export class AddressServerNotUsedError extends Error {
  override readonly name = 'AddressServerNotUsedError';
  constructor() {
    super('ali-ons asked for the Alibaba Cloud address server although name server addresses were configured');
  }
}

const RETRY_TOPIC_PREFIX = '%RETRY%';
const PULL_BATCH_SIZE = 32;
const FLOW_CONTROL_PAUSE_MS = 50;

/** One message the client is waiting on: its handler call resolves when `settle` runs. */
class PendingDelivery {
  state: 'ready' | 'handedOut' | 'acked' = 'ready';
  timer: NodeJS.Timeout | undefined;
  message!: ReceivedMessage;
  constructor(readonly settle: () => void) {}
}

/** ali-ons' push consumer with its consume step replaced: no send-back, no local drop, every message to the route. */
class ForwardingPushConsumer extends Consumer {
  constructor(
    options: ConstructorParameters<typeof Consumer>[0],
    private readonly deliver: (msg: Message, mq: MessageQueue) => Promise<void>,
  ) {
    super(options);
  }

  // Called for the route's topic and for `%RETRY%<group>` alike; `mq` is the queue it was pulled from.
  protected override async consumeSingleMsg(_handler: MessageHandler, msg: Message, mq: MessageQueue): Promise<void> {
    await this.deliver(msg, mq);
  }

  /** The client's remoting API (ali-ons keeps it as `_mqClient`, with the name servers and credentials given). */
  get admin(): RemotingAdmin {
    return (this as unknown as { _mqClient: RemotingAdmin })._mqClient;
  }

  /**
   * ali-ons reads the group's committed offset through its offset store, whose `readOffset` turns
   * every failure (a timeout, a broker restarting, a refused connection) into -1, "no offset", and
   * then starts the queue at its end: a failed read-back during a rebalance would skip everything
   * the group had not consumed there. The Java client leaves such a queue for the next rebalance;
   * so does this. Only the broker's "not found" means the group has no offset.
   */
  protected override async computePullFromWhere(mq: MessageQueue): Promise<number> {
    const internals = this as unknown as {
      _offsetStore: OffsetStore;
      _mqClient: { maxOffset(mq: MessageQueue): Promise<number> };
    };
    let committed: number;
    try {
      committed = await internals._offsetStore.fetchConsumeOffsetFromBroker(mq);
    } catch (err) {
      if ((err as { code?: unknown }).code !== QUERY_NOT_FOUND) {
        this.emit('error', new OffsetReadError(this.consumerGroup, mq, err));
        return -1;
      }
      committed = -1;
    }
    // The client's own line for a queue's start, as its computePullFromWhere writes it (tests read it).
    this.logger.info(
      '[mq:consumer] read lastOffset => %s from store, topic="%s", brokerName="%s", queueId="%s"',
      committed,
      mq.topic,
      mq.brokerName,
      mq.queueId,
    );
    if (committed >= 0) {
      internals._offsetStore.updateOffset(mq, committed, false);
      return committed;
    }
    // The client's own rules for a group without an offset there: a retry queue from its first letter,
    // a topic's queue at its first message or at its end, as the route was told.
    if (mq.topic.startsWith(RETRY_TOPIC_PREFIX) || this.consumeFromWhere === 'CONSUME_FROM_FIRST_OFFSET') return 0;
    return internals._mqClient.maxOffset(mq);
  }
}

/** ali-ons' remote-broker offset store, the two calls the start of a queue needs. */
interface OffsetStore {
  /** QUERY_CONSUMER_OFFSET; throws the broker's answer (`code` 22 when the group has no offset there) or the transport's error. */
  fetchConsumeOffsetFromBroker(mq: MessageQueue): Promise<number>;
  updateOffset(mq: MessageQueue, offset: number, increaseOnly: boolean): void;
}

/** `ResponseCode.QUERY_NOT_FOUND`: the broker keeps no offset of the group on the queue. */
const QUERY_NOT_FOUND = 22;

/** The group's committed offset on a queue could not be read: the queue waits for the next rebalance rather than start at its end. */
export class OffsetReadError extends Error {
  override readonly name = 'OffsetReadError';
  constructor(group: string, mq: MessageQueue, cause: unknown) {
    super(
      `reading ${group}'s committed offset on ${mq.topic} ${mq.brokerName}:${mq.queueId} failed (${cause instanceof Error ? cause.message : String(cause)}); ` +
        'the queue is not started at its end, the next rebalance tries again',
      { cause },
    );
  }
}

/**
 * A `%RETRY%<group>` message of a topic the route does not forward: a group taken over from
 * consumers that subscribed to several topics holds their retries in one queue. Skipping it would
 * move the retry queue's offset past it and lose it, so it stays unconsumed, and says so.
 */
export class ForeignRetryError extends Error {
  override readonly name = 'ForeignRetryError';
  constructor(group: string, msgId: string, topic: string, routeTopic: string) {
    super(
      `%RETRY%${group} holds message ${msgId} of topic ${topic}, which this route (topic ${routeTopic}) does not ` +
        `forward: it stays unconsumed, and the retry queue's offset stays before it, until a route of group ` +
        `${group} forwards topic ${topic} (docs/migration.md, a group of several topics)`,
    );
  }
}

/**
 * What the route says of a `%RETRY%<group>` message of a tag its expression does not match (the
 * group's previous consumers subscribed more tags): it is forwarded, as RocketMQ hands a group
 * every retry, and the consumer classifies it by its own expression.
 */
function unsubscribedTagRetry(
  route: Pick<RemotingRouteConsumerOptions, 'consumerGroup' | 'tagExpression'>,
  msg: Message,
) {
  const msgId = msg.properties?.UNIQ_KEY || msg.msgId;
  return (
    `%RETRY%${route.consumerGroup} holds message ${msgId} of tag ${msg.tags ? excerpt(msg.tags) : '(none)'}, which the ` +
    `route's tag expression ${route.tagExpression} does not match: forwarded, as RocketMQ hands a consumer group its ` +
    `retries whatever their tag; the consumer counts it as filtered unless its own expression matches`
  );
}

export class RemotingRouteConsumer implements MessageSource {
  readonly #options: RemotingRouteConsumerOptions;
  readonly #tags: TagExpression;
  readonly #consumer: ForwardingPushConsumer;
  readonly #ready: PendingDelivery[] = [];
  readonly #handedOut = new Set<PendingDelivery>();
  /** Receives waiting for a delivery; several wait at once when the pump has more than one batch in flight. */
  readonly #waitingReceivers = new Set<() => void>();
  #stopped = false;

  constructor(options: RemotingRouteConsumerOptions) {
    this.#options = options;
    this.#tags = TagExpression.parse(options.tagExpression);
    // The client hands a queue's messages over in slices and moves the offset past a slice only
    // once all of it is settled: a slice must hold every batch the pump keeps in flight, or the
    // pump's later receives would wait for the first batch's ack.
    const handOver = options.batchSize * options.batchesInFlight;
    // The client shares one connection set (name servers, credentials) per instance name within a
    // process, and clustering consumers take the pid as instance name: every route of a bridge
    // process talks to the same cluster with the same credentials, which the configuration ensures.
    this.#consumer = new ForwardingPushConsumer(
      {
        nameSrv: [...options.nameServers],
        httpclient: { request: () => Promise.reject(new AddressServerNotUsedError()) },
        consumerGroup: options.consumerGroup,
        // ali-ons refuses a slice larger than its pull size; the broker answers a pull with 32 messages at most anyway.
        pullBatchSize: Math.max(PULL_BATCH_SIZE, handOver),
        parallelConsumeLimit: handOver,
        // Once 500 messages of a queue wait in the process the client stops pulling it for a while:
        // 5 s in this client, 50 ms in the Java one. At 5 s a backlog drains at ~100 messages a second
        // per queue however fast the bridge forwards (measured: 900 msg/s from 8 queues).
        pullTimeDelayMillsWhenFlowControl: FLOW_CONTROL_PAUSE_MS,
        persistConsumerOffsetInterval: options.persistOffsetIntervalMs ?? 5_000,
        ...(options.takeOver?.startWithoutOffset === StartWithoutOffset.FIRST
          ? { consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET' }
          : {}),
        logger: options.logger,
        ...(options.credentials
          ? { accessKey: options.credentials.accessKey, secretKey: options.credentials.accessSecret }
          : {}),
      },
      (msg, mq) => this.#deliver(msg, mq),
    );
    // Pull failures while a broker is away are expected and retried by the client; they are logged, not fatal.
    this.#consumer.on('error', (err: Error) => options.logger.warn('%s', err.message));
  }

  async start(): Promise<void> {
    await this.#consumer.ready();
    await this.#takeOverQueuesWithoutOffsets();
    // The client starts a process-wide producer for sending messages back, which this source never
    // does; without a listener its route-lookup failures (e.g. `%RETRY%<group>` before the first
    // heartbeat creates it) are printed to stderr with stack traces. It is one per process: its
    // base class listens once itself, and the first route to start adds the second listener.
    const fallback = await Producer.getDefaultProducer();
    if (fallback.listenerCount('error') < 2)
      fallback.on('error', (err: Error) => this.#options.logger.debug('%s', err.message));
    // The client subscribes `%RETRY%<group>` itself; its handler for it is never called (see ForwardingPushConsumer).
    this.#consumer.subscribe(this.#options.topic, this.#tags.source, async () => undefined);
  }

  /** Before subscribing, so that no queue is assigned (and started at its end) first. */
  async #takeOverQueuesWithoutOffsets(): Promise<void> {
    const start = this.#options.takeOver?.startWithoutOffset;
    if (start === undefined || start === StartWithoutOffset.FIRST) return;
    const { consumerGroup, topic, logger } = this.#options;
    if (start !== StartWithoutOffset.REFUSE) {
      const started = await startQueuesWithoutOffsetAt(
        this.#consumer.admin,
        consumerGroup,
        topic,
        Date.parse(start.timestamp),
      );
      if (started.length > 0)
        logger.warn(
          'taking over %s on %s: queues without an offset start at %s: %s',
          consumerGroup,
          topic,
          start.timestamp,
          started.join(', '),
        );
      return;
    }
    const missing = await queuesWithoutOffset(this.#consumer.admin, consumerGroup, topic);
    if (missing.length === 0) return;
    await this.#consumer.close().catch(() => undefined);
    throw new GroupWithoutOffsetsError(consumerGroup, topic, missing);
  }

  async receive(): Promise<ReceivedMessage[]> {
    const deadline = Date.now() + this.#options.awaitDurationMs;
    for (;;) {
      if (this.#ready.length > 0) {
        // The client hands a pulled batch over in one go; one more turn lets all of it arrive.
        await nextTurn();
        // Another receive woken by the same delivery may have taken all of it; then wait on.
        const batch = this.#ready.splice(0, this.#options.batchSize).filter((p) => p.state === 'ready');
        for (const pending of batch) this.#handOut(pending);
        if (batch.length > 0) return batch.map((p) => p.message);
      }
      const remainingMs = deadline - Date.now();
      if (this.#stopped || remainingMs <= 0) return [];
      await this.#arrival(remainingMs);
    }
  }

  /**
   * Settles each message's delivery; nothing goes over the wire. The client moves a queue's offset
   * past the messages it handed over together once all of them are settled and commits offsets
   * in the background, which is this protocol's batched ack.
   */
  async ack(messages: readonly ReceivedMessage[]): Promise<AckResult[]> {
    return messages.map((message): AckResult => {
      const pending = message.handle;
      if (!(pending instanceof PendingDelivery))
        return { ok: false, reason: describeError(new ForeignMessageError('RocketMQ 4 consumer', message.msgId)) };
      if (pending.state === 'acked') return { ok: true };
      pending.state = 'acked';
      clearTimeout(pending.timer);
      this.#handedOut.delete(pending);
      pending.settle();
      return { ok: true };
    });
  }

  /**
   * Closes the client, which commits the offsets it has (never past an un-acked message) and
   * stops pulling. Deliveries still pending are abandoned unsettled, so the client can never count
   * them consumed; the broker hands them to whichever consumer owns their queue next.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const pending of [...this.#ready, ...this.#handedOut]) clearTimeout(pending.timer);
    this.#ready.length = 0;
    this.#handedOut.clear();
    this.#wakeReceivers();
    await this.#consumer.close();
  }

  #deliver(msg: Message, mq: MessageQueue): Promise<void> {
    const topic = originalTopic(msg, this.#options.consumerGroup);
    if (topic !== this.#options.topic) {
      const uniqKey = msg.properties?.UNIQ_KEY || msg.msgId;
      this.#options.logger.error(
        '%s',
        new ForeignRetryError(this.#options.consumerGroup, uniqKey, topic, this.#options.topic).message,
      );
      return new Promise(() => undefined);
    }
    if (!this.#tags.matches(msg.tags || undefined)) {
      // The topic's queues are filtered on the broker by tag hash; an untagged message passes that filter but matches
      // only `*`, and a hash collision passes it too: the group does not subscribe to either.
      if (msg.topic === topic) return Promise.resolve();
      // `%RETRY%<group>` is subscribed with `*`, by this client and by RocketMQ's own: a retry goes to the group's
      // consumer whatever its tag. Acknowledging it here would lose what a consumer of a wider expression sent back.
      this.#options.logger.warn('%s', unsubscribedTagRetry(this.#options, msg));
    }
    if (this.#stopped) return new Promise(() => undefined);
    return new Promise((resolve) => {
      const pending = new PendingDelivery(resolve);
      pending.message = toReceivedMessage(msg, mq, topic, pending);
      this.#queue(pending);
    });
  }

  #queue(pending: PendingDelivery): void {
    pending.state = 'ready';
    this.#ready.push(pending);
    this.#wakeReceivers();
  }

  #handOut(pending: PendingDelivery): void {
    pending.state = 'handedOut';
    this.#handedOut.add(pending);
    pending.timer = setTimeout(() => {
      if (pending.state !== 'handedOut' || this.#stopped) return;
      this.#handedOut.delete(pending);
      this.#queue(pending);
    }, this.#options.redeliverAfterMs);
  }

  #arrival(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waitingReceivers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#waitingReceivers.add(done);
    });
  }

  #wakeReceivers(): void {
    for (const wake of [...this.#waitingReceivers]) wake();
  }
}

/** A message from `%RETRY%<group>` carries its original topic in the RETRY_TOPIC property. */
function originalTopic(msg: Message, group: string): string {
  return msg.topic === `${RETRY_TOPIC_PREFIX}${group}` ? (msg.retryTopic ?? msg.topic) : msg.topic;
}

/**
 * The sharding key an orderly producer selects the queue by: `__SHARDINGKEY` as Java producers
 * name it (RocketMQ 5's `MessageConst.PROPERTY_SHARDING_KEY`), `__SHARDING_KEY` as ali-ons'
 * producer writes it. Either is the route's message group; both stay user properties, as set.
 */
const SHARDING_KEY = '__SHARDINGKEY';
const ALI_ONS_SHARDING_KEY = '__SHARDING_KEY';

/**
 * RocketMQ 4.7.1's system property names, exactly its `MessageConst.STRING_HASH_SET`
 * (rocketmq-common 4.7.1, read with `javap -c`): the names `Message.putUserProperty` refuses.
 * Every other property was set by the application, or is one the 4.7.1 client itself classes as
 * a user property although RocketMQ uses it (`__STARTDELIVERTIME`, both sharding keys,
 * `CHECK_IMMUNITY_TIME_IN_SECONDS`, `TRANSACTION_CHECK_TIMES`, `TRAN_PREPARED_QUEUE_OFFSET`):
 * a Java consumer reads those with `getUserProperty`, so they go into `userProperties` as set.
 */
const SYSTEM_PROPERTIES: ReadonlySet<string> = new Set([
  'TRACE_ON',
  'MSG_REGION',
  'KEYS',
  'TAGS',
  'WAIT',
  'DELAY',
  'RETRY_TOPIC',
  'REAL_TOPIC',
  'REAL_QID',
  'TRAN_MSG',
  'PGROUP',
  'MIN_OFFSET',
  'MAX_OFFSET',
  'BUYER_ID',
  'ORIGIN_MESSAGE_ID',
  'TRANSFER_FLAG',
  'CORRECTION_FLAG',
  'MQ2_FLAG',
  'RECONSUME_TIME',
  'UNIQ_KEY',
  'MAX_RECONSUME_TIMES',
  'CONSUME_START_TIME',
  'INSTANCE_ID',
  'CORRELATION_ID',
  'REPLY_TO_CLIENT',
  'TTL',
  'ARRIVE_TIME',
  'PUSH_REPLY_TIME',
  'CLUSTER',
  'MSG_TYPE',
]);

/** What the bridge keeps of a 4.x message's properties: the application's, by the 4.7.1 client's own classification. */
export function userPropertiesOf(properties: Readonly<Record<string, string>>): Record<string, string> {
  // The client's property decoder yields an empty name from the wire format's trailing separator.
  return Object.fromEntries(Object.entries(properties).filter(([name]) => name !== '' && !SYSTEM_PROPERTIES.has(name)));
}

/** The message group of a 4.x message: its sharding key, the Java name first when a producer set both. */
export function shardingKeyOf(properties: Readonly<Record<string, string>>): string | undefined {
  return properties[SHARDING_KEY] || properties[ALI_ONS_SHARDING_KEY] || undefined;
}

/**
 * When a 4.x message was to be delivered: the delay level the broker held it back on (`DELAY`, a
 * system property: the producer's `setDelayTimeLevel`, or the level a send-back to `%RETRY%<group>`
 * used), and the time a timed message's producer set in `__STARTDELIVERTIME` (which stays in
 * `userProperties` too). Values that are not whole numbers are left out of the fields, never guessed.
 */
export function delayOf(
  properties: Readonly<Record<string, string>>,
): Pick<ReceivedMessage, 'deliveryTimestamp' | 'delayTimeLevel'> {
  const level = wholeNumber(properties.DELAY);
  const at = wholeNumber(properties[START_DELIVER_TIME]);
  return {
    ...(level !== undefined && level > 0 ? { delayTimeLevel: level } : {}),
    ...(at === undefined ? {} : { deliveryTimestamp: at }),
  };
}

const START_DELIVER_TIME = '__STARTDELIVERTIME';

function wholeNumber(text: string | undefined): number | undefined {
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

function toReceivedMessage(msg: Message, mq: MessageQueue, topic: string, handle: PendingDelivery): ReceivedMessage {
  const properties = msg.properties ?? {};
  const uniqKey = properties.UNIQ_KEY;
  return {
    handle,
    // UNIQ_KEY is the id the producer saw and survives broker retries; the client's msgId is the offset id.
    msgId: uniqKey || msg.msgId,
    offsetMsgId: msg.msgId,
    topic,
    tag: msg.tags || undefined,
    keys: (msg.keys ?? '').split(' ').filter((k) => k.length > 0),
    // The sharding key an ordered producer selected the queue by: RocketMQ 5's message group.
    messageGroup: shardingKeyOf(properties),
    body: msg.body ?? Buffer.alloc(0),
    userProperties: userPropertiesOf(properties),
    bornHost: msg.bornHost,
    bornTimestamp: msg.bornTimestamp,
    storeHost: msg.storeHost,
    storeTimestamp: msg.storeTimestamp,
    ...delayOf(properties),
    queueId: msg.queueId,
    queueOffset: msg.queueOffset,
    brokerName: mq.brokerName,
    // Only a send-back raises it, and the bridge never sends back: a failed forward stays in hand.
    reconsumeTimes: msg.reconsumeTimes ?? 0,
  };
}
