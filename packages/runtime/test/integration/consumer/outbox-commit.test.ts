import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { POINTS, POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { awardWrites, parseOrderPaid } from '@rocketmq-lambda/consumers/points/index.ts';
import { type RoundTrip, RoundTripCounter } from '@rocketmq-lambda/tools/instrumentation/round-trip-counter.ts';
import { newMsgId, orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { eventIdOf, type OutboxItem, outboxTtlOf, recordId } from '../../../src/config/index.ts';
import { defineConsumer } from '../../../src/consumer/index.ts';
import { injectFault } from '../retries/sdk-faults.ts';

const MODES = [
  { mode: 'per-record', packing: false },
  { mode: 'packed', packing: true },
] as const;
const TRANSACTION = 'TransactWriteItemsCommand';

const order = (orderNo: string, userId: string, points: number) => ({ orderNo, userId, points });

/** The points consumer on fresh resources, and what its outbox table and dedup records hold. */
async function publishingConsumer(packing: boolean, module?: Parameters<typeof pointsFixture>[1]) {
  const f = await pointsFixture({ packing }, module);
  const outboxTable = f.resources.outboxTables[POINTS_GROUP]!;
  const scan = async <T>(TableName: string) =>
    ((await f.dynamoDb.send(new ScanCommand({ TableName, ConsistentRead: true }))).Items ?? []) as T[];
  return {
    ...f,
    outboxTable,
    outbox: () => scan<OutboxItem>(outboxTable),
    dedupKeys: async () => (await scan<{ key: string }>(f.resources.tables.idempotency)).map((r) => r.key).sort(),
    /** Per order: how many ledger entries and how many outbox items it has (the two must agree). */
    effectsAndEvents: async (userIds: string[]) => {
      const items = await scan<OutboxItem>(outboxTable);
      const ledger = (await Promise.all(userIds.map((u) => f.ledger(u)))).flat();
      const orders = new Set([...ledger.map((e) => e.orderNo), ...items.map((i) => i.businessKey)]);
      return Object.fromEntries(
        [...orders].map((o) => [
          o,
          [ledger.filter((e) => e.orderNo === o).length, items.filter((i) => i.businessKey === o).length],
        ]),
      );
    },
  };
}

describe.each(MODES)(
  'the points consumer commits its POINTS_AWARDED in the transaction of its award ($mode)',
  ({ packing }) => {
    it('an award commits exactly one outbox item: the derived event id, PENDING, its TTL', async () => {
      // Prepare
      const f = await publishingConsumer(packing);
      const msgId = newMsgId();
      const before = Date.now();
      // Act
      const response = await f.invoke([orderEnvelope(order('SO-OUT-1', '88372', 300), { msgId })]);
      // Assess
      expect(response.batchItemFailures).toEqual([]);
      const items = await f.outbox();
      expect(items).toHaveLength(1);
      const [item] = items;
      const eventId = eventIdOf(POINTS_GROUP, 'SO-OUT-1', 0);
      expect(item).toMatchObject({
        eventId,
        group: POINTS_GROUP,
        businessKey: 'SO-OUT-1',
        index: 0,
        sourceMsgId: msgId,
        topic: 'POINTS_TOPIC',
        tag: 'POINTS_AWARDED',
        keys: [eventId, 'SO-OUT-1'],
        userProperties: { OUTBOX_EVENT_ID: eventId },
        target: 'sqs',
        status: 'PENDING',
      });
      expect(JSON.parse(item!.body)).toEqual({ orderNo: 'SO-OUT-1', userId: '88372', points: 300 });
      expect(item!.committedAt).toBeGreaterThanOrEqual(before);
      expect(item!.committedAt).toBeLessThanOrEqual(Date.now());
      expect(item!.expiresAt).toBe(Math.floor(item!.committedAt / 1000) + outboxTtlOf(POINTS));
      expect(await f.ledger('88372')).toHaveLength(1);
    });

    it('a duplicate delivery and an application re-send write no second item and settle as duplicates', async () => {
      // Prepare
      const f = await publishingConsumer(packing);
      const first = orderEnvelope(order('SO-OUT-2', '88372', 120));
      await f.invoke([first]);
      const [committed] = await f.outbox();
      f.reports.length = 0;
      // Act: the same message again, then the order service's re-send with a new msgId
      await f.invoke([first]);
      await f.invoke([orderEnvelope(order('SO-OUT-2', '88372', 120))]);
      // Assess
      expect(f.reports.map((r) => [r.settlement.outcome, r.disposition.action])).toEqual([
        ['duplicate', 'ack'],
        ['duplicate', 'ack'],
      ]);
      expect(await f.outbox()).toEqual([committed]);
      expect(await f.balance('88372')).toBe(120);
    });

    it('a 0-point order writes no item', async () => {
      const f = await publishingConsumer(packing);
      const response = await f.invoke([orderEnvelope(order('SO-OUT-ZERO', '88372', 0))]);
      expect(response.batchItemFailures).toEqual([]);
      expect(f.outcomes()).toEqual(['processed']);
      expect(await f.dedupKeys()).toEqual(['SO-OUT-ZERO']);
      expect(await f.outbox()).toEqual([]);
    });

    it('the answer lost after the transaction committed: effect and item are there together, once', async () => {
      // Prepare: DynamoDB applies the first transaction, then its answer is lost (a crash, a timeout)
      const f = await publishingConsumer(packing);
      const fault = injectFault(f.dynamoDb, { command: TRANSACTION, times: 1, fault: 'unknownOutcome' });
      const envelope = orderEnvelope(order('SO-OUT-3', '88372', 50));
      // Act: the first delivery meets the fault; the redelivery finds it done
      await f.invoke([envelope]);
      const afterFault = await f.effectsAndEvents(['88372']);
      await f.invoke([envelope]);
      // Assess
      expect(fault.injected).toBe(1);
      expect(afterFault).toEqual({ 'SO-OUT-3': [1, 1] });
      expect(await f.effectsAndEvents(['88372'])).toEqual({ 'SO-OUT-3': [1, 1] });
      expect(f.reports.at(-1)!.settlement.outcome).toBe('duplicate');
      expect(await f.balance('88372')).toBe(50);
    });

    it('the request lost before DynamoDB applied it: neither effect nor item, both on the retry', async () => {
      // Prepare: every transaction is lost on its way until the network comes back
      const f = await publishingConsumer(packing);
      let down = true;
      const fault = injectFault(f.dynamoDb, { command: (name) => down && name === TRANSACTION, fault: 'lostRequest' });
      const envelope = orderEnvelope(order('SO-OUT-4', '88372', 70));
      // Act
      const failed = await f.invoke([envelope]);
      const whileDown = await f.effectsAndEvents(['88372']);
      down = false;
      const retried = await f.invoke([envelope]);
      // Assess
      expect(fault.injected).toBeGreaterThan(0);
      expect(failed.batchItemFailures).toHaveLength(1);
      expect(whileDown).toEqual({});
      expect(await f.dedupKeys()).toEqual(['SO-OUT-4']);
      expect(retried.batchItemFailures).toEqual([]);
      expect(await f.effectsAndEvents(['88372'])).toEqual({ 'SO-OUT-4': [1, 1] });
    });

    it('an undeclared topic dead-letters the record with its reason and writes nothing; its batch-mates commit', async () => {
      // Prepare: a business of the points entry that announces orders `SO-BAD-*` on a topic the entry does not declare
      const undeclared = defineConsumer(POINTS, {
        parsePayload: parseOrderPaid,
        keyOf: (o) => o.orderNo,
        business:
          ({ tables, now }) =>
          (msg) => ({
            writes: awardWrites(
              msg.payload,
              { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
              tables,
              new Date(now()),
            ),
            publishes: [
              msg.payload.orderNo.startsWith('SO-BAD')
                ? { topic: 'COUPON_TOPIC', tag: 'ISSUED', body: { orderNo: msg.payload.orderNo } }
                : { topic: 'POINTS_TOPIC', tag: 'POINTS_AWARDED', body: { orderNo: msg.payload.orderNo } },
            ],
          }),
      });
      const f = await publishingConsumer(packing, undeclared);
      // Act
      const response = await f.invoke([
        orderEnvelope(order('SO-GOOD-1', 'u-good', 10)),
        orderEnvelope(order('SO-BAD-1', 'u-bad', 10)),
      ]);
      // Assess
      expect(response.batchItemFailures).toEqual([]);
      const refused = f.reports.find((r) => r.key === 'SO-BAD-1')!;
      expect(refused.settlement).toMatchObject({
        outcome: 'failed',
        error: { code: 'UNDECLARED_PUBLICATION', classification: 'permanent' },
      });
      expect(refused.disposition).toEqual({ action: 'dead-letter', code: 'UNDECLARED_PUBLICATION' });
      const [letter, ...more] = await f.deadLetters();
      expect(more).toEqual([]);
      expect(letter!.attributes['failure-code']).toBe('UNDECLARED_PUBLICATION');
      expect(letter!.attributes['failure-reason']).toBe(
        `consumer group ${POINTS_GROUP}: outgoing message 0 (COUPON_TOPIC ISSUED) is refused: topic COUPON_TOPIC is not among the group's publishes`,
      );
      expect(await f.ledger('u-bad')).toEqual([]);
      expect(await f.balance('u-bad')).toBe(0);
      expect(await f.dedupKeys()).toEqual(['SO-GOOD-1']);
      expect((await f.outbox()).map((i) => i.businessKey)).toEqual(['SO-GOOD-1']);
      expect(await f.dynamoDb.send(new ScanCommand({ TableName: f.resources.tables.idempotency }))).toMatchObject({
        Items: [{ id: recordId(POINTS_GROUP, 'SO-GOOD-1') }],
      });
    });
  },
);

describe('packing counts the outbox items against the 100-action limit (emulator)', () => {
  it('splits 30 awards (120 actions) into transactions of at most 100, each record with its own item', async () => {
    // Prepare: 30 awards to 30 accounts: dedup record, ledger entry, balance, outbox item each
    const f = await publishingConsumer(true);
    const trips: RoundTrip[] = [];
    new RoundTripCounter().attach(f.dynamoDb).onRoundTrip((t) => trips.push(t));
    const users = Array.from({ length: 30 }, (_, i) => `u-split-${i}`);
    // Act
    const response = await f.invoke(users.map((u, i) => orderEnvelope(order(`SO-SPLIT-${i}`, u, 1 + i))));
    // Assess: 25 records (100 actions), then 5 (20); in each, the items are those of its own records
    expect(response.batchItemFailures).toEqual([]);
    const transactions = trips
      .filter((t) => t.command === TRANSACTION && !t.error)
      .map((t) => t.input.TransactItems as { Put?: { TableName?: string; Item?: Record<string, unknown> } }[]);
    expect(transactions.map((tx) => tx.length).sort((a, b) => b - a)).toEqual([100, 20]);
    for (const tx of transactions) {
      const text = (v: unknown) => (typeof v === 'object' && v !== null && 'S' in v ? (v as { S: string }).S : v);
      const puts = (table: string, attribute: string) =>
        tx.filter((a) => a.Put?.TableName === table).map((a) => text(a.Put!.Item![attribute]) as string);
      const dedupKeys = puts(f.resources.tables.idempotency, 'key').sort();
      expect(puts(f.outboxTable, 'businessKey').sort()).toEqual(dedupKeys);
      expect(puts(f.outboxTable, 'eventId').sort()).toEqual(dedupKeys.map((k) => eventIdOf(POINTS_GROUP, k, 0)).sort());
    }
    expect(await f.outbox()).toHaveLength(30);
    expect(await f.effectsAndEvents(users)).toEqual(Object.fromEntries(users.map((_, i) => [`SO-SPLIT-${i}`, [1, 1]])));
  });
});
