import { createHash } from 'node:crypto';
import { Message, Producer as RemotingProducer } from 'ali-ons';
import { Producer as GrpcProducer } from 'rocketmq-client-nodejs';
import { type BridgeConfig, RocketMQProtocol } from './bridge-config.ts';
import type { ProducedMessage, RocketMQProducer } from './types.ts';

/** The producer group the bridge sends as on 4.x (5.x producers have none). ACL: it needs PUB on the topics. */
export const OUTBOUND_PRODUCER_GROUP = 'rocketmq-bridge-outbound';
/** The property a 4.x consumer reads its msgId from (`MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX`). */
export const UNIQ_KEY_PROPERTY = 'UNIQ_KEY';
const SHARDING_KEY_PROPERTY = '__SHARDINGKEY';
const SEND_OK = 'SEND_OK';

type ClientLogger = {
  info(...a: unknown[]): void;
  warn(...a: unknown[]): void;
  error(...a: unknown[]): void;
  debug(...a: unknown[]): void;
};

export interface OutboundProducerOptions {
  readonly logger: ClientLogger;
  /** RocketMQ ACL credentials, when the cluster enforces them. */
  readonly credentials?: { accessKey: string; accessSecret: string } | undefined;
}

/** A broker that answered a send with anything but stored-and-flushed (4.x `sendStatus`). */
export class MessageNotStoredError extends Error {
  override readonly name = 'MessageNotStoredError';
}

/** The producer of the configured cluster, as the bridge's routes reach it. */
export function createOutboundProducer(config: BridgeConfig, options: OutboundProducerOptions): RocketMQProducer {
  if (config.protocol === RocketMQProtocol.RocketMQ4) {
    const nameServers = config
      .nameServer!.split(';')
      .map((a) => a.trim())
      .filter((a) => a.length > 0);
    return new RemotingOutboundProducer(nameServers, options);
  }
  return new GrpcOutboundProducer(config, options);
}

/**
 * RocketMQ 5 through the proxy. The client mints the msgId (its `send` takes none), so a relayed
 * duplicate gets a new one: the event id travels as the first key and as `OUTBOX_EVENT_ID`.
 */
export class GrpcOutboundProducer implements RocketMQProducer {
  readonly #producer: GrpcProducer;

  constructor(
    config: Pick<BridgeConfig, 'proxyEndpoint' | 'namespace' | 'sslEnabled'>,
    options: OutboundProducerOptions,
  ) {
    this.#producer = new GrpcProducer({
      endpoints: config.proxyEndpoint!,
      namespace: config.namespace,
      sslEnabled: config.sslEnabled,
      logger: options.logger,
      ...(options.credentials ? { sessionCredentials: options.credentials } : {}),
    });
  }

  start(): Promise<void> {
    return this.#producer.startup();
  }

  async send(message: ProducedMessage): Promise<{ msgId: string }> {
    const receipt = await this.#producer.send({
      topic: message.topic,
      body: message.body,
      keys: [...message.keys],
      properties: new Map(Object.entries(message.userProperties)),
      ...(message.tag !== undefined ? { tag: message.tag } : {}),
      ...(message.messageGroup !== undefined ? { messageGroup: message.messageGroup } : {}),
    });
    return { msgId: receipt.messageId };
  }

  stop(): Promise<void> {
    return this.#producer.shutdown();
  }
}

/**
 * RocketMQ 4 through the name servers (ali-ons, as the 4.x routes consume). The client sends the
 * properties the application set as they are and mints no `UNIQ_KEY` of its own, and a 4.7.1 broker
 * stores it untouched: `UNIQ_KEY` = event id makes the msgId every 4.x consumer sees the event id, so a
 * relayed duplicate has the same msgId (docs/bridge.md, "The outbound route";
 * `outbound-route.test.ts`). A message group selects the queue by its hash, so a group's messages
 * keep one queue and their order (Java's `MessageQueueSelector`), and is kept as the sharding key.
 */
export class RemotingOutboundProducer implements RocketMQProducer {
  readonly #producer: RemotingProducer;

  constructor(nameServers: readonly string[], options: OutboundProducerOptions) {
    this.#producer = new RemotingProducer({
      nameSrv: [...nameServers],
      httpclient: { request: () => Promise.reject(new Error('the name servers are configured; no address server')) },
      producerGroup: OUTBOUND_PRODUCER_GROUP,
      logger: options.logger,
      ...(options.credentials
        ? { accessKey: options.credentials.accessKey, secretKey: options.credentials.accessSecret }
        : {}),
    });
    // Route lookups and sends that fail are the send's rejection; the client's own events are logged only.
    this.#producer.on('error', (err: Error) => options.logger.warn('%s', err.message));
  }

  start(): Promise<void> {
    return this.#producer.ready();
  }

  async send(message: ProducedMessage): Promise<{ msgId: string }> {
    const msg = new Message(message.topic, message.tag ?? null, message.body);
    if (message.tag === undefined) delete msg.properties.TAGS;
    msg.keys = [...message.keys];
    Object.assign(msg.properties, message.userProperties);
    msg.properties[UNIQ_KEY_PROPERTY] = message.eventId;
    if (message.messageGroup !== undefined) msg.properties[SHARDING_KEY_PROPERTY] = message.messageGroup;
    const result =
      message.messageGroup === undefined
        ? await this.#producer.send(msg)
        : await this.#sendToGroupQueue(msg, message.messageGroup);
    if (result.sendStatus !== SEND_OK)
      throw new MessageNotStoredError(`the broker answered ${result.sendStatus} for event ${message.eventId}`);
    return { msgId: message.eventId };
  }

  stop(): Promise<void> {
    return this.#producer.close();
  }

  /** The client has no queue selector: the queue is chosen here, from the topic's route, and the message sent to it. */
  async #sendToGroupQueue(msg: Message, messageGroup: string) {
    type Queue = { brokerName: string; queueId: number };
    const client = this.#producer as unknown as {
      tryToFindTopicPublishInfo(topic: string): Promise<{ messageQueueList: Queue[] } | undefined>;
      sendKernelImpl(msg: Message, mq: Queue): ReturnType<RemotingProducer['send']>;
    };
    const route = await client.tryToFindTopicPublishInfo(msg.topic);
    const queues = [...(route?.messageQueueList ?? [])].sort(
      (a, b) => a.brokerName.localeCompare(b.brokerName) || a.queueId - b.queueId,
    );
    if (queues.length === 0) throw new MessageNotStoredError(`no route to a queue of ${msg.topic}`);
    const hash = createHash('sha256').update(messageGroup).digest().readUInt32BE();
    return client.sendKernelImpl(msg, queues[hash % queues.length]!);
  }
}
