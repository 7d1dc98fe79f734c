import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { OUTBOUND_REFUSAL_KIND, OutboundRefusalReason } from '@rocketmq-lambda/bridge/internal.ts';
import { createEventBridge, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  eventIdOf,
  OUTBOX_EVENT_ID_PROPERTY,
  outboundDeadLetterQueueName,
  outboundQueueName,
  outboxDeadLetterQueueName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { OUTBOX_NOTICE_KIND, OutboxRelay } from '@rocketmq-lambda/runtime/outbox/index.ts';
import {
  DEAD_LETTER_KIND_ATTRIBUTE,
  NOTICE_REASON_ATTRIBUTE,
  writeEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { LocalSigningKey, PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { type StreamHandler, StreamPoller } from '@rocketmq-lambda/tools/local/stream-poller.ts';
import { pendingOutboxItem } from '@rocketmq-lambda/tools/testing/outbox-stream.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { describe, expect, it } from 'vitest';
import {
  OUTBOUND_REFUSAL_KIND as OPS_OUTBOUND_REFUSAL_KIND,
  OutboundRefusalReason as OpsOutboundRefusalReason,
  OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE,
} from '../../../src/operations/index.ts';
import { ops, type PointsFixture } from './operations-fixture.ts';

const PUBLISHER = 'point-consumer-group';
const GROUP = ['--group', PUBLISHER];

type Listed = { messageId: string; kind: string; reasonText: string; outbox?: Record<string, unknown> };

/**
 * The relay DLQ as a deployed relay leaves it: the real relay's notice for an item whose topic has no
 * target (marked FAILED), and the on-failure record Lambda's event source mapping writes for the stream
 * record of an item it gave up on, in Lambda's shape (DDBStreamBatchInfo: the emulator has no mapping), with
 * the shard and sequence number the stream gave that record.
 */
async function relayDeadLetters(f: PointsFixture) {
  const endpoint = f.resources.endpoint;
  const table = f.resources.outboxTables[PUBLISHER]!;
  const dlq = (
    await f.sqs.send(new CreateQueueCommand({ QueueName: outboxDeadLetterQueueName(f.resources.prefix, PUBLISHER) }))
  ).QueueUrl!;
  const unsendable = pendingOutboxItem(PUBLISHER, 'SO-NOWHERE');
  const lost = pendingOutboxItem(PUBLISHER, 'SO-LOST', { index: 0 });
  const relay = new OutboxRelay({
    group: PUBLISHER,
    tableName: table,
    targets: {},
    deadLetterQueueUrl: dlq,
    signingKeys: PROCESS_SIGNING_KEY.ring,
    dynamoDb: f.dynamoDb,
    sqs: f.sqs,
    eventBridge: createEventBridge(emulatorConfig(endpoint)),
  });
  // The relay reads the first record; the mapping gives up on the second (past its maxRecordAge) without invoking it.
  let handler: StreamHandler = (event) => relay.relay(event);
  const clients = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'l', secretAccessKey: 'l' } };
  const poller = await StreamPoller.open({
    dynamoDb: new DynamoDBClient(clients),
    streams: new DynamoDBStreamsClient(clients),
    tableName: table,
    functionName: 'points-consumer-outbox-relay',
    handler: (event, context) => handler(event, context),
  });
  await f.dynamoDb.send(new PutCommand({ TableName: table, Item: unsendable }));
  const relayed = await poller.pollOnce();
  expect(relayed.received).toBe(1);
  handler = async () => ({ batchItemFailures: [] });
  await f.dynamoDb.send(new PutCommand({ TableName: table, Item: lost }));
  const record = (await poller.pollOnce()).records.find((r) => r.dynamodb?.NewImage?.eventId?.S === lost.eventId)!;
  const batch = {
    shardId: 'shardId-00000001700000000000-00000001',
    startSequenceNumber: record.dynamodb!.SequenceNumber!,
    endSequenceNumber: record.dynamodb!.SequenceNumber!,
    approximateArrivalOfFirstRecord: '2026-12-04T12:00:00Z',
    approximateArrivalOfLastRecord: '2026-12-04T12:00:00Z',
    batchSize: 1,
    streamArn: record.eventSourceARN,
  };
  await f.sqs.send(
    new SendMessageCommand({
      QueueUrl: dlq,
      MessageBody: JSON.stringify({
        requestContext: {
          requestId: 'c2b7cd0b-0d4e-4b59-9a0b-2c7c58a8a1f3',
          functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:demo-points-consumer-outbox-relay',
          condition: 'RecordAgeExceeded',
          approximateInvokeCount: 1200,
        },
        responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
        version: '1.0',
        timestamp: '2026-12-05T11:00:00.000Z',
        DDBStreamBatchInfo: batch,
      }),
    }),
  );
  return { dlq, unsendable, lost, batch };
}

describe('ops dlq on the relay DLQ (emulator)', () => {
  it('lists the relay’s notice with its reason, event id, group and topic, and the mapping’s record as records the relay gave up on', async () => {
    const f = await pointsFixture();
    const { unsendable, batch } = await relayDeadLetters(f);
    const listed = await ops(f, ['dlq', 'list', ...GROUP, '--outbox', '--json']);
    const text = await ops(f, ['dlq', 'list', ...GROUP, '--outbox']);

    expect(listed.code).toBe(0);
    const letters: Listed[] = listed.json().messages;
    const notice = letters.find((l) => l.kind === 'outbox-notice')!;
    expect(notice.outbox).toMatchObject({
      kind: 'outbox-notice',
      notice: { kind: OUTBOX_NOTICE_KIND, eventId: unsendable.eventId, group: PUBLISHER, topic: 'POINTS_TOPIC' },
    });
    expect(notice.reasonText).toMatch(
      new RegExp(
        `^NO_RELAY_TARGET: .+ \\(event ${unsendable.eventId}, ${PUBLISHER}, POINTS_TOPIC:POINTS_AWARDED → sqs\\)$`,
      ),
    );
    const gaveUp = letters.find((l) => l.kind === 'stream-failure')!;
    expect(gaveUp.outbox).toMatchObject({
      kind: 'stream-failure',
      batch: { shardId: batch.shardId, condition: 'RecordAgeExceeded' },
    });
    expect(gaveUp.reasonText).toBe(
      `records the relay gave up on (RecordAgeExceeded): 1 stream record(s) of shard ${batch.shardId}, sequence ` +
        `${batch.startSequenceNumber}–${batch.endSequenceNumber}, first written 2026-12-04T12:00:00Z`,
    );
    expect(letters).toHaveLength(2);
    expect(text.stdout).toContain(`Dead letters in ${outboxDeadLetterQueueName(f.resources.prefix, PUBLISHER)}: 2`);
    expect(text.stdout).toMatch(/outbox-notice\s+NO_RELAY_TARGET/);
    expect(text.stdout).toMatch(/stream-failure\s+records the relay gave up on/);
  });

  it('redrive sends neither anywhere: each is held back with the ops outbox command that does the work', async () => {
    const f = await pointsFixture();
    const { dlq, unsendable } = await relayDeadLetters(f);
    const redriven = await ops(f, ['dlq', 'redrive', ...GROUP, '--outbox', '--all', '--json']);
    const text = await ops(f, ['dlq', 'redrive', ...GROUP, '--outbox', '--all']);

    expect(redriven.code).toBe(1);
    const report = redriven.json();
    expect(report.selected).toEqual([]);
    expect(report.moved).toBe(0);
    const whys: string[] = report.heldBack.map((h: { why: string }) => h.why);
    expect(whys).toHaveLength(2);
    expect(whys).toContainEqual(
      expect.stringContaining(`ops outbox redrive --group ${PUBLISHER} --event-id ${unsendable.eventId}`),
    );
    expect(whys).toContainEqual(expect.stringContaining('ops outbox redrive --stale'));
    expect(text.stdout).toContain('Held back 2 of them; they stay in the DLQ');
    expect(await readAllMessages(f.sqs, dlq)).toHaveLength(2);
  });
});

/**
 * The bridge's outbound queue and its DLQ as the stage has them (the queue redrives into the DLQ), and two
 * refusals as the bridge's outbound route writes them: a relayed envelope signed with a key the bridge did not
 * hold (UNAUTHENTICATED_MESSAGE) and a body it could not parse (INVALID_ENVELOPE), each with the route's attributes.
 */
async function outboundDeadLetters(f: PointsFixture) {
  const prefix = f.resources.prefix;
  const create = async (name: string, attributes: Record<string, string> = {}) =>
    (await f.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
  const dlq = await create(outboundDeadLetterQueueName(prefix));
  const { Attributes } = await f.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['QueueArn'] }),
  );
  const outbound = await create(outboundQueueName(prefix), {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: 1000 }),
  });
  const eventId = eventIdOf(PUBLISHER, 'SO-OUT', 0);
  const unknownKey = new LocalSigningKey().sign(
    writeEnvelope({
      topic: 'POINTS_TOPIC',
      tags: 'POINTS_AWARDED',
      msgId: eventId,
      keys: [eventId, 'SO-OUT'],
      body: JSON.stringify({ orderNo: 'SO-OUT', userId: '88372', points: 300 }),
      userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId },
      bornTimestamp: Date.now() - 60_000,
      storeTimestamp: Date.now() - 60_000,
    }),
  );
  const refuse = (body: string, reason: string, detail: string) =>
    f.sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq,
        MessageBody: body,
        MessageAttributes: {
          [DEAD_LETTER_KIND_ATTRIBUTE]: { DataType: 'String', StringValue: OUTBOUND_REFUSAL_KIND },
          [NOTICE_REASON_ATTRIBUTE]: { DataType: 'String', StringValue: reason },
          [OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE]: { DataType: 'String', StringValue: detail },
        },
      }),
    );
  await refuse(unknownKey, OutboundRefusalReason.UNAUTHENTICATED, 'signed with key k-2 the ring does not hold');
  await refuse('{"relayed":"by a newer relay"}', OutboundRefusalReason.INVALID_ENVELOPE, 'missing field data');
  return { dlq, outbound, eventId, unknownKey };
}

describe('ops dlq on the bridge’s outbound DLQ (emulator)', () => {
  it('names the bridge’s kind and reasons as the bridge does', () => {
    expect(OPS_OUTBOUND_REFUSAL_KIND).toBe(OUTBOUND_REFUSAL_KIND);
    expect(OpsOutboundRefusalReason).toEqual(OutboundRefusalReason);
  });

  it('lists each refusal with its reason and event id, sends the unauthenticated body back unchanged, and an unreadable one only when named', async () => {
    const f = await pointsFixture();
    const { dlq, outbound, eventId, unknownKey } = await outboundDeadLetters(f);
    const listed: Listed[] = (await ops(f, ['dlq', 'list', '--outbound', '--json'])).json().messages;
    expect(listed.map((l) => [l.kind, l.reasonText]).sort()).toEqual([
      ['outbound-refusal', 'INVALID_ENVELOPE: missing field data'],
      ['outbound-refusal', `UNAUTHENTICATED_MESSAGE: signed with key k-2 the ring does not hold (event ${eventId})`],
    ]);

    const dryRun = await ops(f, ['dlq', 'redrive', '--outbound', '--all', '--dry-run', '--json']);
    expect(dryRun.json().selected.map((l: Listed) => l.reasonText)).toEqual([
      expect.stringContaining('UNAUTHENTICATED_MESSAGE'),
    ]);
    expect(dryRun.json().heldBack[0].why).toContain('name --reason INVALID_ENVELOPE');
    const applied = await ops(f, ['dlq', 'redrive', '--outbound', '--all', '--yes', '--json']);
    expect(applied.code).toBe(1); // the INVALID_ENVELOPE one is held back
    expect(applied.json().moved).toBe(1);
    const [back] = await readAllMessages(f.sqs, outbound);
    expect(back!.body).toBe(unknownKey);
    expect(Object.keys(back!.attributes)).not.toContain(NOTICE_REASON_ATTRIBUTE);
    expect(Object.keys(back!.attributes)).not.toContain(DEAD_LETTER_KIND_ATTRIBUTE);

    const named = await ops(f, ['dlq', 'redrive', '--outbound', '--reason', 'INVALID_ENVELOPE', '--yes', '--json']);
    expect(named.code).toBe(0);
    expect(named.json().moved).toBe(1);
    expect(await readAllMessages(f.sqs, dlq)).toEqual([]);
  });
});
