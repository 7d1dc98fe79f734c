import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';

describe.each([
  ['per record', false],
  ['packed', true],
])('legitimate edge payloads (%s)', (_, packing) => {
  it('acknowledges an order of 0 points (fully discounted) as processed, with no award and no dead letter', async () => {
    // Prepare
    const f = await pointsFixture({ packing });
    // Act
    const response = await f.invoke([
      orderEnvelope({ orderNo: 'SO-FREE-1', userId: '7101', points: 0 }),
      orderEnvelope({ orderNo: 'SO-PAID-1', userId: '7101', points: 50 }),
    ]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.outcomes()).toEqual(['processed', 'processed']);
    expect(f.reports.map((r) => r.disposition)).toEqual([{ action: 'ack' }, { action: 'ack' }]);
    expect((await f.ledger('7101')).map((e) => e.orderNo)).toEqual(['SO-PAID-1']);
    expect(await f.balance('7101')).toBe(50);
    expect(await f.deadLetters()).toEqual([]);
  });

  it('still treats a later copy of that order with points as a conflict: the order was consumed', async () => {
    const f = await pointsFixture({ packing });
    await f.invoke([orderEnvelope({ orderNo: 'SO-FREE-2', userId: '7102', points: 0 })]);
    await f.invoke([orderEnvelope({ orderNo: 'SO-FREE-2', userId: '7102', points: 300 })]);
    expect(f.reports[1]!.settlement).toMatchObject({ outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } });
    expect(await f.balance('7102')).toBe(0);
  });

  it.each([
    ['a JSON number above 2^53 - 1', '{"orderNo":"SO-BIG-1","userId":12345678901234567890,"points":10}'],
    ['2^53 exactly', '{"orderNo":"SO-BIG-2","userId":9007199254740992,"points":10}'],
  ])('refuses a user id sent as %s (its digits are already lost) as INVALID_PAYLOAD', async (_, body) => {
    const f = await pointsFixture({ packing });
    await f.invoke([orderEnvelope({}, { body })]);
    expect(f.reports[0]!.settlement).toMatchObject({ outcome: 'failed', error: { code: 'INVALID_PAYLOAD' } });
    expect((f.reports[0]!.settlement as { error: Error }).error.message).toMatch(
      /userId above 2\^53 - 1 loses digits as a JSON number: send it as a string/,
    );
  });

  it('accepts the same large id sent as a string', async () => {
    const f = await pointsFixture({ packing });
    await f.invoke([orderEnvelope({ orderNo: 'SO-BIG-3', userId: '12345678901234567890', points: 10 })]);
    expect(f.outcomes()).toEqual(['processed']);
    expect(await f.balance('12345678901234567890')).toBe(10);
  });
});
