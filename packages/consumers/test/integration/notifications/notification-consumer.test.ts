import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { eventIdOf, OUTBOX_EVENT_ID_PROPERTY, recordId } from '@rocketmq-lambda/runtime/config/index.ts';
import type { RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { LocalNotificationService } from '@rocketmq-lambda/tools/local/local-notification-service.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { IMMEDIATE_RETRIES, newMsgId, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { consumer, NOTIFICATION_GROUP } from '../../../functions/notification-consumer/handler.ts';

const AWARD = { orderNo: 'SO202007051422310088', userId: '88372', points: 300 };
const EVENT_ID = eventIdOf('point-consumer-group', AWARD.orderNo, 0);

/** A POINTS_AWARDED as the relay sends it: msgId = event id unless a carrier minted another; signed as the bridge signs. */
function awardEnvelope(
  award: Record<string, unknown>,
  id: { eventId?: string; msgId?: string; property?: boolean; keys?: string[] } = {},
): string {
  const eventId = id.eventId ?? EVENT_ID;
  return PROCESS_SIGNING_KEY.sign(
    writeEnvelope({
      topic: 'POINTS_TOPIC',
      tags: 'POINTS_AWARDED',
      msgId: id.msgId ?? eventId,
      keys: id.keys ?? [eventId, String(award.orderNo)],
      body: JSON.stringify(award),
      cluster: 'outbox-point-consumer-group',
      userProperties: id.property === false ? {} : { [OUTBOX_EVENT_ID_PROPERTY]: eventId },
    }),
  );
}

/** The notification consumer on fresh resources, calling its own stand-in notification service. */
async function notificationFixture() {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);
  const resources = await provisionLocal(endpoint, `t${randomUUID().slice(0, 8)}`, { groups: [NOTIFICATION_GROUP] });
  const queue = resources.queues[NOTIFICATION_GROUP]!;
  const service = await LocalNotificationService.start();
  onTestFinished(() => service.stop());
  const dynamoDb = createDynamoDb(aws);
  const sqs = createSqs(aws);
  const reports: RecordReport[] = [];
  const handler = consumer.create({
    aws,
    tables: resources.tables,
    deadLetterQueueUrl: queue.deadLetter.url,
    schedule: IMMEDIATE_RETRIES,
    dynamoDb,
    sqs,
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
    onReport: (r: RecordReport) => reports.push(r),
    services: { 'notification-service': service.url },
    outsideCallReserveMs: 500,
  });
  return {
    service,
    reports,
    invoke: (bodies: string[]) =>
      handler(
        { Records: bodies.map((b) => sqsRecord(b, queue.source.arn)) },
        lambdaContext('notification-consumer', 30_000),
      ),
    record: async (eventId: string) =>
      (
        await dynamoDb.send(
          new GetCommand({
            TableName: resources.tables.idempotency,
            Key: { id: recordId(NOTIFICATION_GROUP, eventId) },
            ConsistentRead: true,
          }),
        )
      ).Item,
    deadLetters: () => readAllMessages(sqs, queue.deadLetter.url),
  };
}

describe('the notification consumer: one notification per award event (emulator + local notification service)', () => {
  it('notifies once, with the event id as Idempotency-Key, and keeps the notification id in a COMPLETED lease', async () => {
    // Prepare
    const f = await notificationFixture();
    // Act
    const response = await f.invoke([awardEnvelope(AWARD)]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const sent = f.service.sent.get(EVENT_ID)!;
    expect(sent.request).toEqual({ eventId: EVENT_ID, ...AWARD });
    expect(f.reports[0]!.settlement).toEqual({ outcome: 'processed', result: sent.notificationId });
    expect(await f.record(EVENT_ID)).toMatchObject({ status: 'COMPLETED', result: sent.notificationId, key: EVENT_ID });
  });

  it('suppresses the same envelope delivered twice, and the same event under another msgId: one call, one notification', async () => {
    // Prepare
    const f = await notificationFixture();
    const relayed = awardEnvelope(AWARD);
    // Act: the relay's copy, its redelivery (same msgId) in another batch, and a copy a carrier gave a new msgId
    await f.invoke([relayed]);
    await f.invoke([relayed]);
    await f.invoke([awardEnvelope(AWARD, { msgId: newMsgId() })]);
    // Assess
    expect(f.reports.map((r) => r.settlement.outcome)).toEqual(['processed', 'duplicate', 'duplicate']);
    expect(f.service.calls.get(EVENT_ID)).toBe(1);
    expect(f.service.sent.size).toBe(1);
    expect(f.service.doubleNotifications()).toEqual([]);
  });

  it.each([
    ['an outage before the service acted', false],
    ['an answer lost after the service acted', true],
  ])('retries %s with the same Idempotency-Key: still one notification', async (_, afterActing) => {
    // Prepare
    const f = await notificationFixture();
    f.service.failNext(1, { afterActing });
    // Act: the failed attempt, then its retry (the record came back to the queue)
    const failed = await f.invoke([awardEnvelope(AWARD)]);
    const retried = await f.invoke([awardEnvelope(AWARD)]);
    // Assess
    expect(failed.batchItemFailures).toHaveLength(1);
    expect(f.reports[0]!.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'NOTIFICATION_SERVICE_UNAVAILABLE' },
    });
    expect(retried.batchItemFailures).toEqual([]);
    expect(f.reports[1]!.settlement).toEqual({
      outcome: 'processed',
      result: f.service.sent.get(EVENT_ID)!.notificationId,
    });
    expect(f.service.calls.get(EVENT_ID)).toBe(2);
    expect(f.service.sent.size).toBe(1);
  });

  it('keys on the first key when a carrier dropped the event-id property', async () => {
    const f = await notificationFixture();
    await f.invoke([awardEnvelope(AWARD)]);
    await f.invoke([awardEnvelope(AWARD, { msgId: newMsgId(), property: false })]);
    expect(f.reports.map((r) => r.settlement.outcome)).toEqual(['processed', 'duplicate']);
    expect(f.service.calls.get(EVENT_ID)).toBe(1);
  });

  it('notifies another event id once more: another award is another notification', async () => {
    const f = await notificationFixture();
    const other = { orderNo: 'SO202007051422310099', userId: '88372', points: 120 };
    const otherId = eventIdOf('point-consumer-group', other.orderNo, 0);
    await f.invoke([awardEnvelope(AWARD), awardEnvelope(other, { eventId: otherId })]);
    expect(f.reports.map((r) => r.settlement.outcome)).toEqual(['processed', 'processed']);
    expect([...f.service.sent.keys()].sort()).toEqual([EVENT_ID, otherId].sort());
    expect(f.service.doubleNotifications()).toEqual([]);
  });

  it('dead-letters the same event id with another award (PAYLOAD_CONFLICT) and a copy with no event id (INVALID_PAYLOAD)', async () => {
    const f = await notificationFixture();
    await f.invoke([awardEnvelope(AWARD)]);
    const response = await f.invoke([
      awardEnvelope({ ...AWARD, points: 3000 }, { msgId: newMsgId() }),
      awardEnvelope({ ...AWARD, orderNo: 'SO-NO-ID' }, { msgId: newMsgId(), property: false, keys: [] }),
    ]);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports.slice(1).map((r) => r.disposition)).toEqual([
      { action: 'dead-letter', code: 'PAYLOAD_CONFLICT' },
      { action: 'dead-letter', code: 'INVALID_PAYLOAD' },
    ]);
    expect((await f.deadLetters()).map((l) => l.attributes['failure-code']).sort()).toEqual([
      'INVALID_PAYLOAD',
      'PAYLOAD_CONFLICT',
    ]);
    expect(f.service.sent.size).toBe(1);
  });
});
