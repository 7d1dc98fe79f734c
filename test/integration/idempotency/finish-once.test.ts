import { describe, expect, it } from 'vitest';
import { orderEnvelope, pointsFixture } from '../../support/points-fixture.ts';

describe('a batch is finished once', () => {
  it.each([
    ['per record', false],
    ['packed', true],
  ])('routes each record once when a report observer throws after routing (%s)', async (_, packing) => {
    // Prepare: the first report throws; Middy then runs onError, which used to route the batch again
    let reportCalls = 0;
    const f = await pointsFixture({
      packing,
      onReport: () => {
        if (reportCalls++ === 0) throw new Error('metrics sink down');
      },
    });
    const errors: string[] = [];
    const original = console.error;
    console.error = (line: string) => errors.push(line);
    // Act
    let response;
    try {
      response = await f.invoke([orderEnvelope({ orderNo: 'SO-ONCE-BAD', userId: '7301', points: -1 }), orderEnvelope({ orderNo: 'SO-ONCE-OK', userId: '7301', points: 40 })]);
    } finally {
      console.error = original;
    }
    // Assess: one letter for the bad record, one award, every record reported once, the answer as routed
    expect(response.batchItemFailures).toEqual([]);
    expect((await f.deadLetters()).map((l) => l.attributes['failure-code'])).toEqual(['INVALID_PAYLOAD']);
    expect(reportCalls).toBe(2);
    expect(await f.balance('7301')).toBe(40);
    expect(errors).toEqual([expect.stringContaining('consumer batch settled, then failed after routing')]);
  });
});
