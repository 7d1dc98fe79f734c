import { DescribeTableCommand, DescribeTimeToLiveCommand, type TableDescription } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableDefinition } from '@rocketmq-lambda/runtime/config/index.ts';

/**
 * What a stage's tables and queues look like, reduced to what the run depends on: keys, TTL
 * attribute and stream of a table; type, FIFO attributes, visibility, retention and redrive of a
 * queue. A kept stage is reused only when every one of these is what the run would create: a
 * queue with another redrive count or a table with another TTL attribute would run the consumers
 * on other rules than the catalogue's, without a word.
 */
export type Shape = Readonly<Record<string, string | undefined>>;

/** A stage under this prefix exists in another shape than the run needs; nothing of it was changed. */
export class StageShapeError extends Error {
  override readonly name = 'StageShapeError';
  constructor(
    readonly prefix: string,
    readonly differences: readonly string[],
  ) {
    super(
      `stage "${prefix}" exists, but not as this run needs it (packages/runtime/src/config/resources.ts and the run's settings), so it is left as it is:\n` +
        `${differences.map((d) => `  ${d}`).join('\n')}\n` +
        `Run with settings that match it, or give another --prefix for a stage of its own.`,
    );
  }
}

/** The options a setting comes from, named beside a difference the command line can fix. */
const SETTING_OF: Readonly<Record<string, string>> = { VisibilityTimeout: '--visibility-timeout' };

/** `resource: attribute is X, this run needs Y` for each attribute the two shapes disagree on. */
export function shapeDifferences(resource: string, needed: Shape, found: Shape): string[] {
  return Object.keys({ ...needed, ...found })
    .filter((attribute) => needed[attribute] !== found[attribute])
    .map((attribute) => {
      const setting = SETTING_OF[attribute];
      return `${resource}: ${attribute} is ${found[attribute] ?? 'none'}, this run needs ${needed[attribute] ?? 'none'}${setting ? ` (${setting})` : ''}`;
    });
}

/**
 * A table as the catalogue defines it. Only an outbox table (`OUTBOX_TABLE`) has a stream, of the
 * view its relay reads; the catalogue's own tables have none.
 */
export function neededTableShape(def: Omit<TableDefinition, 'suffix'> & { readonly streamView?: string }): Shape {
  return {
    keys: [`${def.partitionKey} HASH S`, ...(def.sortKey ? [`${def.sortKey} RANGE S`] : [])].join(', '),
    'TTL attribute': def.ttlAttribute,
    stream: def.streamView,
  };
}

/** The table's shape, or `undefined` when there is no such table. */
export async function foundTableShape(dynamoDb: DynamoDBDocumentClient, name: string): Promise<Shape | undefined> {
  let table: TableDescription;
  try {
    table = (await dynamoDb.send(new DescribeTableCommand({ TableName: name }))).Table!;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return undefined;
    throw error;
  }
  const { TimeToLiveDescription: ttl } = await dynamoDb.send(new DescribeTimeToLiveCommand({ TableName: name }));
  const type = (attribute: string | undefined) =>
    table.AttributeDefinitions?.find((a) => a.AttributeName === attribute)?.AttributeType;
  const ttlOn = ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.TimeToLiveStatus === 'ENABLING';
  const stream = table.StreamSpecification;
  return {
    keys: (table.KeySchema ?? []).map((k) => `${k.AttributeName} ${k.KeyType} ${type(k.AttributeName)}`).join(', '),
    'TTL attribute': ttlOn ? ttl?.AttributeName : undefined,
    stream: stream?.StreamEnabled ? (stream.StreamViewType ?? 'enabled') : undefined,
  };
}

/** The queue attributes the run sets, and the redrive policy it gives a source queue, taken apart. */
export function neededQueueShape(
  attributes: Readonly<Record<string, string>>,
  redrive?: { maxReceiveCount: number; deadLetter: string },
): Shape {
  return {
    FifoQueue: 'false',
    ...attributes,
    'redrive maxReceiveCount': redrive && String(redrive.maxReceiveCount),
    'redrive target': redrive?.deadLetter,
  };
}

/** An existing queue: its URL, ARN and shape (of the attributes `needed` names); `undefined` when there is none. */
export async function foundQueue(
  sqs: SQSClient,
  name: string,
  needed: Shape,
): Promise<{ url: string; arn: string; shape: Shape } | undefined> {
  let url: string;
  try {
    url = (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl!;
  } catch (error) {
    if ((error as Error).name === 'QueueDoesNotExist') return undefined;
    throw error;
  }
  const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  const redrive = Attributes.RedrivePolicy
    ? (JSON.parse(Attributes.RedrivePolicy) as { maxReceiveCount: number | string; deadLetterTargetArn: string })
    : undefined;
  const all: Record<string, string | undefined> = {
    ...Attributes,
    FifoQueue: Attributes.FifoQueue ?? 'false',
    'redrive maxReceiveCount': redrive ? String(redrive.maxReceiveCount) : undefined,
    'redrive target': redrive?.deadLetterTargetArn.slice(redrive.deadLetterTargetArn.lastIndexOf(':') + 1),
  };
  const shape = Object.fromEntries(Object.keys(needed).map((k) => [k, all[k]]));
  return { url, arn: Attributes.QueueArn!, shape };
}
