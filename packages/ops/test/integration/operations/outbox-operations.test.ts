import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { consumer as notificationConsumer } from '@rocketmq-lambda/consumers/functions/notification-consumer/handler.ts';
import { createCloudWatchLogs, createEventBridge, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  eventIdOf,
  functionLogGroupName,
  OUTBOX_EVENT_ID_PROPERTY,
  type OutboxItem,
  outboxRedriveHorizonOf,
  outboxTableName,
  RELAY_MAX_RECORD_AGE_SECONDS,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { OutboxRelay, type RelayReport } from '@rocketmq-lambda/runtime/outbox/index.ts';
import { parseEnvelope, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import {
  FunctionLogShipper,
  lambdaLogStreamName,
  ShippingLogger,
} from '@rocketmq-lambda/tools/local/function-log-shipping.ts';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { LocalNotificationService } from '@rocketmq-lambda/tools/local/local-notification-service.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { type StreamHandler, StreamPoller } from '@rocketmq-lambda/tools/local/stream-poller.ts';
import {
  IMMEDIATE_RETRIES,
  newMsgId,
  orderEnvelope,
  pointsFixture,
  sqsRecord,
} from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ops, type PointsFixture } from './operations-fixture.ts';

const PUBLISHER = 'point-consumer-group';
const HOUR_MS = 3_600_000;
const NOW = Date.parse('2026-12-05T12:00:00Z');
const now = () => new Date(NOW);
const HORIZON_S = outboxRedriveHorizonOf(
  (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).find((g) => g.group === PUBLISHER)!,
)!;

/** The publishing group's outbox table, as the fixture provisions it from the catalogue: PK eventId, stream of new images. */
async function outboxTable(f: PointsFixture): Promise<string> {
  const table = f.resources.outboxTables[PUBLISHER]!;
  expect(table).toBe(outboxTableName(f.resources.prefix, PUBLISHER));
  return table;
}

function outboxItem(orderNo: string, fields: Partial<OutboxItem>): OutboxItem {
  const eventId = eventIdOf(PUBLISHER, orderNo, 0);
  return {
    eventId,
    group: PUBLISHER,
    businessKey: orderNo,
    index: 0,
    sourceMsgId: newMsgId(),
    topic: 'POINTS_TOPIC',
    tag: 'POINTS_AWARDED',
    keys: [eventId, orderNo],
    body: JSON.stringify({ orderNo, userId: '88372', points: 300 }),
    userProperties: { [OUTBOX_EVENT_ID_PROPERTY]: eventId },
    target: 'sqs',
    status: 'PENDING',
    committedAt: NOW - HOUR_MS,
    expiresAt: Math.floor(NOW / 1000) + 40 * 86_400,
    ...fields,
  };
}

/** An outbox holding one item of each kind `ops outbox` tells apart. */
async function seededOutbox() {
  const f = await pointsFixture();
  const table = await outboxTable(f);
  const items = {
    pending: outboxItem('SO-PENDING', { status: 'PENDING', committedAt: NOW - 90_000 }),
    relayed: outboxItem('SO-RELAYED', { status: 'RELAYED', relayedAt: NOW - HOUR_MS + 40 }),
    failed: outboxItem('SO-FAILED', { status: 'FAILED', failureReason: 'target refused: message too large' }),
    old: outboxItem('SO-OLD', {
      status: 'FAILED',
      failureReason: 'queue does not exist',
      committedAt: NOW - (HORIZON_S + 86_400) * 1000,
    }),
  };
  for (const item of Object.values(items)) await f.dynamoDb.send(new PutCommand({ TableName: table, Item: item }));
  const read = async (item: OutboxItem) =>
    (await f.dynamoDb.send(new GetCommand({ TableName: table, Key: { eventId: item.eventId }, ConsistentRead: true })))
      .Item as OutboxItem;
  return { f, table, items, read, run: (argv: string[]) => ops(f, ['outbox', ...argv], { now }) };
}

describe('ops outbox (emulator)', () => {
  it('lists the PENDING and FAILED items, oldest first, with age, target, topic:tag, reason, event id and business key', async () => {
    const { table, items, run } = await seededOutbox();
    const json = await run(['list', '--json']);
    const text = await run(['list']);
    expect(json.code).toBe(0);
    const listed = json.json();
    expect(listed).toMatchObject({ group: PUBLISHER, table, statuses: ['PENDING', 'FAILED'], count: 3 });
    expect(listed.items.map((i: { businessKey: string }) => i.businessKey)).toEqual([
      'SO-OLD',
      'SO-FAILED',
      'SO-PENDING',
    ]);
    expect(listed.items[1]).toEqual({
      eventId: items.failed.eventId,
      status: 'FAILED',
      ageSeconds: 3600,
      committedAt: '2026-12-05T11:00:00.000Z',
      target: 'sqs',
      topic: 'POINTS_TOPIC',
      tag: 'POINTS_AWARDED',
      businessKey: 'SO-FAILED',
      sourceMsgId: items.failed.sourceMsgId,
      reason: 'target refused: message too large',
      redriveCount: 0,
    });
    expect(text.stdout).toContain(`PENDING and FAILED items in ${table} (${PUBLISHER}): 3`);
    expect(text.stdout).toMatch(
      /60m\s+FAILED\s+sqs\s+POINTS_TOPIC:POINTS_AWARDED\s+[0-9A-F]{32}\s+SO-FAILED\s+0\s+target refused/,
    );
    expect(text.stdout).not.toContain('SO-RELAYED');
    expect((await run(['list', '--status', 'RELAYED', '--json'])).json().items).toHaveLength(1);
  });

  it('redrives nothing without --apply: a dry run that names what it would set back and what it refuses', async () => {
    const { items, read, run } = await seededOutbox();
    const dryRun = await run(['redrive', '--all', '--json']);
    expect(dryRun.code).toBe(1);
    const report = dryRun.json();
    expect(report.dryRun).toBe(true);
    expect(report.redriven.map((i: { eventId: string }) => i.eventId)).toEqual([items.failed.eventId]);
    expect(report.refused).toEqual([
      { eventId: items.old.eventId, reason: 'PAST_REDRIVE_HORIZON', why: expect.stringContaining(`${HORIZON_S}s ago`) },
    ]);
    expect((await read(items.failed)).status).toBe('FAILED');
    expect((await run(['redrive', '--all'])).stdout).toContain('Dry run: nothing was written');
  });

  it('with --apply sets a FAILED item inside the horizon back to PENDING (redriveCount + 1) and refuses the one past it', async () => {
    const { f, table, items, read, run } = await seededOutbox();
    const unconfirmed = await run(['redrive', '--all', '--apply']);
    expect(unconfirmed.code).toBe(2);
    expect((await read(items.failed)).status).toBe('FAILED');
    const applied = await run(['redrive', '--all', '--apply', '--yes', '--json']);
    expect(applied.code).toBe(1);
    expect(applied.json().refused.map((r: { reason: string }) => r.reason)).toEqual(['PAST_REDRIVE_HORIZON']);
    expect(await read(items.failed)).toMatchObject({ status: 'PENDING', redriveCount: 1, redrivenAt: NOW });
    expect((await read(items.old)).status).toBe('FAILED');
    // Now PENDING, it is the relay's: a second redrive leaves it alone.
    await run(['redrive', '--all', '--apply', '--yes']);
    expect((await read(items.failed)).redriveCount).toBe(1);
    // The relay learns of the change from the table's stream of new images.
    const { Table } = await f.dynamoDb.send(new DescribeTableCommand({ TableName: table }));
    expect(Table?.StreamSpecification).toMatchObject({ StreamEnabled: true, StreamViewType: 'NEW_IMAGE' });
  });

  it('refuses by event id what is not FAILED (PENDING, RELAYED) or not there, and writes nothing', async () => {
    const { items, read, run } = await seededOutbox();
    const refused = await run([
      'redrive',
      ...['--event-id', items.pending.eventId, '--event-id', items.relayed.eventId, '--event-id', 'F'.repeat(32)],
      '--apply',
      '--yes',
      '--json',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.json().refused.map((r: { reason: string }) => r.reason)).toEqual([
      'NOT_FAILED',
      'NOT_FAILED',
      'NOT_FOUND',
    ]);
    expect(await read(items.pending)).toEqual(items.pending);
    expect(await read(items.relayed)).toEqual(items.relayed);
    expect((await run(['redrive'])).stderr).toContain('outbox redrive needs the items');
  });
});

/**
 * The relay's stream as the mapping reads it, on the seeded outbox: the first poll stands for the mapping
 * giving up (past its maxRecordAge it drops the records, leaving only their batch's position in the relay DLQ);
 * later polls hand what the stream holds next to the real relay, which sends to a subscriber queue of its own.
 */
async function relayThatGaveUp(f: PointsFixture, table: string) {
  const aws = emulatorConfig(f.resources.endpoint);
  const clients = {
    endpoint: f.resources.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  };
  const queue = async (name: string) =>
    (await f.sqs.send(new CreateQueueCommand({ QueueName: `${f.resources.prefix}-${name}` }))).QueueUrl!;
  const subscriber = await queue('stale-subscriber');
  const reports: RelayReport[] = [];
  const relay = new OutboxRelay({
    group: PUBLISHER,
    tableName: table,
    targets: {
      POINTS_TOPIC: {
        kind: 'sqs',
        queues: [{ group: 'notification-consumer-group', url: subscriber, tagExpression: 'POINTS_AWARDED' }],
      },
    },
    deadLetterQueueUrl: await queue('relay-dlq'),
    signingKeys: PROCESS_SIGNING_KEY.ring,
    dynamoDb: f.dynamoDb,
    sqs: f.sqs,
    eventBridge: createEventBridge(aws),
    onReport: (r) => reports.push(r),
  });
  let handler: StreamHandler = async () => ({ batchItemFailures: [] });
  const poller = await StreamPoller.open({
    dynamoDb: new DynamoDBClient(clients),
    streams: new DynamoDBStreamsClient(clients),
    tableName: table,
    functionName: 'points-consumer-outbox-relay',
    handler: (event, context) => handler(event, context),
  });
  const givenUp = await poller.pollOnce();
  handler = (event) => relay.relay(event);
  return { givenUp, poller, reports, subscriber };
}

describe('ops outbox redrive --stale (emulator)', () => {
  /** PENDING items: one the mapping gave up on, one still young, one redriven lately, one past the horizon. */
  async function staleOutbox() {
    const seeded = await seededOutbox();
    const gaveUpAt = NOW - (RELAY_MAX_RECORD_AGE_SECONDS + 3_600) * 1000;
    const stale = {
      lost: outboxItem('SO-LOST', { committedAt: gaveUpAt }),
      touched: outboxItem('SO-TOUCHED', { committedAt: gaveUpAt, redriveCount: 1, redrivenAt: NOW - HOUR_MS }),
      ancient: outboxItem('SO-ANCIENT', { committedAt: NOW - (HORIZON_S + 86_400) * 1000 }),
    };
    for (const item of Object.values(stale))
      await seeded.f.dynamoDb.send(new PutCommand({ TableName: seeded.table, Item: item }));
    return { ...seeded, stale };
  }

  it('a dry run names the PENDING items whose last stream record is older than the relay mapping gives up at', async () => {
    const { items, stale, read, run } = await staleOutbox();
    const dryRun = await run(['redrive', '--stale', '--json']);
    expect(dryRun.code).toBe(1);
    const report = dryRun.json();
    expect(report).toMatchObject({ dryRun: true, staleAfterSeconds: RELAY_MAX_RECORD_AGE_SECONDS });
    expect(report.redriven.map((i: { eventId: string }) => i.eventId)).toEqual([stale.lost.eventId]);
    expect(report.refused).toEqual([
      {
        eventId: stale.ancient.eventId,
        reason: 'PAST_REDRIVE_HORIZON',
        why: expect.stringContaining(`${HORIZON_S}s ago`),
      },
    ]);
    expect(await read(stale.lost)).toEqual(stale.lost);
    // A shorter threshold takes the younger PENDING items too (the mapping may still be retrying them): 90 s, and
    // one redriven an hour ago.
    const shorter = (await run(['redrive', '--pending-older-than', '1m', '--json'])).json();
    expect(shorter.redriven.map((i: { businessKey: string }) => i.businessKey).sort()).toEqual([
      'SO-LOST',
      'SO-PENDING',
      'SO-TOUCHED',
    ]);
    expect((await run(['redrive', '--stale'])).stdout).toContain(
      'Would write anew (PENDING, last stream record older than 23h; the relay sends each again)',
    );
    const both = await run(['redrive', '--stale', '--all']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('choose one of --event-id, --all and --stale');
    expect(await read(items.pending)).toEqual(items.pending);
  });

  it('with --apply writes the lost item anew, still PENDING: the stream hands it to the relay, which sends it once under its event id', async () => {
    const { f, table, stale, read, run } = await staleOutbox();
    const { givenUp, poller, reports, subscriber } = await relayThatGaveUp(f, table);
    expect(givenUp.received).toBe(7); // every INSERT, dropped by the mapping

    const applied = await run(['redrive', '--stale', '--apply', '--yes', '--json']);

    expect(applied.code).toBe(1); // the ancient one is refused
    expect(applied.json().refused.map((r: { eventId: string }) => r.eventId)).toEqual([stale.ancient.eventId]);
    expect(await read(stale.lost)).toEqual({ ...stale.lost, redriveCount: 1, redrivenAt: NOW });
    expect(await read(stale.touched)).toEqual(stale.touched);
    expect(await read(stale.ancient)).toEqual(stale.ancient);
    const next = await poller.pollOnce();
    expect(
      next.records.map((r) => [r.eventName, r.dynamodb?.NewImage?.eventId?.S, r.dynamodb?.NewImage?.status?.S]),
    ).toEqual([['MODIFY', stale.lost.eventId, 'PENDING']]);
    expect(reports.map((r) => [r.eventId, r.outcome])).toEqual([[stale.lost.eventId, 'relayed']]);
    const sent = await readAllMessages(f.sqs, subscriber);
    expect(sent.map((m) => parseEnvelope(m.body).msgId)).toEqual([stale.lost.eventId]);
    expect((await read(stale.lost)).status).toBe('RELAYED');
    // Written once: a second run finds nothing stale (it was relayed), and writes nothing.
    const again = (await run(['redrive', '--stale', '--apply', '--yes', '--json'])).json();
    expect(again.redriven).toEqual([]);
  });
});

const INCIDENT = { orderNo: 'SO202007051422310088', userId: '88372', points: 300 };

/**
 * The order across the hop: awarded by the real points consumer, its outbox item as the relay left it,
 * and the real notification consumer given the relayed event twice (the relay's copy and one a carrier
 * gave a new msgId), its log lines shipped to its function's log group as in Lambda.
 */
async function acrossTheHop() {
  const f = await pointsFixture();
  await f.invoke([orderEnvelope(INCIDENT)]);
  const table = await outboxTable(f);
  const item = outboxItem(INCIDENT.orderNo, { status: 'RELAYED', relayedAt: NOW - HOUR_MS + 120 });
  await f.dynamoDb.send(new PutCommand({ TableName: table, Item: item }));
  const service = await LocalNotificationService.start();
  onTestFinished(() => service.stop());
  const shipper = new FunctionLogShipper(
    createCloudWatchLogs(emulatorConfig(f.resources.endpoint)),
    functionLogGroupName(f.resources.prefix, 'notification-consumer'),
    lambdaLogStreamName(new Date(), 'b1b2c3d4e5f60718293a4b5c6d7e8f90'),
  );
  await shipper.open();
  const handler = notificationConsumer.create({
    aws: emulatorConfig(f.resources.endpoint),
    tables: f.resources.tables,
    deadLetterQueueUrl: f.resources.queues[PUBLISHER]!.deadLetter.url,
    schedule: IMMEDIATE_RETRIES,
    dynamoDb: f.dynamoDb,
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
    services: { 'notification-service': service.url },
    logger: ShippingLogger.create((line) => shipper.push(line), {
      serviceName: 'notification-consumer-group',
      logLevel: 'INFO',
      echo: false,
    }),
  });
  const relayed = (msgId: string) =>
    PROCESS_SIGNING_KEY.sign(
      writeEnvelope({
        topic: item.topic,
        tags: item.tag,
        msgId,
        keys: item.keys,
        body: item.body,
        userProperties: item.userProperties,
        bornTimestamp: item.committedAt,
        storeTimestamp: item.committedAt,
      }),
    );
  const arn = f.resources.queues[PUBLISHER]!.source.arn;
  const carrierMsgId = newMsgId();
  for (const msgId of [item.eventId, carrierMsgId])
    await handler({ Records: [sqsRecord(relayed(msgId), arn)] }, lambdaContext('notification-consumer', 30_000));
  await shipper.close();
  return { f, item, service, carrierMsgId };
}

type Hop = {
  group: string;
  events: Array<{
    eventId: string;
    status: string;
    committedAt: string;
    relayedAt: string;
    downstream: Array<{
      group: string;
      record: { status: string; firstMsgId: string; lastMsgId: string; result: string };
      lines: Array<{ msgId: string; outcome: string }>;
    }>;
  }>;
};

describe('ops trace across the outbox hop (emulator)', () => {
  it('follows the award to its event, the relay, and the notification group’s lease under the event id', async () => {
    const { f, item, service, carrierMsgId } = await acrossTheHop();
    const json = await ops(f, ['trace', INCIDENT.orderNo, '--group', PUBLISHER, '--user', INCIDENT.userId, '--json']);
    const text = await ops(f, ['trace', INCIDENT.orderNo, '--group', PUBLISHER]);
    const fromDownstream = await ops(f, [
      'trace',
      INCIDENT.orderNo,
      '--group',
      'notification-consumer-group',
      '--json',
    ]);
    expect(json.code).toBe(0);
    const hops: Hop[] = json.json().outbox;
    const notificationId = service.sent.get(item.eventId)!.notificationId;
    expect(hops).toEqual([
      {
        group: PUBLISHER,
        table: outboxTableName(f.resources.prefix, PUBLISHER),
        events: [
          expect.objectContaining({
            eventId: item.eventId,
            index: 0,
            status: 'RELAYED',
            committedAt: '2026-12-05T11:00:00.000Z',
            relayedAt: '2026-12-05T11:00:00.120Z',
            target: 'sqs',
            downstream: [
              {
                group: 'notification-consumer-group',
                logGroup: functionLogGroupName(f.resources.prefix, 'notification-consumer'),
                record: expect.objectContaining({
                  status: 'COMPLETED',
                  firstMsgId: item.eventId,
                  result: notificationId,
                }),
                lines: [
                  expect.objectContaining({ msgId: item.eventId, outcome: 'processed' }),
                  expect.objectContaining({ msgId: carrierMsgId, outcome: 'duplicate' }),
                ],
              },
            ],
          }),
        ],
      },
    ]);
    expect(text.stdout).toContain(`Across the outbox of ${PUBLISHER}`);
    expect(text.stdout).toContain(`event ${item.eventId} (#0) POINTS_TOPIC:POINTS_AWARDED → sqs: RELAYED`);
    expect(text.stdout).toContain(`notification-consumer-group: record COMPLETED`);
    expect(fromDownstream.code).toBe(0);
    expect(fromDownstream.json().outbox[0].events[0].eventId).toBe(item.eventId);
  });
});
