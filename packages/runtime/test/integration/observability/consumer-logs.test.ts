import { newMsgId, orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** Reads the JSON lines the consumer's Powertools logger writes (dev mode writes through the global console). */
function captureLogs() {
  vi.stubEnv('POWERTOOLS_DEV', 'true');
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
  const lines: Array<Record<string, unknown>> = [];
  for (const level of ['debug', 'info', 'warn', 'error'] as const) {
    vi.spyOn(console, level).mockImplementation((line: unknown) => {
      lines.push(JSON.parse(String(line)));
    });
  }
  return lines;
}

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('consumer logs (emulator)', () => {
  it('writes one structured line per record with msgId, key, group and outcome', async () => {
    // Prepare
    const lines = captureLogs();
    const f = await pointsFixture();
    const msgId = newMsgId();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const body = orderEnvelope(
      { orderNo: 'SO-LOG-1', userId: 5, points: 7 },
      {
        msgId,
        userProperties: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
    );
    // Act: processed, duplicate, filtered, dead-lettered
    await f.invoke([body]);
    await f.invoke([
      body,
      orderEnvelope({ orderNo: 'SO-LOG-2', userId: 5, points: 7 }, { tags: 'FINISHED' }),
      'not json',
    ]);
    // Assess
    const records = lines.filter((l) => typeof l.outcome === 'string');
    expect(records).toHaveLength(4);
    expect(records.map((l) => l.outcome).sort()).toEqual(['duplicate', 'failed', 'filtered', 'processed']);
    for (const line of records) {
      expect(line).toMatchObject({
        group: 'point-consumer-group',
        service: 'point-consumer-group',
        level: expect.any(String),
      });
      expect(line).toHaveProperty('disposition');
    }
    expect(records.find((l) => l.outcome === 'processed')).toMatchObject({
      msgId,
      key: 'SO-LOG-1',
      traceId,
      disposition: 'ack',
    });
    // The bridge's trace id (the envelope's traceparent, never the producer's), whatever the stage's tracing
    // backend: `ops trace` finds the trace from it.
    expect(records.find((l) => l.outcome === 'duplicate')).toMatchObject({ traceId });
    expect(records.find((l) => l.outcome === 'failed')).not.toHaveProperty('traceId');
    expect(records.find((l) => l.outcome === 'duplicate')).toMatchObject({
      msgId,
      key: 'SO-LOG-1',
      reason: 'dedup-record-exists',
      winnerMsgId: msgId,
    });
    expect(records.find((l) => l.outcome === 'failed')).toMatchObject({
      errorCode: 'INVALID_ENVELOPE',
      errorClass: 'permanent',
      disposition: 'dead-letter',
      level: 'ERROR',
    });
  });
});
