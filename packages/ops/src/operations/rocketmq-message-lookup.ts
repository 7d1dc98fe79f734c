import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import RemotingCommand from 'ali-ons/lib/protocol/command/remoting_command.js';
import { OperationsError } from './errors.ts';

/**
 * Looking a message up in RocketMQ by its msgId, as `mqadmin queryMsgByUniqueKey` and
 * `queryMsgById` do, over the remoting protocol both generations speak: a 4.x broker, and the
 * broker a 5.x proxy in local mode embeds (it registers its remoting address with the name server
 * like a 4.x broker; the proxy's gRPC API has no query). The brokers are the ones the cluster's
 * name servers route the topic to, never an address a message names.
 *
 * ali-ons (the bridge's 4.x client) provides the remoting client and the stored-message decoder;
 * the two queries are the broker's own request codes.
 */

/** `RequestCode.QUERY_MESSAGE`: the broker's index, by key or (with `_UNIQUE_KEY_QUERY`) by the producer's UNIQ_KEY. */
const QUERY_MESSAGE = 12;
/** `RequestCode.VIEW_MESSAGE_BY_ID`: the message at a commit-log offset (what an offset msgId names). */
const VIEW_MESSAGE_BY_ID = 33;
const QUERY_NOT_FOUND = 22;
const MASTER_ID = '0';
const TIMEOUT_MS = 5_000;
/** The most copies of one msgId a broker returns; a producer's retries keep the msgId. */
const MAX_COPIES = 32;

// ali-ons' internals, loaded from ali-ons itself: its remoting client, its decoder of stored
// messages, and the buffer type (the `byte` package) that decoder reads, which it does not re-export.
const fromAliOns = createRequire(createRequire(import.meta.url).resolve('ali-ons'));
const MQClientAPI = fromAliOns('./mq_client_api') as new (options: Record<string, unknown>) => RemotingClient;
const MessageDecoder = fromAliOns('./message/message_decoder') as {
  decodes(byteBuffer: unknown, readBody: boolean): unknown[];
};
const ByteBuffer = fromAliOns('byte') as { wrap(buffer: Buffer): unknown };

/** A message as the broker stores it, reduced to what a lookup compares. */
export interface StoredMessage {
  readonly topic: string;
  /** The producer's id (`UNIQ_KEY`), when it set one. */
  readonly msgId: string | undefined;
  /** Store host and commit-log offset: the broker's own id of this copy. */
  readonly offsetMsgId: string;
  readonly storeTimestamp: number;
  /** SHA-256 of the body as stored (decompressed), hex. */
  readonly bodySha256: string;
  /** The broker that answered. */
  readonly broker: string;
}

export class MessageLookupError extends OperationsError {
  override readonly name = 'MessageLookupError';
}

/** The remoting calls a lookup makes (ali-ons' `MQClientAPI`). */
interface RemotingClient {
  ready(): Promise<void>;
  close(): Promise<void>;
  getTopicRouteInfoFromNameServer(
    topic: string,
    timeoutMs?: number,
  ): Promise<{ brokerDatas: Array<{ brokerName: string; brokerAddrs: Record<string, string> }> } | undefined>;
  invoke(
    addr: string,
    command: RemotingCommand,
    timeoutMs?: number,
  ): Promise<{ code: number; remark: string | undefined; body: Buffer | undefined }>;
}

export class RocketMQMessageLookup {
  private constructor(
    private readonly client: RemotingClient,
    /** Which cluster answers, for what the proof records. */
    readonly cluster: string,
  ) {}

  /** A client of the cluster whose name servers are `nameServer` (`host:port`, `;`-separated). */
  static async open(cluster: { nameServer: string; clusterName?: string }): Promise<RocketMQMessageLookup> {
    const silent = { info() {}, warn() {}, error() {}, debug() {} };
    const client = new MQClientAPI({
      nameSrv: cluster.nameServer.split(';').map((a) => a.trim()),
      // Required by ali-ons, used only without name servers (Alibaba Cloud's address server).
      httpclient: { request: () => Promise.reject(new Error('name servers are given')) },
      logger: silent,
      responseTimeout: TIMEOUT_MS,
    });
    await client.ready();
    return new RocketMQMessageLookup(client, cluster.clusterName ?? cluster.nameServer);
  }

  close(): Promise<void> {
    return this.client.close();
  }

  /**
   * Every copy the cluster stores of `msgId` in `topic`: by the UNIQ_KEY index of each broker the
   * topic is routed to (its master, else a slave), and, for an id that is an offset msgId (what a
   * 4.x consumer reports when the producer set no UNIQ_KEY), the message at that offset when the
   * broker it names is one of those brokers.
   */
  async byMsgId(topic: string, msgId: string): Promise<StoredMessage[]> {
    const brokers = await this.brokersOf(topic);
    const found: StoredMessage[] = [];
    for (const broker of brokers) found.push(...(await this.byUniqueKey(broker, topic, msgId)));
    const offset = offsetMsgIdParts(msgId);
    if (offset && brokers.includes(offset.broker)) {
      const copy = await this.atOffset(offset.broker, offset.commitLogOffset);
      if (copy && copy.topic === topic && !found.some((f) => f.offsetMsgId === copy.offsetMsgId)) found.push(copy);
    }
    return found;
  }

  private async brokersOf(topic: string): Promise<string[]> {
    let route: Awaited<ReturnType<RemotingClient['getTopicRouteInfoFromNameServer']>>;
    try {
      route = await this.client.getTopicRouteInfoFromNameServer(topic, TIMEOUT_MS);
    } catch (error) {
      throw new MessageLookupError(`the name servers of ${this.cluster} have no route for topic ${topic}`, {
        cause: error,
      });
    }
    return (route?.brokerDatas ?? []).flatMap((b) => {
      const addrs = b.brokerAddrs ?? {};
      const address = addrs[MASTER_ID] ?? Object.values(addrs)[0];
      return address ? [address] : [];
    });
  }

  private async byUniqueKey(broker: string, topic: string, msgId: string): Promise<StoredMessage[]> {
    const response = await this.call(broker, QUERY_MESSAGE, {
      topic,
      key: msgId,
      maxNum: MAX_COPIES,
      beginTimestamp: 0,
      endTimestamp: Number.MAX_SAFE_INTEGER,
      _UNIQUE_KEY_QUERY: 'true',
    });
    if (response === undefined) return [];
    // The index is keyed by a hash: a neighbour's message can come back too.
    return this.decode(broker, response).filter((m) => m.topic === topic && m.msgId === msgId);
  }

  private async atOffset(broker: string, commitLogOffset: bigint): Promise<StoredMessage | undefined> {
    const response = await this.call(broker, VIEW_MESSAGE_BY_ID, { offset: commitLogOffset.toString() });
    return response === undefined ? undefined : this.decode(broker, response)[0];
  }

  private async call(broker: string, code: number, header: Record<string, unknown>): Promise<Buffer | undefined> {
    const response = await this.client.invoke(broker, RemotingCommand.createRequestCommand(code, header), TIMEOUT_MS);
    if (response.code === QUERY_NOT_FOUND) return undefined;
    if (response.code !== 0) {
      // VIEW_MESSAGE_BY_ID answers a system error for an offset past the commit log: nothing is there.
      if (code === VIEW_MESSAGE_BY_ID) return undefined;
      throw new MessageLookupError(`request ${code} to broker ${broker} answered ${response.code}: ${response.remark}`);
    }
    return response.body;
  }

  private decode(broker: string, body: Buffer): StoredMessage[] {
    const messages = MessageDecoder.decodes(ByteBuffer.wrap(body), true) as Array<{
      topic: string;
      msgId: string;
      storeTimestamp: number;
      body?: Buffer;
      properties?: Record<string, string>;
    }>;
    return messages.map((m) => ({
      topic: m.topic,
      msgId: m.properties?.UNIQ_KEY,
      offsetMsgId: m.msgId,
      storeTimestamp: m.storeTimestamp,
      bodySha256: sha256(m.body ?? Buffer.alloc(0)),
      broker,
    }));
  }
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** An offset msgId's parts: store host (IPv4 and port) and commit-log offset; `undefined` for any other id. */
function offsetMsgIdParts(msgId: string): { broker: string; commitLogOffset: bigint } | undefined {
  if (!/^[0-9A-F]{32}$/i.test(msgId)) return undefined;
  const bytes = Buffer.from(msgId, 'hex');
  return {
    broker: `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}:${bytes.readInt32BE(4)}`,
    commitLogOffset: bytes.readBigInt64BE(8),
  };
}
