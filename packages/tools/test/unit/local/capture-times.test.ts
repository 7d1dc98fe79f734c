import { parseEnvelope, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it } from 'vitest';
import { withCaptureTimes } from '../../../src/local/capture-times.ts';
import { type TrafficPhase, trafficMessage } from '../../../src/local/traffic.ts';

const JULY_5_2020 = Date.UTC(2020, 6, 5, 6, 22, 31, 117);
const NOW = Date.UTC(2026, 11, 4, 9, 0, 0, 0);

const envelope = (at: number, orderNo: string) =>
  writeEnvelope({
    topic: 'ORDER_TOPIC',
    msgId: `0A1B2C3D2A9F18B4AAC2${String(at % 1_000_000).padStart(12, '0')}`,
    tags: 'PAID',
    body: JSON.stringify({ orderNo, userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' }),
    bornTimestamp: at - 3,
    storeTimestamp: at,
  });

const phaseOf = (bodies: string[]): TrafficPhase[] => [
  { name: 'replay', messages: bodies.map((b, i) => trafficMessage(b, { line: i + 1 })) },
];
const timesIn = (body: string) => {
  const m = parseEnvelope(body);
  return { born: m.bornTimestamp!, stored: m.storeTimestamp!, time: Date.parse(m.time!) };
};

describe('a capture replayed as traffic arriving now', () => {
  it('moves every store, born and CloudEvent time by one shift: the latest is now, spacing and order as captured', () => {
    // Prepare
    const bodies = [
      envelope(JULY_5_2020, 'SO-1'),
      envelope(JULY_5_2020 + 2400, 'SO-2'),
      envelope(JULY_5_2020 + 900, 'SO-3'),
    ];

    // Act
    const { phases, captureTimes } = withCaptureTimes(phaseOf(bodies), 'rebased', NOW);

    // Assess
    const before = bodies.map(timesIn);
    const after = phases[0]!.messages.map((m) => timesIn(m.body));
    const shift = NOW - (JULY_5_2020 + 2400);
    expect(captureTimes).toEqual({
      mode: 'rebased',
      shiftMs: shift,
      messages: 3,
      earliest: JULY_5_2020 - 3,
      latest: JULY_5_2020 + 2400,
    });
    expect(after).toEqual(
      before.map((t) => ({ born: t.born + shift, stored: t.stored + shift, time: t.time + shift })),
    );
    expect(Math.max(...after.map((t) => t.stored))).toBe(NOW);
    // The producer's content is not the bridge's to change: the body, its paidAt, the msgId stay.
    expect(phases[0]!.messages.map((m) => parseEnvelope(m.body).body)).toEqual(
      bodies.map((b) => parseEnvelope(b).body),
    );
    expect(phases[0]!.messages.map((m) => [m.msgId, m.line])).toEqual(
      phaseOf(bodies)[0]!.messages.map((m) => [m.msgId, m.line]),
    );
  });

  it('finds the times in both EventBridge forms: the CloudEvent as detail, and its data as detail', () => {
    // Prepare
    const cloudEvent = JSON.parse(envelope(JULY_5_2020, 'SO-1'));
    const asDetail = { 'detail-type': 'mq:Topic:SendMessage', time: '2020-07-05T06:22:31Z', detail: cloudEvent };
    const dataAsDetail = {
      'detail-type': 'mq:Topic:SendMessage',
      time: '2020-07-05T06:22:31Z',
      detail: cloudEvent.data,
    };
    const bodies = [JSON.stringify(asDetail), JSON.stringify(dataAsDetail)];

    // Act
    const { phases, captureTimes } = withCaptureTimes(phaseOf(bodies), 'rebased', NOW);

    // Assess
    expect(captureTimes.latest).toBe(JULY_5_2020);
    const shift = NOW - JULY_5_2020;
    for (const m of phases[0]!.messages) {
      const json = JSON.parse(m.body);
      expect(Date.parse(json.time)).toBe(Date.parse('2020-07-05T06:22:31Z') + shift);
      expect(timesIn(m.body)).toMatchObject({ born: JULY_5_2020 - 3 + shift, stored: JULY_5_2020 + shift });
    }
  });

  it('leaves lines that are not envelopes, and with --original-times every line, as they were', () => {
    // Prepare
    const bodies = [
      envelope(JULY_5_2020, 'SO-1'),
      '{"specversion":"1.0", truncated',
      JSON.stringify({ storeTimestamp: 1 }),
    ];

    // Act
    const rebased = withCaptureTimes(phaseOf(bodies), 'rebased', NOW);
    const kept = withCaptureTimes(phaseOf(bodies), 'as-captured', NOW);

    // Assess
    expect(rebased.phases[0]!.messages.slice(1).map((m) => m.body)).toEqual(bodies.slice(1));
    expect(rebased.captureTimes.messages).toBe(1);
    expect(kept.phases[0]!.messages.map((m) => m.body)).toEqual(bodies);
    expect(kept.captureTimes).toEqual({
      mode: 'as-captured',
      shiftMs: 0,
      messages: 1,
      earliest: JULY_5_2020 - 3,
      latest: JULY_5_2020,
    });
  });
});
