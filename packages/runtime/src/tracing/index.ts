/**
 * W3C Trace Context across the hops of a RocketMQ message: read from the producer's properties
 * (4.x user properties, 5.x trace-context system property) or the envelope, validated strictly,
 * and continued by the bridge's forward span and the consumer's record span, through the
 * vendor-neutral OpenTelemetry API. Without a tracer provider registered every span is a no-op.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */

export { awsTraceHeaderOf } from './aws-trace-header.ts';
export {
  type MessageTraceContext,
  messageTraceContext,
  producerTraceContext,
  type RefusedTraceContext,
  TraceContextSource,
} from './message-trace-context.ts';
export {
  type Delivery,
  type ForwardSpanStart,
  type RecordSpanStart,
  RuntimeSpan,
  SpanAttribute,
  startForwardSpan,
  startRecordSpan,
} from './spans.ts';
export { readTraceparent, type TraceparentReading, TraceparentRefusal, traceparentOf } from './traceparent.ts';
