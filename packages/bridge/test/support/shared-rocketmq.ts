import type { LocalConsumerGroup, LocalRocketMQ, LocalTopic } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq.ts';
import type { LocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import MQClientAPI from 'ali-ons/lib/mq_client_api.js';
import RemotingCommand from 'ali-ons/lib/protocol/command/remoting_command.js';
import { inject } from 'vitest';
import { NEVER_DEAD_LETTER_RETRY_MAX_TIMES } from '../../src/group-retry-policy.ts';

/**
 * The broker lane's shared clusters: one RocketMQ 5.5.0 and one 4.7.1, started once by the lane's
 * global setup (support/global-setup.ts) and handed to every file that neither kills nor switches a
 * broker. Each such file declares topics and groups of its own, names no other file uses, so files
 * see nothing of each other's messages, offsets or consumers. The files that kill, restart or switch
 * brokers (switchover, incidents, takeover, cutover) and the ACL broker keep clusters of their own.
 */
export type SharedRocketMQ5 = Pick<LocalRocketMQ, 'proxyEndpoint' | 'namesrvAddr' | 'clusterName' | 'brokerName'> & {
  /** The embedded broker's remoting address, where topics and groups are declared. */
  readonly brokerAddr: string;
};
export type SharedRocketMQ4 = Pick<
  LocalRocketMQ4,
  'namesrvAddr' | 'clusterName' | 'brokerName' | 'brokerAddr' | 'version' | 'storeDir'
>;

declare module 'vitest' {
  export interface ProvidedContext {
    rocketMq5: SharedRocketMQ5;
    rocketMq4: SharedRocketMQ4;
  }
}

/** `RequestCode.UPDATE_AND_CREATE_TOPIC` and `UPDATE_AND_CREATE_SUBSCRIPTIONGROUP`, what `mqadmin` sends. */
const UPDATE_AND_CREATE_TOPIC = 17;
const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200;
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
/** A probe topic the global setup seeds into the 5.x cluster, to find its broker through the name server. */
export const SHARED_PROBE_TOPIC = 'SHARED_CLUSTER_PROBE';

/** The lane's RocketMQ 5, with this file's topics and groups declared on it. */
export async function sharedRocketMQ5(declared: {
  readonly topics: readonly LocalTopic[];
  readonly groups?: readonly LocalConsumerGroup[];
}): Promise<SharedRocketMQ5> {
  const cluster = inject('rocketMq5');
  await declareOnSharedCluster(cluster, declared.topics, declared.groups);
  return cluster;
}

/** The lane's RocketMQ 4.7.1, with this file's topics declared on it. */
export async function sharedRocketMQ4(declared: { readonly topics: readonly LocalTopic[] }): Promise<SharedRocketMQ4> {
  const cluster = inject('rocketMq4');
  await declareOnSharedCluster(cluster, declared.topics);
  return cluster;
}

/**
 * Declares a file's topics (and, on RocketMQ 5, its consumer groups with the retry limit the bridge
 * requires unless told otherwise) on a shared cluster, over the remoting protocol as `mqadmin` does
 * without a JVM start per command; resolves once the name server routes every topic. A 4.x broker
 * creates a group itself on its consumers' first heartbeat.
 */
async function declareOnSharedCluster(
  cluster: { readonly namesrvAddr: string; readonly brokerAddr: string },
  topics: readonly LocalTopic[],
  groups: readonly LocalConsumerGroup[] = [],
): Promise<void> {
  const api = await remotingApi(cluster.namesrvAddr);
  try {
    for (const topic of topics) await invoke(api, cluster.brokerAddr, topicCommand(topic));
    for (const group of groups) await invoke(api, cluster.brokerAddr, groupCommand(group));
    for (const topic of topics) await routed(api, topic.name);
  } finally {
    await api.close();
  }
}

/** The broker address the name server routes `topic` to (the master's, brokerId 0). */
export async function brokerAddrOf(namesrvAddr: string, topic: string): Promise<string> {
  const api = await remotingApi(namesrvAddr);
  try {
    const route = await routed(api, topic);
    return route.brokerDatas[0]!.brokerAddrs['0']!;
  } finally {
    await api.close();
  }
}

async function remotingApi(namesrvAddr: string): Promise<MQClientAPI> {
  const api = new MQClientAPI({
    nameSrv: namesrvAddr,
    httpclient: { request: () => Promise.reject(new Error('name server given')) },
    logger: SILENT,
  });
  await api.ready();
  return api;
}

function topicCommand(topic: LocalTopic): RemotingCommand {
  const type = topic.type ?? 'NORMAL';
  const queues = topic.queues ?? 4;
  return RemotingCommand.createRequestCommand(UPDATE_AND_CREATE_TOPIC, {
    topic: topic.name,
    defaultTopic: 'TBW102',
    readQueueNums: queues,
    writeQueueNums: queues,
    perm: 6,
    topicFilterType: 'SINGLE_TAG',
    topicSysFlag: 0,
    order: type === 'FIFO',
    // RocketMQ 5's topic attribute (a 4.7.1 broker ignores the field): `+` adds it.
    attributes: `+message.type=${type}`,
  });
}

function groupCommand(group: LocalConsumerGroup): RemotingCommand {
  const command = RemotingCommand.createRequestCommand(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, null);
  command.body = Buffer.from(
    JSON.stringify({
      groupName: group.name,
      consumeEnable: true,
      consumeMessageOrderly: group.fifo === true,
      retryMaxTimes: group.retryMaxTimes ?? NEVER_DEAD_LETTER_RETRY_MAX_TIMES,
    }),
  );
  return command;
}

async function invoke(api: MQClientAPI, brokerAddr: string, command: RemotingCommand): Promise<void> {
  const response = await api.invoke(brokerAddr, command, 5_000);
  if (response.code !== 0) throw new Error(`${brokerAddr} refused command ${command.code}: ${response.remark}`);
}

/** Polls the name server until it routes `topic`: a broker registers a new topic right after creating it. */
async function routed(api: MQClientAPI, topic: string) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await api.getTopicRouteInfoFromNameServer(topic, 3_000);
    } catch (err) {
      if (attempt >= 100) throw new Error(`the name server never routed ${topic}: ${String(err)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
