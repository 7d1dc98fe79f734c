import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { CreateQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type AwsConfig,
  createDynamoDb,
  createEventBridge,
  createSqs,
  scanTable,
} from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  type ConsumerGroupDefinition,
  type OutboxItem,
  type OutboxStatus,
  outboxDeadLetterQueueName,
  type RelayTargets,
  subscribersOf,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { RelayReport } from '@rocketmq-lambda/runtime/outbox/index.ts';
import type { SigningKeyRing } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { localRelay } from '../testing/outbox-stream.ts';
import type { LocalResources } from './provision.ts';
import type { QueueOccupancy } from './queue-occupancy.ts';
import { LocalRunConfigError } from './run-settings.ts';
import type { StreamPoller } from './stream-poller.ts';

/** What the run's relays did, for the report and the chaos run's `outbox` figures. */
export interface RelayAccount {
  /** Items sent and marked RELAYED. */
  relayed: number;
  /** Items refused for good: marked FAILED, a notice in the relay DLQ. */
  failed: number;
  /** Records handed back to the stream (a failed send, or held behind one). */
  retried: number;
  /** Invocations the stream poller made that the relay did not survive (injected kills). */
  crashed: number;
  /** Polls of a stream the emulator failed (tried again). */
  pollErrors: number;
}

export interface LocalRelaysOptions {
  readonly aws: AwsConfig;
  readonly resources: LocalResources;
  /** The catalogue: who subscribes to what a group publishes. */
  readonly catalogue: readonly ConsumerGroupDefinition[];
  /** The running groups that publish. */
  readonly publishers: readonly ConsumerGroupDefinition[];
  /** The running groups: only their queues are targets. */
  readonly groups: readonly string[];
  readonly occupancy: QueueOccupancy;
  readonly signingKeys: SigningKeyRing;
  /**
   * Puts faults between a group's relay and AWS (the chaos run's kills and throttles), and may have its
   * stream hand batches again (`redeliver`) and a dead relay replaced by a new instance (`restart`).
   */
  readonly faults?: (
    group: string,
    clients: RelayClients,
  ) => { redeliver?: () => boolean; restart?: () => boolean } | undefined;
}

/**
 * The relays of a local run: for each running group that publishes, the production relay on its outbox
 * table's stream, the stream poller standing in for Lambda's event source. The run has no bus and no
 * RocketMQ: a topic for `sqs` or `eventbridge` is sent to the source queue of every running group
 * subscribed to it (what the bus's rules do when deployed); `rocketmq` is refused before the run starts.
 * Every message a relay puts on a queue is counted in the run's occupancy as the bridge's are, so the
 * run is quiet only once the relayed messages are consumed too.
 */
export class LocalRelays {
  readonly account: RelayAccount = { relayed: 0, failed: 0, retried: 0, crashed: 0, pollErrors: 0 };
  readonly #pollers: StreamPoller[] = [];
  readonly #abort = new AbortController();
  readonly #running: Promise<void>[] = [];
  /** Per stream: when its last poll that found nothing new had started (undefined: its last poll found records). */
  readonly #emptyPollStartedAt = new Map<StreamPoller, number | undefined>();

  static async start(options: LocalRelaysOptions): Promise<LocalRelays> {
    const relays = new LocalRelays();
    for (const definition of options.publishers) await relays.#open(definition, options);
    relays.#run();
    return relays;
  }

  /**
   * Every stream has been read to its end by a poll that started at `since` or later: whatever was
   * committed before `since` has been relayed (or handed back, which keeps a poll from being empty).
   */
  caughtUpSince(since: number): boolean {
    return [...this.#emptyPollStartedAt.values()].every((startedAt) => startedAt !== undefined && startedAt >= since);
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#running);
  }

  async #open(definition: ConsumerGroupDefinition, options: LocalRelaysOptions): Promise<void> {
    const { aws, resources } = options;
    const tableName = resources.outboxTables[definition.group];
    if (!tableName)
      throw new LocalRunConfigError(`group ${definition.group} publishes but the stage has no outbox table`);
    const sqs = countedSqs(createSqs(aws), options);
    const dynamoDb = createDynamoDb(aws);
    const faults = options.faults?.(definition.group, { sqs, dynamoDb, tableName });
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: outboxDeadLetterQueueName(resources.prefix, definition.group) }),
    );
    const poller = await localRelay(
      { dynamoDb: new DynamoDBClient(streamsConfig(aws)), streams: new DynamoDBStreamsClient(streamsConfig(aws)) },
      {
        definition,
        aws,
        tableName,
        targets: localTargets(definition, options),
        deadLetterQueueUrl: QueueUrl!,
        signingKeys: options.signingKeys,
        clients: { dynamoDb, sqs, eventBridge: createEventBridge(aws) },
        onReport: (report) => this.#count(report),
        ...(faults?.redeliver ? { redeliver: faults.redeliver } : {}),
        ...(faults?.restart ? { restart: faults.restart } : {}),
      },
    );
    this.#pollers.push(poller);
    this.#emptyPollStartedAt.set(poller, undefined);
  }

  #run(): void {
    for (const poller of this.#pollers) {
      this.#running.push(
        (async () => {
          while (!this.#abort.signal.aborted) {
            const startedAt = Date.now();
            // A poll the emulator failed is tried again, as Lambda's event source does: the stream keeps its place.
            const polled = await poller.pollOnce().catch(() => undefined);
            if (polled === undefined) this.account.pollErrors++;
            else if (polled.crashed) this.account.crashed++;
            this.#emptyPollStartedAt.set(poller, polled?.received === 0 ? startedAt : undefined);
            if (polled === undefined || polled.received === 0 || polled.retryFrom !== undefined) await sleep(50);
          }
        })(),
      );
    }
  }

  #count(report: RelayReport): void {
    if (report.outcome === 'relayed' || report.outcome === 'already-marked') this.account.relayed++;
    else if (report.outcome === 'failed') this.account.failed++;
    else if (report.outcome === 'retry' || report.outcome === 'held-back') this.account.retried++;
  }
}

/** A relay's clients, for faults to be put between them and AWS. */
export interface RelayClients {
  readonly sqs: SQSClient;
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly tableName: string;
}

/** One outbox item at the end of a run, as far as the report and the chaos run judge it. */
export interface OutboxEntry {
  readonly group: string;
  readonly eventId: string;
  readonly businessKey: string;
  readonly status: OutboxStatus;
}

/** The outbox items of the run's publishing groups at its end, and what their relays did. */
export interface OutboxReadout {
  readonly items: readonly OutboxEntry[];
  readonly relay: RelayAccount;
}

/** How many items were committed, and where they are now. */
export interface OutboxFigures {
  readonly committed: number;
  readonly relayed: number;
  readonly pending: number;
  readonly failed: number;
}

export function outboxFigures(items: readonly OutboxEntry[]): OutboxFigures {
  const count = (status: OutboxStatus) => items.filter((i) => i.status === status).length;
  return { committed: items.length, relayed: count('RELAYED'), pending: count('PENDING'), failed: count('FAILED') };
}

export async function readOutbox(
  dynamoDb: DynamoDBDocumentClient,
  resources: LocalResources,
  relays: LocalRelays,
): Promise<OutboxReadout> {
  const items: OutboxEntry[] = [];
  for (const [group, table] of Object.entries(resources.outboxTables))
    for (const { eventId, businessKey, status } of await scanTable<OutboxItem>(dynamoDb, table))
      items.push({ group, eventId, businessKey, status });
  return { items, relay: { ...relays.account } };
}

/** Each published topic to the source queues of the running groups subscribed to one of its tags. */
function localTargets(definition: ConsumerGroupDefinition, options: LocalRelaysOptions): RelayTargets {
  const targets: Record<string, RelayTargets[string]> = {};
  for (const published of definition.publishes ?? []) {
    if (published.target === 'rocketmq') {
      throw new LocalRunConfigError(
        `group ${definition.group} publishes ${published.topic} to target 'rocketmq', and the local run has no RocketMQ cluster: ` +
          'run it without that group (--groups), or test the outbound route on a broker (npm run test:bridge)',
      );
    }
    const subscribers = new Map<string, ConsumerGroupDefinition>();
    for (const tag of published.tags)
      for (const g of subscribersOf(published.topic, tag, options.catalogue))
        if (options.groups.includes(g.group)) subscribers.set(g.group, g);
    targets[published.topic] = {
      kind: 'sqs',
      queues: [...subscribers.values()].map((g) => ({
        group: g.group,
        url: options.resources.queues[g.group]!.source.url,
        tagExpression: g.tagExpression,
      })),
    };
  }
  return targets;
}

/** The relay's SQS client, telling the run's occupancy of every message it puts on a group's source queue. */
function countedSqs(sqs: SQSClient, options: LocalRelaysOptions): SQSClient {
  const groupOf = new Map(options.groups.map((g) => [options.resources.queues[g]!.source.url, g]));
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const input = args.input as { QueueUrl?: string; MessageBody?: string };
      const group = context.commandName === 'SendMessageCommand' ? groupOf.get(input.QueueUrl ?? '') : undefined;
      const messageId = (result.output as { MessageId?: string }).MessageId;
      if (group && messageId) options.occupancy.sent(group, [{ messageId, body: input.MessageBody ?? '' }]);
      return result;
    },
    { step: 'initialize', name: 'localRunOccupancy' },
  );
  return sqs;
}

/** The stream is served by DynamoDB's emulator process, which may run apart from the rest (`dynamoDbEndpoint`). */
function streamsConfig(aws: AwsConfig) {
  return {
    endpoint: aws.dynamoDbEndpoint ?? aws.endpoint,
    region: aws.region ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
