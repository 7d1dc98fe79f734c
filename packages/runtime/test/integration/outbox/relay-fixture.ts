import { randomUUID } from 'node:crypto';
import { CreateEventBusCommand, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, createEventBridge, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  BRIDGE_EVENT_SOURCE_PREFIX,
  consumerGroup,
  eventIdOf,
  OUTBOX_EVENT_ID_PROPERTY,
  type OutboxItem,
  type RelayTargets,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { RelayReport } from '@rocketmq-lambda/runtime/outbox/index.ts';
import { ROCKETMQ_EVENT_TYPE } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { LocalSigningKey } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { createOutboxTable, localRelay, pendingOutboxItem } from '@rocketmq-lambda/tools/testing/outbox-stream.ts';
import { readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';

export const GROUP = consumerGroup('point-consumer-group');
/** Topics of the fixture's targets: one per kind, and one no target serves. */
export const TOPIC = { sqs: 'POINTS_TOPIC', eventbridge: 'BUS_TOPIC', rocketmq: 'LEGACY_TOPIC', none: 'NOWHERE_TOPIC' };
export const TAG = 'POINTS_AWARDED';

/** A message received from a queue with its FIFO attributes. */
export interface Received {
  readonly body: string;
  readonly messageGroupId: string | undefined;
  readonly deduplicationId: string | undefined;
}

/**
 * One publishing group's relay on the emulator, with every resource its own: the outbox table (its
 * stream NEW_IMAGE); for the sqs topic three subscribing queues (one FIFO, one on another tag); a
 * queue that refuses messages over 1 KiB (SMALL_TOPIC); a bus whose rule feeds a queue; the bridge's
 * outbound queue; the relay's DLQ. The relay handler is built as deployed, signing with a key the
 * fixture holds, and is fed by the stream poller.
 */
export async function relayStage(endpoint: string) {
  const aws = emulatorConfig(endpoint);
  const id = `relay-${randomUUID().slice(0, 8)}`;
  const dynamoDb = createDynamoDb(aws);
  const sqs = createSqs(aws);
  const eventBridge = createEventBridge(aws);
  const tableName = `${id}-outbox`;
  const streamClients = await createOutboxTable(endpoint, tableName);
  const queue = async (name: string, attributes: Record<string, string> = {}) =>
    (await sqs.send(new CreateQueueCommand({ QueueName: `${id}-${name}`, Attributes: attributes }))).QueueUrl!;
  const queues = {
    notify: await queue('notify'),
    orderly: await queue('orderly.fifo', { FifoQueue: 'true' }),
    small: await queue('small', { MaximumMessageSize: '1024' }),
    bus: await queue('bus'),
    outbound: await queue('outbound'),
    deadLetters: await queue('outbox-dlq'),
  };
  await routeBusTo(eventBridge, sqs, id, queues.bus);
  const targets: RelayTargets = {
    [TOPIC.sqs]: {
      kind: 'sqs',
      queues: [
        { group: 'notification-group', url: queues.notify, tagExpression: TAG },
        { group: 'orderly-group', url: queues.orderly, tagExpression: `${TAG} || OTHER` },
        { group: 'other-tag-group', url: queues.small, tagExpression: 'OTHER' },
      ],
    },
    SMALL_TOPIC: { kind: 'sqs', queues: [{ group: 'small-group', url: queues.small, tagExpression: '*' }] },
    [TOPIC.eventbridge]: { kind: 'eventbridge', eventBusName: id },
    [TOPIC.rocketmq]: { kind: 'rocketmq', queueUrl: queues.outbound },
  };
  const signing = new LocalSigningKey();
  const reports: RelayReport[] = [];
  const poller = await localRelay(streamClients, {
    definition: GROUP,
    aws,
    tableName,
    targets,
    deadLetterQueueUrl: queues.deadLetters,
    signingKeys: signing.ring,
    clients: { dynamoDb, sqs, eventBridge },
    onReport: (report) => reports.push(report),
  });
  return {
    id,
    tableName,
    queues,
    signing,
    reports,
    poller,
    dynamoDb,
    sqs,
    /** Writes an item as a consumer's commit would (PENDING unless told). */
    async commit(item: OutboxItem): Promise<OutboxItem> {
      await dynamoDb.send(new PutCommand({ TableName: tableName, Item: item }));
      return item;
    },
    async itemOf(eventId: string): Promise<OutboxItem | undefined> {
      const { Item } = await dynamoDb.send(
        new GetCommand({ TableName: tableName, Key: { eventId }, ConsistentRead: true }),
      );
      return Item as OutboxItem | undefined;
    },
    /** `ops outbox redrive`'s update: FAILED → PENDING, `redriveCount` + 1. */
    async redrive(eventId: string): Promise<void> {
      await dynamoDb.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { eventId },
          UpdateExpression: 'SET #s = :pending, redriveCount = if_not_exists(redriveCount, :zero) + :one',
          ConditionExpression: '#s = :failed',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':pending': 'PENDING', ':failed': 'FAILED', ':zero': 0, ':one': 1 },
        }),
      );
    },
    /** Every message of a queue, with its FIFO group and deduplication id. */
    async receive(queueUrl: string): Promise<Received[]> {
      return (await readAllMessages(sqs, queueUrl)).map((m) => ({
        body: m.body,
        messageGroupId: m.systemAttributes.MessageGroupId,
        deduplicationId: m.systemAttributes.MessageDeduplicationId,
      }));
    },
  };
}

/** An outbox item as the points consumer writes one, committed a second ago, with a user property of its business. */
export function outboxItem(businessKey: string, fields: Partial<OutboxItem> & { index?: number } = {}): OutboxItem {
  const eventId = eventIdOf(GROUP.group, businessKey, fields.index ?? 0);
  return pendingOutboxItem(GROUP.group, businessKey, {
    committedAt: Date.now() - 1_000,
    userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId, origin: 'relay-test' },
    ...fields,
  });
}

async function routeBusTo(
  eventBridge: ReturnType<typeof createEventBridge>,
  sqs: SQSClient,
  bus: string,
  queueUrl: string,
): Promise<void> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  await eventBridge.send(new CreateEventBusCommand({ Name: bus }));
  await eventBridge.send(
    new PutRuleCommand({
      Name: bus,
      EventBusName: bus,
      // As the groups' rules match: any bridge's (or relay's) source, the envelope's type, the topic.
      EventPattern: JSON.stringify({
        source: [{ prefix: BRIDGE_EVENT_SOURCE_PREFIX }],
        'detail-type': [ROCKETMQ_EVENT_TYPE],
        detail: { data: { topic: [TOPIC.eventbridge] } },
      }),
    }),
  );
  await eventBridge.send(
    new PutTargetsCommand({ Rule: bus, EventBusName: bus, Targets: [{ Id: 'q', Arn: Attributes!.QueueArn! }] }),
  );
}
