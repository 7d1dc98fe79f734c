import { createTraceState, type SpanContext } from '@opentelemetry/api';

/** Why a `traceparent` was ignored: the message is consumed as if it carried none, never refused for it. */
export const TraceparentRefusal = {
  /** Not `version-traceid-parentid-flags` in lower-case hex, or a version-00 header with anything after it. */
  Malformed: 'TRACEPARENT_MALFORMED',
  /** Version `ff`, which W3C Trace Context forbids. */
  ForbiddenVersion: 'TRACEPARENT_FORBIDDEN_VERSION',
  /** A trace id of all zeros, which W3C Trace Context declares invalid. */
  ZeroTraceId: 'TRACEPARENT_ZERO_TRACE_ID',
  /** A parent id of all zeros, which W3C Trace Context declares invalid. */
  ZeroSpanId: 'TRACEPARENT_ZERO_SPAN_ID',
} as const;
export type TraceparentRefusal = (typeof TraceparentRefusal)[keyof typeof TraceparentRefusal];

export type TraceparentReading =
  | { readonly ok: true; readonly spanContext: SpanContext }
  | { readonly ok: false; readonly reason: TraceparentRefusal };

/**
 * W3C Trace Context level 1, §3.2: `00-<32 hex>-<16 hex>-<2 hex>`, lower case. A later version
 * may append fields after another `-`; its first four are read the same way (§4.3).
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
/** W3C's limit on a tracestate header (32 members of at most 256 characters each); beyond it the state is dropped. */
const TRACESTATE_MAX_CHARS = 512;

/**
 * Reads a producer's `traceparent` (and `tracestate`) strictly. The OpenTelemetry API's own
 * propagator accepts the same grammar but answers an invalid header with nothing; the reason is
 * kept here so that a span and a log line can say why a message's context was ignored.
 */
export function readTraceparent(traceparent: string, tracestate?: string): TraceparentReading {
  const match = TRACEPARENT.exec(traceparent);
  if (!match) return { ok: false, reason: TraceparentRefusal.Malformed };
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === 'ff') return { ok: false, reason: TraceparentRefusal.ForbiddenVersion };
  if (version === '00' && rest !== undefined) return { ok: false, reason: TraceparentRefusal.Malformed };
  if (traceId === ZERO_TRACE_ID) return { ok: false, reason: TraceparentRefusal.ZeroTraceId };
  if (spanId === ZERO_SPAN_ID) return { ok: false, reason: TraceparentRefusal.ZeroSpanId };
  const state = tracestate && tracestate.length <= TRACESTATE_MAX_CHARS ? createTraceState(tracestate) : undefined;
  return {
    ok: true,
    spanContext: {
      traceId: traceId!,
      spanId: spanId!,
      // Only the sampled bit is defined at version 00; the others are the sender's and not carried on.
      traceFlags: Number.parseInt(flags!, 16) & 1,
      isRemote: true,
      ...(state ? { traceState: state } : {}),
    },
  };
}

/** The `traceparent` of a span context, as W3C version 00 writes it. */
export function traceparentOf(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 1).toString(16).padStart(2, '0')}`;
}
