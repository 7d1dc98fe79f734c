import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConsumerMetric } from '../../../../src/config/index.ts';
import { type RecordReport, TransientFailureError } from '../../../../src/consumer/index.ts';
import { HeldBackError } from '../../../../src/consumer/internal.ts';
import { consumerTelemetry } from '../../../../src/consumer/lambda/consumer-telemetry.ts';

/** Records what the telemetry asks of Powertools: metric names, units and values, log levels and messages. */
function recorder() {
  const metrics: Array<[string, string, number]> = [];
  const logs: Array<[string, string, Record<string, unknown>]> = [];
  const log = (level: string) => (message: string, fields: Record<string, unknown>) =>
    logs.push([level, message, fields]);
  const logger = {
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    debug: log('debug'),
  } as unknown as Logger;
  const sink = {
    addMetric: (name: string, unit: string, value: number) => metrics.push([name, unit, value]),
  } as unknown as Metrics;
  return { telemetry: consumerTelemetry(logger, sink), metrics, logs };
}

const report = (fields: Partial<RecordReport>): RecordReport => ({
  group: 'order-status-consumer-group',
  sqsMessageId: 'm-1',
  attempt: 1,
  settlement: { outcome: 'failed', error: new HeldBackError('SO1', 'MSG-0') },
  disposition: { action: 'retry', delaySeconds: 0 },
  ...fields,
});

afterEach(() => vi.useRealTimers());

describe('consumer telemetry for FIFO records', () => {
  it('counts a held-back record as HeldBack, not as a retry, logs it at info, and reports how long its message has waited', () => {
    // Prepare
    vi.useFakeTimers({ now: 100_000 });
    const r = recorder();
    // Act
    r.telemetry(report({ messageGroupId: 'SO1', sentAt: 40_000 }));
    // Assess
    expect(r.metrics).toEqual([
      [ConsumerMetric.messageGroupWait, 'Seconds', 60],
      [ConsumerMetric.heldBack, 'Count', 1],
    ]);
    expect(r.logs).toEqual([
      [
        'info',
        'record held back behind its message group',
        expect.objectContaining({ messageGroupId: 'SO1', errorCode: 'HELD_BACK' }),
      ],
    ]);
  });

  it('reports the wait of a retried FIFO message, and none for a record of a standard queue', () => {
    const r = recorder();
    const failed = { outcome: 'failed' as const, error: new TransientFailureError('not yet') };
    r.telemetry(
      report({
        messageGroupId: 'SO1',
        sentAt: Date.now(),
        settlement: failed,
        disposition: { action: 'retry', delaySeconds: 3 },
      }),
    );
    r.telemetry(report({ sentAt: Date.now(), settlement: failed, disposition: { action: 'retry', delaySeconds: 10 } }));
    expect(r.metrics.map(([name]) => name)).toEqual([
      ConsumerMetric.messageGroupWait,
      ConsumerMetric.retried,
      ConsumerMetric.retried,
    ]);
  });

  it('logs the redrive count of a copy ops dlq redrive sent back, and none for any other copy', () => {
    const r = recorder();
    const processed = { outcome: 'processed' as const };
    r.telemetry(report({ settlement: processed, disposition: { action: 'ack' }, redriveCount: 1 }));
    r.telemetry(report({ settlement: processed, disposition: { action: 'ack' } }));
    expect(r.logs.map(([, , fields]) => fields.redriveCount)).toEqual([1, undefined]);
    expect('redriveCount' in r.logs[1]![2]).toBe(false);
  });
});
