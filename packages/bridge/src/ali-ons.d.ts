/**
 * The part of `ali-ons` (a pure-JavaScript RocketMQ 4 remoting client, shipped without typings)
 * that the bridge and its tests use. Written against ali-ons 3.12.0's source; names and shapes
 * are the library's own.
 */
declare module 'ali-ons' {
  import { EventEmitter } from 'node:events';

  /** printf-style, like `console`. */
  export interface ClientLogger {
    info(...args: unknown[]): void;
    warn(...args: unknown[]): void;
    error(...args: unknown[]): void;
    debug(...args: unknown[]): void;
  }

  export interface ClientOptions {
    /**
     * Name server addresses (`host:port`); without them the client asks Alibaba Cloud's address server over
     * `httpclient`.
     */
    nameSrv?: string | string[];
    /** Required by the constructor even when `nameSrv` is set; only used to reach the address server. */
    httpclient: { request(url: string, options?: unknown): Promise<unknown> };
    accessKey?: string;
    secretKey?: string;
    /** Goes into every signed request as `OnsChannel`. */
    onsChannel?: string;
    namespace?: string;
    instanceName?: string;
    logger?: ClientLogger;
    persistConsumerOffsetInterval?: number;
    rebalanceInterval?: number;
    heartbeatBrokerInterval?: number;
    pollNameServerInteval?: number;
  }

  export interface ConsumerOptions extends ClientOptions {
    consumerGroup: string;
    isBroadcast?: boolean;
    /** `CONSUME_FROM_LAST_OFFSET` (default), `CONSUME_FROM_FIRST_OFFSET`, `CONSUME_FROM_TIMESTAMP`. */
    consumeFromWhere?: string;
    pullBatchSize?: number;
    /** Messages of one queue handed to handlers at once; the offset moves past them only when all resolved. */
    parallelConsumeLimit?: number;
    pullThresholdForQueue?: number;
    /**
     * How long a queue's pulling pauses once more than `pullThresholdForQueue` of its messages wait in the process
     * (5000 ms).
     */
    pullTimeDelayMillsWhenFlowControl?: number;
    maxReconsumeTimes?: number;
  }

  export interface ProducerOptions extends ClientOptions {
    producerGroup: string;
    sendMsgTimeout?: number;
    retryTimesWhenSendFailed?: number;
  }

  export interface MessageQueue {
    readonly topic: string;
    readonly brokerName: string;
    readonly queueId: number;
    readonly key: string;
  }

  /** A message as sent (topic, tags, body, properties) and as pulled (the broker fields filled in). */
  export class Message {
    constructor(topic: string, tags: string | null, body: string | Buffer);
    topic: string;
    tags: string | undefined;
    /** Read: the space-separated KEYS property. Write: an array. */
    get keys(): string | undefined;
    set keys(value: string[]);
    /** On a pulled message: the offset message id (store host + commit-log offset), not UNIQ_KEY. */
    msgId: string;
    queueId: number;
    queueOffset: number;
    commitLogOffset: number;
    bornHost: string;
    bornTimestamp: number;
    storeHost: string;
    storeTimestamp: number;
    reconsumeTimes: number;
    /** System and user properties in one map, as on the wire. */
    properties: Record<string, string>;
    body: Buffer;
    /** The RETRY_TOPIC property: the original topic of a message from `%RETRY%<group>`. */
    retryTopic: string | undefined;
  }

  export interface SendResult {
    sendStatus: string;
    msgId: string;
    messageQueue: MessageQueue;
    queueOffset: number;
  }

  export type MessageHandler = (msg: Message, mq?: MessageQueue, pq?: unknown) => Promise<unknown>;

  export class Consumer extends EventEmitter {
    constructor(options: ConsumerOptions);
    readonly consumerGroup: string;
    ready(): Promise<void>;
    subscribe(topic: string, subExpression: string, handler: MessageHandler): void;
    /** Persists the consume offsets, unregisters from the brokers and stops pulling. */
    close(): Promise<void>;
    /**
     * The library's consume step for one message: calls the handler, sends the message back to
     * `%RETRY%<group>` when it throws, and drops it once `reconsumeTimes` exceeds `maxReconsumeTimes`.
     */
    protected consumeSingleMsg(handler: MessageHandler, msg: Message, mq: MessageQueue, pq: unknown): Promise<void>;
    /**
     * Where a queue newly assigned by a rebalance starts: an offset, or a negative number to leave the queue
     * unassigned until the next rebalance (`rebalanceInterval`, 10 s).
     */
    protected computePullFromWhere(mq: MessageQueue): Promise<number>;
    /** `CONSUME_FROM_LAST_OFFSET` unless the options said otherwise. */
    readonly consumeFromWhere: string;
    /** The logger the options gave. */
    protected readonly logger: ClientLogger;
  }

  export class Producer extends EventEmitter {
    constructor(options: ProducerOptions);
    /** The process-wide producer a consumer creates at start for its send-back fallback. */
    static getDefaultProducer(): Promise<Producer>;
    ready(): Promise<void>;
    send(msg: Message): Promise<SendResult>;
    close(): Promise<void>;
  }
}

/** The remoting command of ali-ons, with which the bridge asks a broker what the client has no call for (packages/bridge/src/group-takeover.ts). */
declare module 'ali-ons/lib/protocol/command/remoting_command.js' {
  export default class RemotingCommand {
    static createRequestCommand(code: number, customHeader: Record<string, unknown> | null): RemotingCommand;
    readonly code: number;
    readonly remark: string | undefined;
    body: Buffer | undefined;
    /** The response's header fields (`extFields`), as strings. */
    readonly extFields: Record<string, string> | undefined;
  }
}
