import { describe, expect, it } from 'vitest';
import { PROCESS_SIGNING_KEY } from '../../src/local/local-signing-key.ts';
import { orderEnvelope, pointsFixture, sqsRecord } from '../../src/testing/points-fixture.ts';
import { CORPUS } from './bad-inputs.ts';

describe('bad-input corpus through the points consumer (emulator)', () => {
  it('has at least 30 cases, each with a distinct name', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(30);
    expect(new Set(CORPUS.map((c) => c.name)).size).toBe(CORPUS.length);
  });

  it.each(CORPUS)('$name → $expected, batch-mates unaffected, nothing lost', async (c) => {
    // Prepare: the case between two good orders of another user
    const f = await pointsFixture();
    const mates = [
      orderEnvelope({ orderNo: `SO-MATE-A-${c.name.length}`, userId: 'mate', points: 1 }),
      orderEnvelope({ orderNo: `SO-MATE-B-${c.name.length}`, userId: 'mate', points: 2 }),
    ];
    // Signed as the bridge signs what it sends (a JSON object), so the consumer judges the content itself
    const body = PROCESS_SIGNING_KEY.sign(c.body);
    // Act
    const record = sqsRecord(body, f.resources.queues['point-consumer-group']!.source.arn);
    const response = await f.invoke([mates[0]!, record, mates[1]!]);
    // Assess: every record accounted for, no retry, batch-mates processed
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports).toHaveLength(3);
    expect(await f.balance('mate')).toBe(3);
    const { settlement } = f.reports.find((r) => r.sqsMessageId === record.messageId)!;
    expect(settlement.outcome === 'failed' ? settlement.error.code : settlement.outcome).toBe(c.expected);
    const dlq = await f.deadLetters();
    if (c.expected !== 'processed' && c.expected !== 'filtered') {
      expect(dlq).toHaveLength(1);
      expect(dlq[0]!.body).toBe(body);
      expect(dlq[0]!.attributes['failure-code']).toBe(c.expected);
      if (c.reason) expect(dlq[0]!.attributes['failure-reason']).toMatch(c.reason);
    } else {
      expect(dlq).toEqual([]);
    }
    expect(await f.ledgerMismatches()).toEqual([]);
  });
});
