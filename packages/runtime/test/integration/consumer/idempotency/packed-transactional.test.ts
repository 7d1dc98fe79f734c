import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { type RoundTrip, RoundTripCounter } from '@rocketmq-lambda/tools/instrumentation/round-trip-counter.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { orderEnvelope, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, inject, it } from 'vitest';
import { createDynamoDb, emulatorConfig } from '../../../../src/aws/index.ts';
import type { ConsumerMessage, TransactionalResult } from '../../../../src/consumer/index.ts';
import { fingerprintOf, packedTransactionalStrategy } from '../../../../src/consumer/internal.ts';
import { parseEnvelope } from '../../../../src/rocketmq/index.ts';

type Order = { orderNo: string; userId: string };

describe('packed transactions: two puts on one item the packer cannot see (emulator)', () => {
  it('halves a transaction DynamoDB refuses as invalid until each record stands alone, and settles each correctly', async () => {
    // Prepare: each record puts the user's profile (its latest order). The profile table's key
    // attributes are not declared, so the packer takes two puts of one profile for two items.
    const endpoint = inject('emulatorEndpoint');
    const resources = await provisionLocal(endpoint, `pv${randomUUID().slice(0, 8)}`, { groups: [] });
    const client = createDynamoDb(emulatorConfig(endpoint));
    const profiles = resources.tables.accounts;
    const strategy = packedTransactionalStrategy({
      client,
      tableName: resources.tables.idempotency,
      group: 'profile-consumer-group',
      recordIdPrefix: 'profile-consumer-group#',
      keyAttributes: { [resources.tables.idempotency]: ['id'] },
    });
    const message = (orderNo: string, userId: string): ConsumerMessage<Order> => {
      const payload = { orderNo, userId };
      return {
        record: sqsRecord('', 'arn'),
        message: parseEnvelope(orderEnvelope(payload)),
        payload,
        key: orderNo,
        fingerprint: fingerprintOf(payload),
        attempt: 1,
      };
    };
    const latestOrder = (msg: ConsumerMessage<Order>): TransactionalResult => ({
      writes: [
        {
          item: {
            Put: { TableName: profiles, Item: { userId: msg.payload.userId, lastOrderNo: msg.payload.orderNo } },
          },
        },
      ],
    });
    // SO-V1 was committed by an earlier delivery; its copy comes back with SO-V2 of the same user
    const v1 = message('SO-V1', 'u-v');
    expect(await strategy.commitBatch!([v1], [latestOrder(v1)])).toEqual([{ outcome: 'processed' }]);
    const batch = [v1, message('SO-V2', 'u-v'), message('SO-V3', 'u-w'), message('SO-V4', 'u-x')];
    const trips: RoundTrip[] = [];
    new RoundTripCounter().attach(client).onRoundTrip((t) => trips.push(t));
    // Act
    const settlements = await strategy.commitBatch!(batch, batch.map(latestOrder));
    // Assess: the transactions sent, by the orders whose dedup records they carry, and their outcome
    const sent = trips
      .filter((t) => t.command === 'TransactWriteItemsCommand')
      .map((t) => ({
        orders: (t.input.TransactItems as Array<{ Put?: { TableName: string; Item: { key?: { S: string } } } }>)
          .filter((a) => a.Put?.TableName === resources.tables.idempotency)
          .map((a) => a.Put!.Item.key!.S),
        error: t.error ?? 'committed',
      }));
    const byOrders = (a: { orders: string[] }, b: { orders: string[] }) =>
      b.orders.length - a.orders.length || a.orders.join().localeCompare(b.orders.join());
    expect(sent.sort(byOrders)).toEqual([
      { orders: ['SO-V1', 'SO-V2', 'SO-V3', 'SO-V4'], error: 'ValidationException' },
      { orders: ['SO-V1', 'SO-V2'], error: 'ValidationException' },
      { orders: ['SO-V3', 'SO-V4'], error: 'committed' },
      { orders: ['SO-V1'], error: 'TransactionCanceledException' },
      { orders: ['SO-V2'], error: 'committed' },
    ]);
    expect(settlements).toEqual([
      { outcome: 'duplicate', reason: 'dedup-record-exists', winnerMsgId: v1.message.msgId },
      { outcome: 'processed' },
      { outcome: 'processed' },
      { outcome: 'processed' },
    ]);
    // The duplicate wrote nothing: the profile holds SO-V2, written once after SO-V1
    const profile = async (userId: string) =>
      (await client.send(new GetCommand({ TableName: profiles, Key: { userId }, ConsistentRead: true }))).Item;
    expect(await profile('u-v')).toEqual({ userId: 'u-v', lastOrderNo: 'SO-V2' });
    expect(await profile('u-w')).toEqual({ userId: 'u-w', lastOrderNo: 'SO-V3' });
    expect(await profile('u-x')).toEqual({ userId: 'u-x', lastOrderNo: 'SO-V4' });
  });
});
