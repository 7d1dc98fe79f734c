import {
  type AttributeDefinition,
  CreateTableCommand,
  type KeySchemaElement,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type AwsConfig, createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  deadLetterQueueName,
  FIFO_QUEUE_ATTRIBUTES,
  lifetimesOf,
  OUTBOX_TABLE,
  outboxTableName,
  queueName,
  TABLES,
  type TableDefinition,
  type TableKey,
  tableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import {
  foundQueue,
  foundTableShape,
  neededQueueShape,
  neededTableShape,
  StageShapeError,
  shapeDifferences,
} from './stage-shape.ts';

export { StageShapeError };

export interface LocalQueue {
  url: string;
  arn: string;
}

export interface LocalResources {
  prefix: string;
  endpoint: string;
  /** How to reach them: `endpoint`, and DynamoDB's own when it runs in a process of its own. */
  aws: AwsConfig;
  tables: Record<TableKey, string>;
  /** The outbox table of each selected group whose entry publishes, by group (`outboxTableName`). */
  outboxTables: Record<string, string>;
  queues: Record<string, { source: LocalQueue; deadLetter: LocalQueue; maxReceiveCount: number; fifo: boolean }>;
  /** Names of the tables and queues that were there already (a kept stage), reused as they were. */
  reused: readonly string[];
}

/** Visibility timeout of the local source queues; the CDK app derives its own from the function timeout. */
export const LOCAL_VISIBILITY_TIMEOUT_SECONDS = 30;

/**
 * Makes on the emulator the tables and queues the CDK app defines, from the same definitions
 * (`packages/runtime/src/config/resources.ts`): names, keys, TTL attribute, redrive count, and for an orderly group
 * FIFO queues with the catalogue's FIFO attributes. A stage kept from an earlier run (`--keep`,
 * then `--prefix`) is reused as it is when every resource already there has that shape, and refused
 * with each difference named when one has not (`StageShapeError`); nothing is changed before it is
 * known that the whole stage fits.
 */
export async function provisionLocal(
  emulator: string | AwsConfig,
  prefix: string,
  options: {
    /** The groups that exist (default `CONSUMER_GROUPS`); a test adds one here as it does for the CDK app. */
    catalogue?: readonly ConsumerGroupDefinition[];
    /** Of those, the groups to create queues for (default: all). */
    groups?: readonly string[];
    /** The local run shortens it so a crashed batch comes back in seconds, not half a minute. */
    visibilityTimeoutSeconds?: number;
  } = {},
): Promise<LocalResources> {
  const config = typeof emulator === 'string' ? emulatorConfig(emulator) : emulator;
  const dynamoDb = createDynamoDb(config);
  const sqs = createSqs(config);
  const tables = await Promise.all(
    plannedTables(prefix).map(async (t) => ({ ...t, found: await foundTableShape(dynamoDb, t.name) })),
  );
  const outboxes = await Promise.all(
    plannedOutboxTables(prefix, options).map(async (t) => ({ ...t, found: await foundTableShape(dynamoDb, t.name) })),
  );
  const queues = await inspectQueues(sqs, plannedQueues(prefix, options));
  const differences = [
    ...[...tables, ...outboxes].flatMap((t) => (t.found ? shapeDifferences(`table ${t.name}`, t.needed, t.found) : [])),
    ...queues.flatMap((q) => q.differences),
  ];
  if (differences.length > 0) throw new StageShapeError(prefix, differences);
  for (const t of [...tables, ...outboxes]) if (!t.found) await createTable(dynamoDb, t.name, t.def);
  const resources: LocalResources = {
    prefix,
    endpoint: config.endpoint!,
    aws: config,
    tables: Object.fromEntries(tables.map((t) => [t.key, t.name])) as Record<TableKey, string>,
    outboxTables: Object.fromEntries(outboxes.map((t) => [t.group, t.name])),
    queues: {},
    reused: [...[...tables, ...outboxes].filter((t) => t.found).map((t) => t.name), ...queues.flatMap((q) => q.reused)],
  };
  for (const q of queues) {
    const deadLetter = q.deadLetter.found ?? (await createQueue(sqs, q.deadLetter.name, q.deadLetter.attributes));
    const redrive = { deadLetterTargetArn: deadLetter.arn, maxReceiveCount: q.maxReceiveCount };
    const source =
      q.source.found ??
      (await createQueue(sqs, q.source.name, { ...q.source.attributes, RedrivePolicy: JSON.stringify(redrive) }));
    resources.queues[q.group] = { source, deadLetter, maxReceiveCount: q.maxReceiveCount, fifo: q.fifo };
  }
  return resources;
}

/** The catalogue's tables under the prefix, with the shape each must have. */
function plannedTables(prefix: string) {
  return (Object.entries(TABLES) as [TableKey, TableDefinition][]).map(([key, def]) => ({
    key,
    def,
    name: tableName(prefix, key),
    needed: neededTableShape(def),
  }));
}

/**
 * The outbox table of each selected publishing group (`OUTBOX_TABLE`): keyed by event id, with its
 * TTL and the stream of new images its relay reads.
 */
function plannedOutboxTables(
  prefix: string,
  options: { catalogue?: readonly ConsumerGroupDefinition[]; groups?: readonly string[] },
) {
  const def: PlannedTableDefinition = {
    partitionKey: OUTBOX_TABLE.partitionKey,
    ttlAttribute: OUTBOX_TABLE.ttlAttribute,
    streamView: OUTBOX_TABLE.streamView,
  };
  const catalogue: readonly ConsumerGroupDefinition[] = options.catalogue ?? CONSUMER_GROUPS;
  return catalogue
    .filter((g) => (g.publishes?.length ?? 0) > 0 && (!options.groups || options.groups.includes(g.group)))
    .map((g) => ({ group: g.group, def, name: outboxTableName(prefix, g.group), needed: neededTableShape(def) }));
}

/** What a table is created from: the catalogue's definition, and the stream its readers need. */
type PlannedTableDefinition = Omit<TableDefinition, 'suffix'> & { readonly streamView?: 'NEW_IMAGE' };

async function createTable(dynamoDb: ReturnType<typeof createDynamoDb>, name: string, def: PlannedTableDefinition) {
  const keySchema: KeySchemaElement[] = [{ AttributeName: def.partitionKey, KeyType: 'HASH' }];
  const attributes: AttributeDefinition[] = [{ AttributeName: def.partitionKey, AttributeType: 'S' }];
  if (def.sortKey) {
    keySchema.push({ AttributeName: def.sortKey, KeyType: 'RANGE' });
    attributes.push({ AttributeName: def.sortKey, AttributeType: 'S' });
  }
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: keySchema,
      AttributeDefinitions: attributes,
      BillingMode: 'PAY_PER_REQUEST',
      ...(def.streamView ? { StreamSpecification: { StreamEnabled: true, StreamViewType: def.streamView } } : {}),
    }),
  );
  if (def.ttlAttribute) {
    await dynamoDb.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
      }),
    );
  }
}

/**
 * Each selected group's source queue and DLQ: their names, and the attributes they are created with
 * (the source queue's redrive policy names its DLQ's ARN, known once the DLQ exists).
 */
function plannedQueues(
  prefix: string,
  options: {
    catalogue?: readonly ConsumerGroupDefinition[];
    groups?: readonly string[];
    visibilityTimeoutSeconds?: number;
  },
) {
  return (options.catalogue ?? CONSUMER_GROUPS)
    .filter((def) => !options.groups || options.groups.includes(def.group))
    .map((def) => {
      const { queues: lifetimes, ordering } = lifetimesOf(def).lifetimes;
      const fifo = ordering === 'orderly';
      const queueType = fifo ? FIFO_QUEUE_ATTRIBUTES : {};
      return {
        group: def.group,
        fifo,
        maxReceiveCount: lifetimes.maxReceiveCount,
        deadLetter: {
          name: deadLetterQueueName(prefix, def.group, ordering),
          attributes: { ...queueType, MessageRetentionPeriod: String(lifetimes.deadLetterRetentionSeconds) },
        },
        source: {
          name: queueName(prefix, def.group, ordering),
          attributes: {
            ...queueType,
            VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? LOCAL_VISIBILITY_TIMEOUT_SECONDS),
            MessageRetentionPeriod: String(lifetimes.sourceRetentionSeconds),
          },
        },
      };
    });
}

/** Which of the planned queues exist already, and how each that does differs from the plan. */
async function inspectQueues(sqs: SQSClient, planned: ReturnType<typeof plannedQueues>) {
  return Promise.all(
    planned.map(async (q) => {
      const neededDeadLetter = neededQueueShape(q.deadLetter.attributes);
      const neededSource = neededQueueShape(q.source.attributes, {
        maxReceiveCount: q.maxReceiveCount,
        deadLetter: q.deadLetter.name,
      });
      const deadLetter = await foundQueue(sqs, q.deadLetter.name, neededDeadLetter);
      const source = await foundQueue(sqs, q.source.name, neededSource);
      const differences = [
        ...(deadLetter ? shapeDifferences(`queue ${q.deadLetter.name}`, neededDeadLetter, deadLetter.shape) : []),
        ...(source ? shapeDifferences(`queue ${q.source.name}`, neededSource, source.shape) : []),
      ];
      return {
        ...q,
        deadLetter: { ...q.deadLetter, found: deadLetter && { url: deadLetter.url, arn: deadLetter.arn } },
        source: { ...q.source, found: source && { url: source.url, arn: source.arn } },
        reused: [...(deadLetter ? [q.deadLetter.name] : []), ...(source ? [q.source.name] : [])],
        differences,
      };
    }),
  );
}

async function createQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<LocalQueue> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}
