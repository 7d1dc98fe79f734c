import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';

const DAY_MS = 86_400_000;
const ORDER = { orderNo: 'SO-EXPIRED-1', userId: '7001', points: 300 };

describe.each([
  ['per record', false],
  ['packed', true],
])('a conflict after the dedup record expired is still a conflict (%s)', (_, packing) => {
  it('dead-letters the same order with 3000 points arriving after the record expired', async () => {
    // Prepare: 300 points awarded on day 0; the record's TTL (30 days) has passed by day 31
    let clock = Date.parse('2026-11-01T00:00:00Z');
    const f = await pointsFixture({ packing, now: () => clock });
    await f.invoke([orderEnvelope(ORDER)]);
    clock += 31 * DAY_MS;
    // Act: the copy with other content finds no live dedup record, only the ledger entry
    const response = await f.invoke([orderEnvelope({ ...ORDER, points: 3000 })]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports[1]!.settlement).toMatchObject({ outcome: 'failed', error: { code: 'PAYLOAD_CONFLICT' } });
    expect(f.reports[1]!.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
    expect((await f.deadLetters()).map((l) => l.attributes['failure-code'])).toEqual(['PAYLOAD_CONFLICT']);
    expect(await f.balance('7001')).toBe(300);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('still acknowledges the same content after expiry as a duplicate, without a second award', async () => {
    let clock = Date.parse('2026-11-01T00:00:00Z');
    const f = await pointsFixture({ packing, now: () => clock });
    await f.invoke([orderEnvelope(ORDER)]);
    clock += 31 * DAY_MS;
    await f.invoke([orderEnvelope(ORDER)]);
    expect(f.reports[1]!.settlement).toMatchObject({ outcome: 'duplicate', reason: 'effect-already-present' });
    expect(await f.ledger('7001')).toHaveLength(1);
    expect(await f.balance('7001')).toBe(300);
  });
});
