import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { AwsConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  type ConsumerGroupDefinition,
  eventIdOf,
  OUTBOX_EVENT_ID_PROPERTY,
  OUTBOX_TABLE,
  type OutboxItem,
  type RelayTargets,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { createRelayHandler, type RelayConfig, type RelayReport } from '@rocketmq-lambda/runtime/outbox/index.ts';
import type { SigningKeyRing } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { StreamPoller, type StreamPollerOptions } from '../local/stream-poller.ts';

/**
 * A publishing group's outbox table on the emulator, as the CDK app makes it (`OUTBOX_TABLE`: key
 * `eventId`, stream NEW_IMAGE), and the plain clients the stream poller reads it with.
 */
export async function createOutboxTable(endpoint: string, tableName: string) {
  const { dynamoDb, streams } = outboxStreamClients(endpoint);
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [{ AttributeName: OUTBOX_TABLE.partitionKey, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: OUTBOX_TABLE.partitionKey, AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: OUTBOX_TABLE.streamView },
    }),
  );
  return { dynamoDb, streams };
}

/** The plain clients the stream poller reads an outbox table's stream with (one `provisionLocal` made, say). */
export function outboxStreamClients(endpoint: string) {
  const config = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  return { dynamoDb: new DynamoDBClient(config), streams: new DynamoDBStreamsClient(config) };
}

/** The production relay handler of a group on a local outbox table, fed by the stream poller. */
export interface LocalRelayOptions {
  readonly definition: ConsumerGroupDefinition;
  readonly aws: AwsConfig;
  readonly tableName: string;
  readonly targets: RelayTargets;
  readonly deadLetterQueueUrl: string;
  readonly signingKeys: SigningKeyRing;
  readonly clients: Required<Pick<RelayConfig, 'dynamoDb' | 'sqs' | 'eventBridge'>>;
  readonly onReport: (report: RelayReport) => void;
  readonly batchSize?: number;
  /** Sees each invocation before the handler (the bench counts them). */
  readonly onInvoke?: () => void;
  /**
   * Asked before each invocation: true puts a new relay instance in place of the last, as Lambda
   * replaces one that died; the new one remembers nothing the last sent. The stream's checkpoint stays.
   */
  readonly restart?: () => boolean;
  /** Hands a batch once more from its first record (`StreamPollerOptions.redeliver`). */
  readonly redeliver?: () => boolean;
}

export async function localRelay(
  streamClients: Pick<StreamPollerOptions, 'dynamoDb' | 'streams'>,
  options: LocalRelayOptions,
): Promise<StreamPoller> {
  const instance = () =>
    createRelayHandler({
      ...options.clients,
      definition: options.definition,
      aws: options.aws,
      tableName: options.tableName,
      targets: options.targets,
      deadLetterQueueUrl: options.deadLetterQueueUrl,
      signingSecret: 'held-in-memory',
      signingKeys: options.signingKeys,
      onReport: options.onReport,
    });
  let handler = instance();
  return StreamPoller.open({
    ...streamClients,
    tableName: options.tableName,
    functionName: `${options.tableName}-relay`,
    ...(options.batchSize ? { batchSize: options.batchSize } : {}),
    ...(options.redeliver ? { redeliver: options.redeliver } : {}),
    handler: (event, context) => {
      if (options.restart?.()) handler = instance();
      options.onInvoke?.();
      return handler(event, context);
    },
  });
}

/**
 * A PENDING outbox item as a publishing consumer commits one (the event id derived from the group, the
 * business key and the index), committed now unless told.
 */
export function pendingOutboxItem(
  group: string,
  businessKey: string,
  fields: Partial<OutboxItem> & { index?: number } = {},
): OutboxItem {
  const index = fields.index ?? 0;
  const eventId = eventIdOf(group, businessKey, index);
  const committedAt = fields.committedAt ?? Date.now();
  return {
    eventId,
    group,
    businessKey,
    index,
    sourceMsgId: eventIdOf('source', businessKey, index),
    topic: 'POINTS_TOPIC',
    tag: 'POINTS_AWARDED',
    keys: [eventId, businessKey],
    body: JSON.stringify({ orderNo: businessKey, userId: 'U-88372', points: 10 }),
    userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId },
    target: 'sqs',
    status: 'PENDING',
    committedAt,
    expiresAt: Math.floor(committedAt / 1000) + 86_400,
    ...fields,
  };
}
