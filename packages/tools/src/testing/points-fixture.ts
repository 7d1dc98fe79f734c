import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  type POINTS,
  POINTS_GROUP,
  consumer as pointsConsumer,
} from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import type { LedgerEntry } from '@rocketmq-lambda/consumers/points/index.ts';
import { createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { ConsumerConfig, ConsumerModule, RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import {
  type EnvelopeFields,
  MsgIdGenerator,
  RetrySchedule,
  writeEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { inject } from 'vitest';
import { lambdaContext } from '../local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '../local/local-signing-key.ts';
import { type LocalResources, provisionLocal } from '../local/provision.ts';
import { pollOnce } from '../local/sqs-poller.ts';
import { sqsRecord as localSqsRecord } from '../local/sqs-record.ts';
import { readAllMessages } from './queue-reading.ts';

export interface OrderFields {
  orderNo: string;
  userId: string | number;
  points: number;
  paidAt?: string;
}

const ids = new MsgIdGenerator();
export const newMsgId = () => ids.next();

/** The bridge's envelope of an `ORDER_TOPIC` message, signed with the process's key as the fixtures' consumers expect. */
export function orderEnvelope(order: Record<string, unknown>, fields: Partial<EnvelopeFields> = {}): string {
  return PROCESS_SIGNING_KEY.sign(unsignedOrderEnvelope(order, fields));
}

/** The same envelope without a signature: what a sender other than the bridge puts on a queue. */
export function unsignedOrderEnvelope(order: Record<string, unknown>, fields: Partial<EnvelopeFields> = {}): string {
  return writeEnvelope({
    topic: 'ORDER_TOPIC',
    msgId: fields.msgId ?? newMsgId(),
    tags: 'PAID',
    keys: typeof order.orderNo === 'string' ? [order.orderNo] : [],
    body: JSON.stringify(order),
    ...fields,
  });
}

let sqsIds = 0;
/** An SQS record as Lambda would deliver it (for tests that invoke the handler directly). */
export function sqsRecord(body: string, queueArn: string, receiveCount = 1): SQSRecord {
  sqsIds++;
  return localSqsRecord(body, queueArn, { messageId: `m-${sqsIds}-${randomUUID().slice(0, 8)}`, receiveCount });
}

/** The record as Lambda delivers it from a FIFO queue: its message group in the attributes. */
export function inMessageGroup(record: SQSRecord, messageGroupId: string): SQSRecord {
  return { ...record, attributes: { ...record.attributes, MessageGroupId: messageGroupId } };
}

/** Delays of zero: a failed record is visible again at once, so retry paths run in milliseconds. */
export const IMMEDIATE_RETRIES = new RetrySchedule(Array.from({ length: 16 }, () => 0));

/**
 * A points consumer wired to fresh tables and queues on the shared emulator (its outbox table
 * included); it verifies with the process's key (`orderEnvelope` signs with it) unless the test
 * gives its own `envelopeKeys`. `module`: another consumer of the points entry (a test's business).
 */
export async function pointsFixture(
  overrides: Partial<ConsumerConfig<typeof POINTS>> = {},
  module: Pick<ConsumerModule<typeof POINTS>, 'create'> = pointsConsumer,
) {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const resources: LocalResources = await provisionLocal(endpoint, `t${randomUUID().slice(0, 8)}`, {
    groups: [POINTS_GROUP],
  });
  const queue = resources.queues[POINTS_GROUP]!;
  const dynamoDb = createDynamoDb(aws);
  const sqs = createSqs(aws);
  const reports: RecordReport[] = [];
  const handler = module.create({
    aws,
    tables: resources.tables,
    outboxTable: resources.outboxTables[POINTS_GROUP],
    deadLetterQueueUrl: queue.deadLetter.url,
    schedule: IMMEDIATE_RETRIES,
    dynamoDb,
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
    onReport: (r) => reports.push(r),
    ...overrides,
  });

  const fixture = {
    resources,
    handler,
    reports,
    dynamoDb,
    sqs,
    /** Invokes the handler directly with records built from the bodies. */
    invoke: (bodies: Array<string | SQSRecord>) =>
      handler(
        { Records: bodies.map((b) => (typeof b === 'string' ? sqsRecord(b, queue.source.arn) : b)) } satisfies SQSEvent,
        lambdaContext('points-consumer', 30_000),
      ),
    send: async (...bodies: string[]) => {
      for (const body of bodies)
        await sqs.send(new SendMessageCommand({ QueueUrl: queue.source.url, MessageBody: body }));
    },
    /** Polls the source queue like Lambda until it is empty. */
    drain: (maxPolls = 200) => drainQueue({ sqs, queue: queue.source, handler, maxPolls }),
    ...pointsTables(dynamoDb, resources.tables),
    deadLetters: () => readAllMessages(sqs, queue.deadLetter.url),
    outcomes: () => reports.map((r) => r.settlement.outcome),
  };
  return fixture;
}

/** Polls a source queue like Lambda, handing each batch to the handler, until a poll finds it empty. */
async function drainQueue({
  sqs,
  queue,
  handler,
  maxPolls,
}: {
  sqs: ReturnType<typeof createSqs>;
  queue: { url: string; arn: string };
  handler: Parameters<typeof pollOnce>[0]['handler'];
  maxPolls: number;
}): Promise<void> {
  for (let i = 0; i < maxPolls; i++) {
    const r = await pollOnce({
      sqs,
      queueUrl: queue.url,
      queueArn: queue.arn,
      handler,
      functionName: 'points-consumer',
    });
    if (r.received === 0) return;
  }
  throw new Error('queue did not drain');
}

/** What the points tables hold, read consistently: a user's ledger and balance, and the accounts off their ledger. */
function pointsTables(dynamoDb: ReturnType<typeof createDynamoDb>, tables: LocalResources['tables']) {
  return {
    ledger: async (userId: string): Promise<LedgerEntry[]> =>
      ((
        await dynamoDb.send(
          new QueryCommand({
            TableName: tables.ledger,
            KeyConditionExpression: 'userId = :u',
            ExpressionAttributeValues: { ':u': userId },
            ConsistentRead: true,
          }),
        )
      ).Items ?? []) as LedgerEntry[],
    balance: async (userId: string): Promise<number> =>
      ((await dynamoDb.send(new GetCommand({ TableName: tables.accounts, Key: { userId }, ConsistentRead: true }))).Item
        ?.balance as number | undefined) ?? 0,
    /** Every account balance equals the sum of its ledger; returns the users that differ. */
    ledgerMismatches: async (): Promise<string[]> => {
      const ledger = (await dynamoDb.send(new ScanCommand({ TableName: tables.ledger }))).Items ?? [];
      const accounts = (await dynamoDb.send(new ScanCommand({ TableName: tables.accounts }))).Items ?? [];
      const sums = new Map<string, number>();
      for (const e of ledger) sums.set(e.userId, (sums.get(e.userId) ?? 0) + e.points);
      const balances = new Map(accounts.map((a) => [a.userId as string, a.balance as number]));
      const users = new Set([...sums.keys(), ...balances.keys()]);
      return [...users].filter((u) => (sums.get(u) ?? 0) !== (balances.get(u) ?? 0));
    },
  };
}
