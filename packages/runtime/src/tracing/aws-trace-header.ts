import { defaultTextMapSetter, ROOT_CONTEXT, type SpanContext, trace } from '@opentelemetry/api';
import { AWSXRAY_TRACE_ID_HEADER, AWSXRayPropagator } from '@opentelemetry/propagator-aws-xray';

const xray = new AWSXRayPropagator();
/** The header name the propagator writes: the value is what SQS's `AWSTraceHeader` system attribute takes. */
const XRAY_HEADER = AWSXRAY_TRACE_ID_HEADER;

/**
 * A W3C span context in X-Ray's format (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1`),
 * for SQS's `AWSTraceHeader`, which carries X-Ray's format only. The conversion is the propagator's:
 * the first 8 hex digits of the trace id are X-Ray's epoch field, the other 24 its identifier.
 */
export function awsTraceHeaderOf(spanContext: SpanContext): string | undefined {
  const carrier: Record<string, string> = {};
  xray.inject(trace.setSpanContext(ROOT_CONTEXT, spanContext), carrier, defaultTextMapSetter);
  return carrier[XRAY_HEADER];
}
