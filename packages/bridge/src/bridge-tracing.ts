import { isSpanContextValid, type Tracer, trace } from '@opentelemetry/api';
import { TRACER_NAMES, TracingBackend } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  awsTraceHeaderOf,
  producerTraceContext,
  type RuntimeSpan,
  SpanAttribute,
  startForwardSpan,
  traceparentOf,
} from '@rocketmq-lambda/runtime/tracing/index.ts';
import type { ReceivedMessage } from './types.ts';

/** How the bridge traces its forwards; absent when the stage's tracing backend is `off`. */
export interface BridgeTracing {
  readonly tracer: Tracer;
  /** X-Ray back end: each forward also carries its context in X-Ray's format (SQS `AWSTraceHeader`). */
  readonly awsTraceHeader: boolean;
}

/** The bridge's tracing for a backend: none when off, the global tracer otherwise. */
export function bridgeTracingOf(backend: TracingBackend): BridgeTracing | undefined {
  if (backend === TracingBackend.off) return undefined;
  return { tracer: trace.getTracer(TRACER_NAMES.bridge), awsTraceHeader: backend === TracingBackend.xray };
}

/** One forward's span and what it hands on: the envelope's CloudEvents attributes and, for X-Ray, its header. */
export interface TracedForward {
  readonly span: RuntimeSpan;
  readonly hop?: { traceparent: string; tracestate?: string };
  readonly awsTraceHeader?: string;
}

/**
 * Opens the forward span of one received message: a root of the bridge's own, linked to the
 * producer's context its properties carry. Without a registered provider the span is the API's
 * no-op, whose context is invalid: the envelope then carries no context of the bridge's, and the
 * SQS entry no `AWSTraceHeader`.
 */
export function traceForward(
  tracing: BridgeTracing,
  message: ReceivedMessage,
  group: string,
  target: string,
): TracedForward {
  const span = startForwardSpan(tracing.tracer, {
    group,
    topic: message.topic,
    msgId: message.msgId,
    target,
    traceContext: producerTraceContext(message.userProperties, message.traceContext),
  });
  const context = span.span.spanContext();
  if (!isSpanContextValid(context)) return { span };
  const tracestate = context.traceState?.serialize();
  const header = tracing.awsTraceHeader ? awsTraceHeaderOf(context) : undefined;
  return {
    span,
    hop: { traceparent: traceparentOf(context), ...(tracestate ? { tracestate } : {}) },
    ...(header ? { awsTraceHeader: header } : {}),
  };
}

/** What became of a forward, on its span. */
export function endForward(forward: TracedForward | undefined, outcome: 'forwarded' | 'dead-lettered' | 'not-acked') {
  forward?.span.end({ [SpanAttribute.forwardOutcome]: outcome }, outcome === 'not-acked');
}
