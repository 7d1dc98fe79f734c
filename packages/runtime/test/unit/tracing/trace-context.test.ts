import { describe, expect, it } from 'vitest';
import { parseEnvelope, writeEnvelope } from '../../../src/rocketmq/index.ts';
import {
  awsTraceHeaderOf,
  messageTraceContext,
  producerTraceContext,
  readTraceparent,
  TraceContextSource,
  TraceparentRefusal,
  traceparentOf,
} from '../../../src/tracing/index.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const VALID = `00-${TRACE_ID}-${SPAN_ID}-01`;

const message = (fields: Parameters<typeof writeEnvelope>[0]) => parseEnvelope(writeEnvelope(fields));

describe('readTraceparent (W3C Trace Context, strict)', () => {
  it('reads a version-00 header into a remote span context, sampled bit only, with its tracestate', () => {
    const reading = readTraceparent(`00-${TRACE_ID}-${SPAN_ID}-03`, 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    expect(reading.ok).toBe(true);
    if (!reading.ok) return;
    expect(reading.spanContext).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true });
    expect(reading.spanContext.traceState?.get('congo')).toBe('t61rcWkgMzE');
    expect(traceparentOf(reading.spanContext)).toBe(VALID);
  });

  it('reads the first four fields of a later version and ignores what follows', () => {
    expect(readTraceparent(`cc-${TRACE_ID}-${SPAN_ID}-01-what-the-future-holds`).ok).toBe(true);
  });

  it.each([
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`, TraceparentRefusal.Malformed],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`, TraceparentRefusal.Malformed],
    ['version 00 with a fifth field', `${VALID}-extra`, TraceparentRefusal.Malformed],
    ['a later version glued to more text', `cc-${TRACE_ID}-${SPAN_ID}-01x`, TraceparentRefusal.Malformed],
    ['empty', '', TraceparentRefusal.Malformed],
    ['garbage', 'not a traceparent \u202e', TraceparentRefusal.Malformed],
    ['version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`, TraceparentRefusal.ForbiddenVersion],
    ['a zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`, TraceparentRefusal.ZeroTraceId],
    ['a zero parent id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`, TraceparentRefusal.ZeroSpanId],
  ])('ignores %s with its reason', (_, header, reason) => {
    expect(readTraceparent(header)).toEqual({ ok: false, reason });
  });

  it('drops a tracestate over W3C’s 512 characters and keeps the context', () => {
    const reading = readTraceparent(VALID, `a=${'x'.repeat(600)}`);
    expect(reading.ok).toBe(true);
    expect(reading.ok ? reading.spanContext.traceState : 'refused').toBeUndefined();
  });
});

describe('a message’s trace context', () => {
  it('reads RocketMQ 4.x’s traceparent/tracestate user properties as the producer’s context, never as the parent', () => {
    const context = messageTraceContext(
      message({
        topic: 'T',
        msgId: 'A'.repeat(32),
        body: '{}',
        userProperties: { traceparent: VALID, tracestate: 'k=v' },
      }),
    );
    expect(context.producer).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID });
    expect(context.producer?.traceState?.get('k')).toBe('v');
    expect(context.parent).toBeUndefined();
    expect(producerTraceContext({ traceparent: VALID }, undefined).parent).toBeUndefined();
  });

  it('reads RocketMQ 5.x’s trace-context system property, kept by the envelope as TRACE_CONTEXT', () => {
    const parsed = message({ topic: 'T', msgId: 'A'.repeat(32), body: '{}', traceContext: VALID });
    expect(parsed.systemProperties.TRACE_CONTEXT).toBe(VALID);
    expect(messageTraceContext(parsed).producer).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID });
    expect(messageTraceContext(parsed).parent).toBeUndefined();
  });

  it('continues the envelope’s own traceparent (the bridge’s span) and keeps the producer’s for a link', () => {
    const hop = `00-${TRACE_ID}-${'1'.repeat(16)}-01`;
    const context = messageTraceContext(
      message({
        topic: 'T',
        msgId: 'A'.repeat(32),
        body: '{}',
        userProperties: { traceparent: VALID },
        traceparent: hop,
      }),
    );
    expect(context.parent?.spanId).toBe('1'.repeat(16));
    expect(context.producer?.spanId).toBe(SPAN_ID);
    expect(context.refused).toBeUndefined();
  });

  it('ignores a malformed header with a classified reason; the producer’s context stays a link', () => {
    const context = messageTraceContext(
      message({
        topic: 'T',
        msgId: 'A'.repeat(32),
        body: '{}',
        userProperties: { traceparent: VALID },
        traceparent: '00-broken',
      }),
    );
    expect(context.parent).toBeUndefined();
    expect(context.producer?.spanId).toBe(SPAN_ID);
    expect(context.refused).toEqual([{ source: TraceContextSource.Envelope, reason: TraceparentRefusal.Malformed }]);
    expect(producerTraceContext({ traceparent: `ff-${TRACE_ID}-${SPAN_ID}-01` }, undefined)).toEqual({
      refused: [{ source: TraceContextSource.Rocketmq4Properties, reason: TraceparentRefusal.ForbiddenVersion }],
    });
    const both = messageTraceContext(
      message({ topic: 'T', msgId: 'A'.repeat(32), body: '{}', traceContext: 'x', traceparent: 'y' }),
    );
    expect(both.parent).toBeUndefined();
    expect(both.refused?.map((r) => r.source)).toEqual([
      TraceContextSource.Envelope,
      TraceContextSource.Rocketmq5SystemProperty,
    ]);
  });

  it('is one shared empty reading for a message without any header', () => {
    const a = messageTraceContext(message({ topic: 'T', msgId: 'A'.repeat(32), body: '{}' }));
    const b = messageTraceContext(message({ topic: 'T', msgId: 'B'.repeat(32), body: '{}' }));
    expect(a).toEqual({});
    expect(a).toBe(b);
  });
});

describe('AWSTraceHeader', () => {
  it('converts a W3C context into X-Ray’s format', () => {
    const reading = readTraceparent(VALID);
    if (!reading.ok) throw new Error('valid');
    expect(awsTraceHeaderOf(reading.spanContext)).toBe(
      `Root=1-${TRACE_ID.slice(0, 8)}-${TRACE_ID.slice(8)};Parent=${SPAN_ID};Sampled=1`,
    );
  });
});
