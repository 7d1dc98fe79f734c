import RemotingCommand from 'ali-ons/lib/protocol/command/remoting_command.js';

/**
 * Taking over a consumer group another consumer ran (the legacy Java consumers of a cutover):
 * the bridge joins the group under its name and RocketMQ hands it the group's committed offsets.
 * A queue on which the group committed nothing would start where the client's default puts it,
 * at the queue's end for a 4.x client, skipping every message already there: the backlog the
 * takeover exists to carry over. So the route refuses to start unless it says where such a queue
 * starts.
 */
export class GroupWithoutOffsetsError extends Error {
  override readonly name = 'GroupWithoutOffsetsError';
  constructor(
    readonly group: string,
    readonly topic: string,
    readonly queues: readonly string[],
  ) {
    super(
      `taking over consumer group ${group} on topic ${topic}: the group has no committed offset on ${queues.length} ` +
        `queue(s) (${queues.join(', ')}), where the client would start at the queue's end and skip what is there; ` +
        `start the route once the group has committed offsets there (its consumers ran on those queues), or say ` +
        `where those queues start: takeOver.startWithoutOffset "first" or { "timestamp": "<ISO-8601 instant>" }`,
    );
  }
}

/** A topic's route as the name server gives it (the fields read here). */
interface TopicRoute {
  readonly queueDatas: ReadonlyArray<{ readonly brokerName: string; readonly readQueueNums: number }>;
  readonly brokerDatas: ReadonlyArray<{ readonly brokerName: string; readonly brokerAddrs: Record<string, string> }>;
}

/** What the check asks of the remoting client (ali-ons' `MQClientAPI`). */
export interface RemotingAdmin {
  getTopicRouteInfoFromNameServer(topic: string, timeoutMs?: number): Promise<TopicRoute | undefined>;
  invoke(
    addr: string,
    command: RemotingCommand,
    timeoutMs?: number,
  ): Promise<{
    readonly code: number;
    readonly remark: string | undefined;
    readonly body: Buffer | undefined;
    readonly extFields?: Record<string, string> | undefined;
  }>;
}

/** A queue of the topic, with the master that keeps its offsets. */
interface QueueOnMaster {
  readonly brokerName: string;
  readonly queueId: number;
  readonly master: string;
}

/** `RequestCode.GET_ALL_CONSUMER_OFFSET`: the broker's consume offset table, every group's, as `mqadmin` reads it. */
const GET_ALL_CONSUMER_OFFSET = 43;
const SEARCH_OFFSET_BY_TIMESTAMP = 29;
const UPDATE_CONSUMER_OFFSET = 15;
const MASTER_ID = '0';
const TIMEOUT_MS = 5_000;

/**
 * The topic's queues (`<brokerName>:<queueId>`) on which the group has committed no offset, from
 * each master's offset table. Not QUERY_CONSUMER_OFFSET: for a group without an offset the 4.7.1
 * broker answers 0 while the queue's first message is still in memory, and "not found" only once
 * it is not, so that answer depends on the broker's page cache rather than on the group.
 */
export async function queuesWithoutOffset(admin: RemotingAdmin, group: string, topic: string): Promise<string[]> {
  return (await queuesWithoutOffsetOnMasters(admin, group, topic)).map((q) => `${q.brokerName}:${q.queueId}`);
}

async function queuesWithoutOffsetOnMasters(admin: RemotingAdmin, group: string, topic: string) {
  const route = await admin.getTopicRouteInfoFromNameServer(topic, TIMEOUT_MS);
  if (!route) throw new Error(`the name servers have no route for topic ${topic}`);
  const missing: QueueOnMaster[] = [];
  for (const { brokerName, readQueueNums } of route.queueDatas) {
    const master = route.brokerDatas.find((b) => b.brokerName === brokerName)?.brokerAddrs[MASTER_ID];
    // Offsets are committed to the master; without one they cannot be read, nor would they be committed.
    if (!master) throw new Error(`broker ${brokerName} of topic ${topic} has no master to read ${group}'s offsets`);
    const committed = (await offsetTableOf(admin, master))[`${topic}@${group}`] ?? {};
    for (let queueId = 0; queueId < readQueueNums; queueId++)
      if (!(committed[queueId] !== undefined && committed[queueId]! >= 0))
        missing.push({ brokerName, queueId, master });
  }
  return missing;
}

/**
 * Starts each queue on which the group committed nothing at `instantMs`, and returns what it
 * committed (`<brokerName>:<queueId>@<offset>`). The offset is the broker's answer to
 * SEARCH_OFFSET_BY_TIMESTAMP for the millisecond before the instant. On 4.7.1 that search
 * (`ConsumeQueue.getOffsetInQueueByTime`, a binary search by store time) answers a message stored
 * at exactly the millisecond asked for as soon as it meets one, which of several stored in that
 * millisecond depends on where the search lands; asked for the instant itself, it could skip the
 * instant's first messages. Asked for the millisecond before, it answers one of that
 * millisecond's messages, or else the message nearest it in time: the first one at or after the
 * instant, or the last one before when that one is nearer. So a queue never starts late; it starts
 * early by at most one message or the messages of the millisecond before the instant, whose copies,
 * if they were consumed, are suppressed by their business keys.
 *
 * Committed for the group rather than left to the client's `CONSUME_FROM_TIMESTAMP`, which reads
 * "no offset" through QUERY_CONSUMER_OFFSET (above: 0 while the queue's first message is in
 * memory, so it would start there), and so that a bridge restarted before its own first commit
 * starts at the same place. `%RETRY%<group>` is left alone: the client starts it at its committed
 * offset or at its first letter, which is owed whenever it was sent back.
 */
export async function startQueuesWithoutOffsetAt(
  admin: RemotingAdmin,
  group: string,
  topic: string,
  instantMs: number,
): Promise<string[]> {
  const started: string[] = [];
  for (const q of await queuesWithoutOffsetOnMasters(admin, group, topic)) {
    const found = await call(admin, q.master, SEARCH_OFFSET_BY_TIMESTAMP, {
      topic,
      queueId: q.queueId,
      timestamp: instantMs - 1,
    });
    const offset = Number(found.extFields?.offset);
    if (!Number.isInteger(offset) || offset < 0)
      throw new Error(
        `SEARCH_OFFSET_BY_TIMESTAMP for ${topic} on ${q.brokerName}:${q.queueId} answered ${found.extFields?.offset}`,
      );
    await call(admin, q.master, UPDATE_CONSUMER_OFFSET, {
      consumerGroup: group,
      topic,
      queueId: q.queueId,
      commitOffset: offset,
    });
    started.push(`${q.brokerName}:${q.queueId}@${offset}`);
  }
  return started;
}

async function call(admin: RemotingAdmin, brokerAddr: string, code: number, header: Record<string, unknown> | null) {
  const response = await admin.invoke(brokerAddr, RemotingCommand.createRequestCommand(code, header), TIMEOUT_MS);
  if (response.code !== 0)
    throw new Error(`request ${code} to ${brokerAddr} answered ${response.code}: ${response.remark}`);
  return response;
}

async function offsetTableOf(admin: RemotingAdmin, brokerAddr: string) {
  const response = await call(admin, brokerAddr, GET_ALL_CONSUMER_OFFSET, null);
  if (!response.body) throw new Error(`GET_ALL_CONSUMER_OFFSET from ${brokerAddr} answered without a body`);
  // The broker's fastjson writes the queue ids, integer map keys, unquoted: `{"T@g":{0:12,1:7}}`.
  const json = response.body.toString('utf8').replace(/([{,])(\d+):/g, '$1"$2":');
  return (JSON.parse(json) as { offsetTable?: Record<string, Record<string, number>> }).offsetTable ?? {};
}
