import { randomUUID } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { awardWrites } from '@rocketmq-lambda/consumers/points/index.ts';
import { type RoundTrip, RoundTripCounter } from '@rocketmq-lambda/tools/instrumentation/round-trip-counter.ts';
import { itemBytes } from '@rocketmq-lambda/tools/instrumentation/write-units.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { orderEnvelope, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, inject, it } from 'vitest';
import { createDynamoDb, emulatorConfig } from '../../../src/aws/index.ts';
import type { ConsumerMessage, TransactionalResult } from '../../../src/consumer/index.ts';
import { fingerprintOf, packedTransactionalStrategy } from '../../../src/consumer/internal.ts';
import { parseEnvelope } from '../../../src/rocketmq/index.ts';

/** The packed strategy on its own (no middleware), on fresh tables, every request recorded. */
async function packer(options: { maxBytes?: number } = {}) {
  const endpoint = inject('emulatorEndpoint');
  const resources = await provisionLocal(endpoint, `pk${randomUUID().slice(0, 8)}`, { groups: [] });
  const client = createDynamoDb(emulatorConfig(endpoint));
  const trips: RoundTrip[] = [];
  new RoundTripCounter().attach(client).onRoundTrip((t) => trips.push(t));
  const strategy = packedTransactionalStrategy({
    client,
    tableName: resources.tables.idempotency,
    group: 'point-consumer-group',
    recordIdPrefix: 'point-consumer-group#',
    keyAttributes: {
      [resources.tables.idempotency]: ['id'],
      [resources.tables.ledger]: ['userId', 'entryId'],
      [resources.tables.accounts]: ['userId'],
    },
    ...options,
  });
  const message = (
    orderNo: string,
    userId: string,
    points: number,
  ): ConsumerMessage<{ orderNo: string; userId: string; points: number }> => {
    const payload = { orderNo, userId, points };
    return {
      record: sqsRecord('', 'arn'),
      message: parseEnvelope(orderEnvelope(payload)),
      payload,
      key: orderNo,
      fingerprint: fingerprintOf(payload),
      attempt: 1,
    };
  };
  const award = (msg: ReturnType<typeof message>): TransactionalResult => ({
    writes: awardWrites(
      msg.payload,
      { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
      resources.tables,
      new Date(),
    ),
  });
  const balance = async (userId: string) =>
    ((await client.send(new GetCommand({ TableName: resources.tables.accounts, Key: { userId } }))).Item?.balance as
      | number
      | undefined) ?? 0;
  const sizes = () =>
    trips
      .filter((t) => t.command === 'TransactWriteItemsCommand')
      .map((t) => (t.input.TransactItems as unknown[]).length);
  return { strategy, resources, message, award, balance, sizes, trips };
}

type WireItem = Record<string, AttributeValue>;
type WireAction = {
  Put?: { Item: WireItem };
  Update?: { Key: WireItem; ExpressionAttributeValues?: WireItem };
  Delete?: { Key: WireItem };
  ConditionCheck?: { Key: WireItem };
};

/**
 * The item bytes one `TransactWriteItems` carries, as DynamoDB sizes items (attribute names
 * plus values): a put's whole item; an update's key and the values it writes; a delete's or
 * condition check's key.
 */
function transactionItemBytes(actions: readonly WireAction[]): number {
  return actions.reduce((sum, a) => {
    if (a.Put) return sum + itemBytes(a.Put.Item);
    if (a.Update) return sum + itemBytes(a.Update.Key) + itemBytes(a.Update.ExpressionAttributeValues ?? {});
    return sum + itemBytes((a.Delete ?? a.ConditionCheck)!.Key);
  }, 0);
}

describe('batch packing limits (emulator)', () => {
  it('splits by size: no transaction carries more item bytes than the limit', async () => {
    // Prepare: awards whose ledger entries carry notes of 200 to 1,100 bytes, against a limit
    // that holds a few of them: a batch that only fits in several transactions
    const LIMIT = 4_000;
    const p = await packer({ maxBytes: LIMIT });
    const msgs = Array.from({ length: 8 }, (_, i) => p.message(`SO-SZ-${i}`, `u-${i}`, 1));
    const noteBytes = [1_100, 200, 900, 400, 1_000, 300, 800, 600];
    const padded = (msg: (typeof msgs)[number], i: number): TransactionalResult => {
      const [ledger, ...rest] = p.award(msg).writes;
      return {
        writes: [
          {
            ...ledger!,
            item: {
              Put: { ...ledger!.item.Put!, Item: { ...ledger!.item.Put!.Item, note: 'n'.repeat(noteBytes[i]!) } },
            },
          },
          ...rest,
        ],
      };
    };
    // Act
    const settlements = await p.strategy.commitBatch!(msgs, msgs.map(padded));
    // Assess: the bytes of every transaction as it went to DynamoDB, measured by DynamoDB's item-size rule
    const sent = p.trips.filter((t) => t.command === 'TransactWriteItemsCommand');
    const bytes = sent.map((t) => transactionItemBytes(t.input.TransactItems as WireAction[]));
    expect(sent.every((t) => t.error === undefined)).toBe(true);
    expect(bytes.length).toBeGreaterThan(1);
    for (const [i, b] of bytes.entries())
      expect(b, `transaction ${i} of ${JSON.stringify(bytes)}`).toBeLessThanOrEqual(LIMIT);
    // … and it still packs: fewer transactions than records, the whole batch's bytes beyond one transaction
    expect(bytes.length).toBeLessThan(msgs.length);
    expect(bytes.reduce((a, b) => a + b, 0)).toBeGreaterThan(LIMIT);
    expect(p.sizes().reduce((a, b) => a + b, 0)).toBe(3 * msgs.length);
    expect(settlements.map((s) => s.outcome)).toEqual(Array(msgs.length).fill('processed'));
  });

  it('puts writes to one item that cannot be merged into separate transactions', async () => {
    // Prepare: two records update the same account under a condition (not an increment that can be summed)
    const p = await packer();
    const msgs = [p.message('SO-C-1', 'u-c', 5), p.message('SO-C-2', 'u-c', 7)];
    const conditional = (msg: (typeof msgs)[number]): TransactionalResult => ({
      writes: [
        {
          item: {
            Update: {
              TableName: p.resources.tables.accounts,
              Key: { userId: 'u-c' },
              UpdateExpression: 'ADD balance :p',
              ConditionExpression: 'attribute_not_exists(frozen)',
              ExpressionAttributeValues: { ':p': msg.payload.points },
            },
          },
        },
      ],
    });
    // Act
    const settlements = await p.strategy.commitBatch!(msgs, msgs.map(conditional));
    // Assess: two transactions of [dedup, update]; both applied
    expect(settlements.map((s) => s.outcome)).toEqual(['processed', 'processed']);
    expect(p.sizes()).toEqual([2, 2]);
    expect(await p.balance('u-c')).toBe(12);
  });

  it('merges increments of one account into one action whose amount is their sum', async () => {
    const p = await packer();
    const msgs = [p.message('SO-S-1', 'u-s', 5), p.message('SO-S-2', 'u-s', 7), p.message('SO-S-3', 'u-s', 11)];
    const settlements = await p.strategy.commitBatch!(msgs, msgs.map(p.award));
    expect(settlements.map((s) => s.outcome)).toEqual(['processed', 'processed', 'processed']);
    const updates = (
      p.trips[0]!.input.TransactItems as Array<{
        Update?: { ExpressionAttributeValues: Record<string, { N?: string }> };
      }>
    ).filter((a) => a.Update);
    expect(updates).toHaveLength(1);
    expect(updates[0]!.Update!.ExpressionAttributeValues[':points']).toEqual({ N: '23' });
    expect(await p.balance('u-s')).toBe(23);
  });
});
