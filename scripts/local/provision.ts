import {
  type AttributeDefinition,
  CreateTableCommand,
  type KeySchemaElement,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { type AwsConfig, createDynamoDb, createSqs, emulatorConfig } from '../../lib/aws/index.ts';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  deadLetterQueueName,
  FIFO_QUEUE_ATTRIBUTES,
  lifetimesOf,
  queueName,
  TABLES,
  type TableKey,
  tableName,
} from '../../lib/config/index.ts';

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
  queues: Record<string, { source: LocalQueue; deadLetter: LocalQueue; maxReceiveCount: number; fifo: boolean }>;
}

/** Visibility timeout of the local source queues; the CDK app derives its own from the function timeout. */
export const LOCAL_VISIBILITY_TIMEOUT_SECONDS = 30;

/**
 * Creates on the emulator the tables and queues the CDK app defines, from the same
 * definitions (`lib/config/resources.ts`): names, keys, TTL attribute, redrive count, and for
 * an orderly group FIFO queues with the catalogue's FIFO attributes.
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
  const endpoint = config.endpoint!;
  const dynamoDb = createDynamoDb(config);
  const sqs = createSqs(config);
  const tables = {} as Record<TableKey, string>;
  for (const [key, def] of Object.entries(TABLES) as [TableKey, (typeof TABLES)[TableKey]][]) {
    const name = tableName(prefix, key);
    const keySchema: KeySchemaElement[] = [{ AttributeName: def.partitionKey, KeyType: 'HASH' }];
    const attributes: AttributeDefinition[] = [{ AttributeName: def.partitionKey, AttributeType: 'S' }];
    if ('sortKey' in def) {
      keySchema.push({ AttributeName: def.sortKey, KeyType: 'RANGE' });
      attributes.push({ AttributeName: def.sortKey, AttributeType: 'S' });
    }
    await dynamoDb.send(
      new CreateTableCommand({
        TableName: name,
        KeySchema: keySchema,
        AttributeDefinitions: attributes,
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    if ('ttlAttribute' in def) {
      await dynamoDb.send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
        }),
      );
    }
    tables[key] = name;
  }
  const queues: LocalResources['queues'] = {};
  for (const def of options.catalogue ?? CONSUMER_GROUPS) {
    if (options.groups && !options.groups.includes(def.group)) continue;
    const { queues: lifetimes, ordering } = lifetimesOf(def).lifetimes;
    const fifo = ordering === 'orderly';
    const queueType = fifo ? FIFO_QUEUE_ATTRIBUTES : {};
    const deadLetter = await createQueue(sqs, deadLetterQueueName(prefix, def.group, ordering), {
      ...queueType,
      MessageRetentionPeriod: String(lifetimes.deadLetterRetentionSeconds),
    });
    const source = await createQueue(sqs, queueName(prefix, def.group, ordering), {
      ...queueType,
      VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? LOCAL_VISIBILITY_TIMEOUT_SECONDS),
      MessageRetentionPeriod: String(lifetimes.sourceRetentionSeconds),
      RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: deadLetter.arn,
        maxReceiveCount: lifetimes.maxReceiveCount,
      }),
    });
    queues[def.group] = { source, deadLetter, maxReceiveCount: lifetimes.maxReceiveCount, fifo };
  }
  return { prefix, endpoint, aws: config, tables, queues };
}

async function createQueue(
  sqs: ReturnType<typeof createSqs>,
  name: string,
  attributes: Record<string, string>,
): Promise<LocalQueue> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}
