import { randomUUID } from 'node:crypto';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { loadRegistration } from '@rocketmq-lambda/tools/local/local-consumers.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { inMessageGroup, orderEnvelope, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { describe, expect, inject, it } from 'vitest';
import { createSqs, emulatorConfig } from '../../../src/aws/index.ts';
import { CONSUMER_GROUPS } from '../../../src/config/index.ts';
import type { RecordReport } from '../../../src/consumer/index.ts';
import { generateSigningKey, RetrySchedule, StaticSigningKeys, signEnvelope } from '../../../src/rocketmq/index.ts';

/** One catalogue group's own handler module, as the local run and Lambda build it, with a key of the test's. */
async function groupUnderTest(definition: (typeof CONSUMER_GROUPS)[number]) {
  const endpoint = inject('emulatorEndpoint');
  const resources = await provisionLocal(endpoint, `a${randomUUID().slice(0, 8)}`, { groups: [definition.group] });
  const key = generateSigningKey();
  const reports: RecordReport[] = [];
  const handler = (await loadRegistration(definition)).create({
    aws: emulatorConfig(endpoint),
    tables: resources.tables,
    outboxTable: resources.outboxTables[definition.group],
    deadLetterQueueUrl: resources.queues[definition.group]!.deadLetter.url,
    schedule: RetrySchedule.parse(undefined),
    envelopeKeys: new StaticSigningKeys(key),
    onReport: (r) => reports.push(r),
    couponServiceUrl: 'http://127.0.0.1:9',
    notificationServiceUrl: 'http://127.0.0.1:9',
  });
  const queues = resources.queues[definition.group]!;
  return {
    reports,
    queues,
    /** A signed record of the group's queue, as the bridge writes it. */
    record: (body: string) => {
      const record = sqsRecord(JSON.stringify(signEnvelope(JSON.parse(body), key)), queues.source.arn);
      return queues.fifo ? inMessageGroup(record, JSON.parse(body).data.keys[0]) : record;
    },
    deadLetters: () => readAllMessages(createSqs(emulatorConfig(endpoint)), queues.deadLetter.url),
    invoke: (records: ReturnType<typeof sqsRecord>[]) =>
      handler({ Records: records }, lambdaContext(definition.group, 30_000)),
  };
}

describe('every group of the catalogue refuses a signed envelope of a topic it does not subscribe to (emulator)', () => {
  it.each(CONSUMER_GROUPS.map((g) => [g.group, g]))('%s', async (_name, definition) => {
    // Prepare: the group's own tag, another topic; signed, so the signature is not what refuses it
    const g = await groupUnderTest(definition);
    const tag = definition.tagExpression.split('||')[0]!.trim();
    const other = g.record(
      orderEnvelope({ orderNo: `SO-${randomUUID().slice(0, 8)}` }, { topic: 'REFUND_TOPIC', tags: tag }),
    );
    // Act
    const response = await g.invoke([other]);
    // Assess: dead-lettered at once with its code and the message's id, never handed to the business
    expect(response.batchItemFailures).toEqual([]);
    const [letter] = await g.deadLetters();
    expect(letter?.attributes['failure-code']).toBe('UNSUBSCRIBED_TOPIC');
    expect(letter?.attributes['failure-reason']).toBe(
      `the envelope's topic "REFUND_TOPIC" is not ${definition.topic}, the topic this consumer group subscribes to`,
    );
    expect(g.reports.map((r) => r.disposition)).toEqual([{ action: 'dead-letter', code: 'UNSUBSCRIBED_TOPIC' }]);
  });
});

describe('the groups that keep dedup records refuse a signed envelope stored before their redrive horizon (emulator)', () => {
  type Definition = (typeof CONSUMER_GROUPS)[number];
  const keepsRecords = CONSUMER_GROUPS.filter((g) => g.group !== 'order-status-consumer-group');

  /** A signed envelope of the group's topic and tag, stored (and born) `daysAgo` days ago. */
  const storedDaysAgo = (g: Awaited<ReturnType<typeof groupUnderTest>>, def: Definition, daysAgo: number) => {
    const storeTimestamp = Date.now() - daysAgo * 86_400_000;
    const tags = def.tagExpression.split('||')[0]!.trim();
    return g.record(
      orderEnvelope(
        { orderNo: `SO-${randomUUID().slice(0, 8)}`, userId: 88372, points: 300 },
        { topic: def.topic, tags, storeTimestamp, bornTimestamp: storeTimestamp },
      ),
    );
  };

  it.each(keepsRecords.map((g) => [g.group, g]))('%s: 31 days, past its 30-day records', async (_name, definition) => {
    // Prepare
    const g = await groupUnderTest(definition);
    const old = storedDaysAgo(g, definition, 31);
    // Act
    const response = await g.invoke([old]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const [letter] = await g.deadLetters();
    expect(letter?.attributes['failure-code']).toBe('PAST_REDRIVE_HORIZON');
    expect(letter?.attributes['failure-reason']).toMatch(/^the message was stored 31d ago \(/);
    expect(letter?.attributes['rocketmq-msg-id']).toMatch(/^[0-9A-F]{32}$/);
    expect(g.reports.map((r) => r.disposition)).toEqual([{ action: 'dead-letter', code: 'PAST_REDRIVE_HORIZON' }]);
  });

  it("order-status-consumer-group: its idempotency is the order's state, which never expires, so age refuses nothing", async () => {
    const definition = CONSUMER_GROUPS.find((g) => g.group === 'order-status-consumer-group')!;
    const g = await groupUnderTest(definition);
    await g.invoke([storedDaysAgo(g, definition, 365)]);
    const settlement = g.reports[0]!.settlement;
    // The order was never created: retried as not yet applicable, like any other PAID for an unknown order.
    expect(settlement.outcome === 'failed' && settlement.error.code).toBe('NOT_YET_APPLICABLE');
  });
});
