import type { SpanContext } from '@opentelemetry/api';
import { ROCKETMQ5_TRACE_CONTEXT_PROPERTY, type RocketMQMessage } from '../rocketmq/index.ts';
import { readTraceparent, type TraceparentRefusal } from './traceparent.ts';

/** Where a message's trace context was read from. */
export const TraceContextSource = {
  /** The envelope's CloudEvents distributed-tracing attributes: the bridge's forward span. */
  Envelope: 'envelope',
  /** RocketMQ 4.x: the `traceparent`/`tracestate` user properties OpenTelemetry's instrumentation sets. */
  Rocketmq4Properties: 'rocketmq4-properties',
  /** RocketMQ 5.x: the message's trace-context system property (`traceparent` only). */
  Rocketmq5SystemProperty: 'rocketmq5-system-property',
} as const;
export type TraceContextSource = (typeof TraceContextSource)[keyof typeof TraceContextSource];

/** A trace header that was present and ignored: which one, and why. */
export interface RefusedTraceContext {
  readonly source: TraceContextSource;
  readonly reason: TraceparentRefusal;
}

/** What a message says of its trace. Every field is absent on a message that carries no context. */
export interface MessageTraceContext {
  /**
   * The context the consumer's record span continues: the bridge's forward span, as the envelope's
   * own attributes carry it (under the bridge's signature). Never the producer's: a producer chooses
   * its context, and would otherwise choose the trace and the sampling of our spans.
   */
  readonly parent?: SpanContext;
  /** The producer's own context, as the RocketMQ message carries it: linked to, never continued. */
  readonly producer?: SpanContext;
  readonly refused?: readonly RefusedTraceContext[];
}

/** The reading of a message without any trace header: shared, so that the untraced path allocates nothing. */
const NO_CONTEXT: MessageTraceContext = Object.freeze({});

/** The producer's context in RocketMQ's own properties, as the bridge receives a message. */
export function producerTraceContext(
  userProperties: Readonly<Record<string, string>>,
  systemTraceContext: string | undefined,
): MessageTraceContext {
  const user = userProperties.traceparent;
  if (user !== undefined)
    return read('producer', TraceContextSource.Rocketmq4Properties, user, userProperties.tracestate);
  if (systemTraceContext !== undefined)
    return read('producer', TraceContextSource.Rocketmq5SystemProperty, systemTraceContext);
  return NO_CONTEXT;
}

/**
 * A consumed message's context. The envelope's own attributes, set by the bridge, are the parent:
 * the record's span continues the bridge's forward span. The producer's properties are read for
 * a link only; an envelope without the bridge's attributes (the local run, a bridge with tracing
 * off) gives no parent, and the record starts a trace of its own.
 */
export function messageTraceContext(message: RocketMQMessage): MessageTraceContext {
  const producer = producerTraceContext(
    message.userProperties,
    message.systemProperties[ROCKETMQ5_TRACE_CONTEXT_PROPERTY],
  );
  if (message.traceparent === undefined) return producer;
  const hop = read('parent', TraceContextSource.Envelope, message.traceparent, message.tracestate);
  const refused = [...(hop.refused ?? []), ...(producer.refused ?? [])];
  return {
    ...(hop.parent ? { parent: hop.parent } : {}),
    ...(producer.producer ? { producer: producer.producer } : {}),
    ...(refused.length > 0 ? { refused } : {}),
  };
}

function read(
  as: 'parent' | 'producer',
  source: TraceContextSource,
  traceparent: string,
  tracestate?: string,
): MessageTraceContext {
  const reading = readTraceparent(traceparent, tracestate);
  if (!reading.ok) return { refused: [{ source, reason: reading.reason }] };
  return { [as]: reading.spanContext };
}
