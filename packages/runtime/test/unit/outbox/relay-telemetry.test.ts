import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import { OutboxRelayMetric } from '../../../src/config/index.ts';
import { type RelayOutcome, type RelayReport, relayTelemetry } from '../../../src/outbox/index.ts';

/** Records what the telemetry asks of Powertools: metric names, units and values, log levels and messages. */
function recorder() {
  const metrics: Array<[string, string, number]> = [];
  const logs: Array<[string, string]> = [];
  const log = (level: string) => (message: string) => logs.push([level, message]);
  const logger = { info: log('info'), warn: log('warn'), error: log('error') } as unknown as Logger;
  const sink = {
    addMetric: (name: string, unit: string, value: number) => metrics.push([name, unit, value]),
  } as unknown as Metrics;
  return { telemetry: relayTelemetry(logger, sink), metrics, logs };
}

const report = (outcome: RelayOutcome): RelayReport => ({
  ...outcome,
  group: 'point-consumer-group',
  sequenceNumber: '100',
  eventId: 'E1',
  topic: 'POINTS_TOPIC',
  orderingKey: 'U-1',
  committedAt: 1_000,
});

describe('relay telemetry', () => {
  it.each<[RelayOutcome, Array<[string, string, number]>, string]>([
    [
      { outcome: 'relayed', relayedAt: 1_250, requests: 1 },
      [
        [OutboxRelayMetric.relayed, 'Count', 1],
        [OutboxRelayMetric.relayLatency, 'Milliseconds', 250],
      ],
      'info',
    ],
    [{ outcome: 'already-marked', requests: 1 }, [], 'info'],
    [{ outcome: 'already-relayed' }, [], 'info'],
    [{ outcome: 'retry', code: 'TARGET_UNAVAILABLE', reason: 'x' }, [[OutboxRelayMetric.retried, 'Count', 1]], 'warn'],
    [{ outcome: 'held-back' }, [[OutboxRelayMetric.heldBack, 'Count', 1]], 'info'],
    [{ outcome: 'failed', code: 'TARGET_REFUSED', reason: 'x' }, [[OutboxRelayMetric.failed, 'Count', 1]], 'error'],
  ])('%o: its metrics and one log line', (outcome, metrics, level) => {
    const r = recorder();
    r.telemetry(report(outcome));
    expect(r.metrics).toEqual(metrics);
    expect(r.logs.map(([l]) => l)).toEqual([level]);
  });
});
