/**
 * The internal module of ali-ons 3.12.0 that the bridge tests use to ask a 4.x broker about
 * itself (consume offsets, queue offsets, runtime statistics): the client's remoting API (its
 * command is declared with the bridge's, in packages/bridge/src/ali-ons.d.ts). Names and shapes are the library's own.
 */
declare module 'ali-ons/lib/mq_client_api.js' {
  import type { ClientOptions } from 'ali-ons';
  import type RemotingCommand from 'ali-ons/lib/protocol/command/remoting_command.js';

  export default class MQClientAPI {
    constructor(options: ClientOptions);
    ready(): Promise<void>;
    close(): Promise<void>;
    invoke(addr: string, command: RemotingCommand, timeoutMs?: number): Promise<RemotingCommand>;
    /** QUERY_CONSUMER_OFFSET; rejects when the broker has no offset for the queue (QUERY_NOT_FOUND). */
    queryConsumerOffset(
      addr: string,
      header: { topic: string; consumerGroup: string; queueId: number },
      timeoutMs?: number,
    ): Promise<number>;
    /** GET_ROUTEINTO_BY_TOPIC from the name server; rejects while it routes no broker for the topic. */
    getTopicRouteInfoFromNameServer(
      topic: string,
      timeoutMs?: number,
    ): Promise<{ brokerDatas: { brokerName: string; brokerAddrs: Record<string, string> }[] }>;
    getMaxOffset(addr: string, topic: string, queueId: number, timeoutMs?: number): Promise<number>;
    /** UPDATE_CONSUMER_OFFSET, one-way: what a consumer sends to commit its offset. */
    updateConsumerOffsetOneway(
      addr: string,
      header: { topic: string; consumerGroup: string; queueId: number; commitOffset: number },
    ): Promise<void>;
  }
}
