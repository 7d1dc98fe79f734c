import MQClientAPI from 'ali-ons/lib/mq_client_api.js';
import RemotingCommand from 'ali-ons/lib/protocol/command/remoting_command.js';

/** `RequestCode.GET_BROKER_RUNTIME_INFO`, answered with the broker's statistics as a string table. */
const GET_BROKER_RUNTIME_INFO = 28;
/** `ResponseCode.QUERY_NOT_FOUND`: the broker holds no offset of the group for the queue. */
const QUERY_NOT_FOUND = 22;
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

/**
 * What a RocketMQ 4 broker itself says, asked over the remoting protocol the way `mqadmin` asks
 * (without a JVM start per question): a group's consume offsets, the queues' max offsets, and how
 * many messages the broker has served to consumers. Master and slave are asked separately, by
 * address.
 */
export class BrokerProbe {
  readonly #api: MQClientAPI;

  private constructor(api: MQClientAPI) {
    this.#api = api;
  }

  static async open(namesrvAddr: string): Promise<BrokerProbe> {
    const api = new MQClientAPI({
      nameSrv: namesrvAddr,
      httpclient: { request: () => Promise.reject(new Error('name server given')) },
      logger: SILENT,
    });
    await api.ready();
    return new BrokerProbe(api);
  }

  /** The group's committed offset per queue, `-1` where the broker has none. */
  async consumerOffsets(brokerAddr: string, group: string, topic: string, queueIds: readonly number[]) {
    return Promise.all(
      queueIds.map((queueId) =>
        this.#api.queryConsumerOffset(brokerAddr, { topic, consumerGroup: group, queueId }, 3_000).then(
          (offset) => offset,
          (err: Error & { code?: number }) => {
            if (err.code === QUERY_NOT_FOUND) return -1;
            throw err;
          },
        ),
      ),
    );
  }

  /**
   * Commits the group's offsets as its consumers would (one-way), until the broker has them all: a
   * group that has consumed everything up to them. The 4.7.1 broker creates a group's offset table
   * on its first commit without a lock (`ConsumerOffsetManager.commitOffset`: get, null, put), so
   * of several first commits handled at once only one may survive; those are sent again.
   */
  async commitOffsets(
    brokerAddr: string,
    group: string,
    topic: string,
    offsets: readonly number[] | Readonly<Record<number, number>>,
  ): Promise<void> {
    const queueIds = Object.keys(offsets).map(Number);
    let missing = queueIds;
    for (let attempt = 0; missing.length > 0; attempt++) {
      if (attempt >= 20)
        throw new Error(`${brokerAddr} did not take ${group}'s offsets ${offsets} on queues ${missing}`);
      await Promise.all(
        missing.map((queueId) =>
          this.#api.updateConsumerOffsetOneway(brokerAddr, {
            topic,
            consumerGroup: group,
            queueId,
            commitOffset: offsets[queueId]!,
          }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const committed = await this.consumerOffsets(brokerAddr, group, topic, queueIds);
      missing = queueIds.filter((q, i) => committed[i] !== offsets[q]);
    }
  }

  /**
   * Each queue's max offset: one past its newest message, as far as the broker has dispatched its
   * commit log into the queues (see `maxOffsetsHolding`).
   */
  maxOffsets(brokerAddr: string, topic: string, queueIds: readonly number[]): Promise<number[]> {
    return Promise.all(queueIds.map((queueId) => this.#api.getMaxOffset(brokerAddr, topic, queueId, 3_000)));
  }

  /**
   * Each queue's max offset once it holds every message of `sent`. A send is answered when the
   * message is in the commit log; the broker's reput thread moves it into its consume queue a little
   * later (a millisecond when idle, more under load), so a max offset read right after a send can
   * still miss it.
   */
  async maxOffsetsHolding(
    brokerAddr: string,
    topic: string,
    queueIds: readonly number[],
    sent: ReadonlyArray<{ readonly queueId: number; readonly queueOffset: number }>,
  ): Promise<number[]> {
    for (let attempt = 0; ; attempt++) {
      const offsets = await this.maxOffsets(brokerAddr, topic, queueIds);
      if (sent.every((s) => offsets[queueIds.indexOf(s.queueId)]! > s.queueOffset)) return offsets;
      if (attempt >= 50) throw new Error(`${brokerAddr} did not dispatch every message sent to ${topic}: ${offsets}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * Messages this broker has handed to consumers since it started (`msgGetTotalTodayNow`, the
   * store's transferred-message count): a slave's stays 0 while clients pull from the master.
   */
  async messagesServed(brokerAddr: string): Promise<number> {
    const response = await this.#api.invoke(
      brokerAddr,
      RemotingCommand.createRequestCommand(GET_BROKER_RUNTIME_INFO, null),
      3_000,
    );
    if (response.code !== 0 || !response.body)
      throw new Error(`GET_BROKER_RUNTIME_INFO from ${brokerAddr} answered ${response.code}: ${response.remark}`);
    const { table } = JSON.parse(response.body.toString('utf8')) as { table: Record<string, string> };
    return Number(table.msgGetTotalTodayNow);
  }

  close(): Promise<void> {
    return this.#api.close();
  }
}
