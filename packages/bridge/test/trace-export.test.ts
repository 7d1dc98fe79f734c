import { trace } from '@opentelemetry/api';
import { startOtlpReceiver } from '@rocketmq-lambda/tools/testing/otlp-receiver.ts';
import type { AwsCredentialIdentity } from '@smithy/types';
import { afterEach, describe, expect, it } from 'vitest';
import { startTraceExport, type TraceExport } from '../src/trace-export.ts';

/** The credentials the receiver verifies signatures against. */
const CREDENTIALS = {
  accessKeyId: 'AKIATRACEEXPORTUNIT1',
  secretAccessKey: 'trace-export-unit-secret-0123456789abcdef',
  sessionToken: 'trace-export-unit-session-token',
};
const REGION = 'eu-west-1';

/** The bridge's warnings, as its logger receives them. */
function warnings() {
  const lines: Array<{ message: string; attributes: Record<string, unknown> }> = [];
  const log = { warn: (message: string, attributes: Record<string, unknown>) => lines.push({ message, attributes }) };
  return { lines, log };
}

let started: TraceExport | undefined;
afterEach(async () => {
  await started?.shutdown();
  started = undefined;
});

/**
 * The export started against a receiver standing in for X-Ray's endpoint (which verifies each
 * request's signature with {@link CREDENTIALS}), signing with `credentials`; then `count` spans
 * ended and the export drained, as the bridge drains it when it stops.
 */
async function exportTo(count: number, credentials: AwsCredentialIdentity) {
  const receiver = await startOtlpReceiver({ sigv4: { ...CREDENTIALS, region: REGION, service: 'xray' } });
  const w = warnings();
  try {
    started = startTraceExport(
      'xray',
      { AWS_REGION: REGION, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url },
      { log: w.log, credentials: async () => credentials },
    );
    const tracer = trace.getTracer('trace-export-test');
    for (let i = 0; i < count; i++) tracer.startSpan(`span ${i}`).end();
    await started!.shutdown();
    started = undefined;
  } finally {
    await receiver.close();
  }
  return { receiver, warnings: w.lines };
}

describe('the bridge sends its spans to X-Ray’s OTLP endpoint itself', () => {
  it('sends to the endpoint of the task’s region by default, and refuses to start without a region', async () => {
    const { log } = warnings();
    started = startTraceExport('xray', { AWS_REGION: 'ap-northeast-1' }, { log });
    expect(started?.endpoint).toBe('https://xray.ap-northeast-1.amazonaws.com/v1/traces');
    expect(() => startTraceExport('adot', {}, { log })).toThrow(
      /TRACING_BACKEND is adot but neither AWS_REGION nor AWS_DEFAULT_REGION is set/,
    );
    expect(startTraceExport('off', {}, { log })).toBeUndefined();
  });

  it('signs every export with SigV4 for the xray service, as the receiver verifies it', async () => {
    const { receiver, warnings } = await exportTo(3, CREDENTIALS);
    expect(receiver.refusals).toEqual([]);
    expect(receiver.verified()).toBeGreaterThan(0);
    expect(receiver.spans.map((s) => s.name).sort()).toEqual(['span 0', 'span 1', 'span 2']);
    expect(receiver.spans.every((s) => s.serviceName === 'rocketmq-bridge')).toBe(true);
    expect(warnings).toEqual([]);
  });

  it('logs an export the endpoint refuses, with its answer; those spans are lost, and the drain still ends', async () => {
    const { receiver, warnings } = await exportTo(2, { ...CREDENTIALS, secretAccessKey: 'not-the-secret' });
    expect(receiver.refusals).toEqual(['signature mismatch']);
    expect(receiver.spans).toEqual([]);
    expect(warnings).toEqual([
      {
        message: 'span export failed; these spans are lost',
        attributes: {
          spans: 2,
          endpoint: receiver.url,
          error: 'the OTLP endpoint answered 403: {"message":"signature mismatch"}',
        },
      },
    ]);
  });
});
