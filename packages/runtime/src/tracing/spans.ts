import {
  type Attributes,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { MessageTraceContext } from './message-trace-context.ts';

/**
 * The attributes the project's spans carry: OpenTelemetry's messaging conventions where they
 * have a name, `rocketmq.*` for the runtime's own facts. `ops trace` and dashboards read these.
 */
export const SpanAttribute = {
  system: 'messaging.system',
  operation: 'messaging.operation.type',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  consumerGroup: 'messaging.consumer.group.name',
  tag: 'messaging.rocketmq.message.tag',
  keys: 'messaging.rocketmq.message.keys',
  /** `first`, `redelivered`, `redriven` or `replayed`: whether the record span is the producer's child or links to it. */
  delivery: 'rocketmq.delivery',
  attempt: 'rocketmq.attempt',
  /** The business idempotency key (an order number). */
  key: 'rocketmq.key',
  /** What became of the record: applied, duplicate, conflict, retried, dead-lettered, filtered, held-back. */
  outcome: 'rocketmq.outcome',
  disposition: 'rocketmq.disposition',
  duplicateReason: 'rocketmq.duplicate.reason',
  winnerMsgId: 'rocketmq.duplicate.winner_msg_id',
  errorCode: 'rocketmq.error.code',
  /** Trace headers the message carried and that were ignored, as `source:reason`. */
  refusedContext: 'rocketmq.trace_context.refused',
  /** The bridge: where the forward went (`sqs`, `eventbridge`) and what became of it. */
  forwardOutcome: 'rocketmq.forward.outcome',
} as const;

/** How a copy of a message reached the consumer, which decides how its span joins the producer's trace. */
export type Delivery = 'first' | 'redelivered' | 'redriven' | 'replayed';

/** One span of the runtime, with the few operations it needs; a thin face over the API's `Span`. */
export class RuntimeSpan {
  constructor(
    private readonly tracer: Tracer,
    readonly span: Span,
  ) {}

  /** 32 lower-case hex characters: what a log line carries to find the trace. */
  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  /**
   * Runs `work` in a child span, active for its duration (so the AWS SDK's instrumentation, where a
   * provider installs one, nests its calls under it); a throw ends the child as an error and propagates.
   */
  async child<T>(name: string, work: () => Promise<T>): Promise<T> {
    const child = this.startChild(name);
    try {
      return await context.with(trace.setSpan(context.active(), child), work);
    } catch (error) {
      child.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      child.end();
    }
  }

  /** A child span the caller ends: one operation shared by several records (a packed commit). */
  startChild(name: string): Span {
    return this.tracer.startSpan(name, { kind: SpanKind.INTERNAL }, trace.setSpan(ROOT_CONTEXT, this.span));
  }

  end(attributes: Attributes, failed = false): void {
    this.span.setAttributes(attributes);
    if (failed) this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }
}

export interface RecordSpanStart {
  readonly group: string;
  readonly topic: string;
  readonly msgId: string;
  readonly tag: string | undefined;
  readonly keys: readonly string[];
  readonly attempt: number;
  readonly delivery: Delivery;
  readonly traceContext: MessageTraceContext;
}

/**
 * The consumer's span of one record (`<topic> process`, kind CONSUMER). A first delivery is the
 * child of the bridge's forward span (the envelope's context), so one trace runs from the forward
 * to the commit, and links to the producer's span. A redelivered, redriven or replayed copy starts
 * its own trace that links to both: its work happens later, for another reason, and would
 * otherwise stretch the original trace over hours or days. A message the bridge did not trace
 * (no context in the envelope) starts its own trace too: the producer's context is a link only.
 */
export function startRecordSpan(tracer: Tracer, start: RecordSpanStart): RuntimeSpan {
  const { parent, producer, refused } = start.traceContext;
  const first = start.delivery === 'first' && parent !== undefined;
  const links = linksTo(first ? [producer] : [parent, producer], first ? parent : undefined);
  const attributes: Attributes = {
    [SpanAttribute.system]: 'rocketmq',
    [SpanAttribute.operation]: 'process',
    [SpanAttribute.destination]: start.topic,
    [SpanAttribute.messageId]: start.msgId,
    [SpanAttribute.consumerGroup]: start.group,
    [SpanAttribute.keys]: [...start.keys],
    [SpanAttribute.attempt]: start.attempt,
    [SpanAttribute.delivery]: start.delivery,
    ...(start.tag === undefined ? {} : { [SpanAttribute.tag]: start.tag }),
    ...(refused ? { [SpanAttribute.refusedContext]: refused.map((r) => `${r.source}:${r.reason}`) } : {}),
  };
  const parentContext = first ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
  const span = tracer.startSpan(
    `${start.topic} process`,
    { kind: SpanKind.CONSUMER, attributes, links, root: !first },
    parentContext,
  );
  return new RuntimeSpan(tracer, span);
}

export interface ForwardSpanStart {
  readonly group: string;
  readonly topic: string;
  readonly msgId: string;
  /** `sqs` or `eventbridge`. */
  readonly target: string;
  readonly traceContext: MessageTraceContext;
}

/**
 * The bridge's span of one forward (`<topic> forward`, kind PRODUCER): the root of a trace of the
 * bridge's own, linked to the producer's span. Never its child: a producer chooses its context, and
 * as a parent it would choose our trace id (attaching our spans, the SQS `AWSTraceHeader` and the
 * consumer's invocation to another system's trace) and our sampling (a sampled flag on every
 * message). The root's sampling is the bridge's sampler's alone. Its context is what the envelope
 * and `AWSTraceHeader` carry on; the producer's trace is one link away.
 */
export function startForwardSpan(tracer: Tracer, start: ForwardSpanStart): RuntimeSpan {
  const { producer, refused } = start.traceContext;
  const attributes: Attributes = {
    [SpanAttribute.system]: 'rocketmq',
    [SpanAttribute.operation]: 'send',
    [SpanAttribute.destination]: start.topic,
    [SpanAttribute.messageId]: start.msgId,
    [SpanAttribute.consumerGroup]: start.group,
    'rocketmq.forward.target': start.target,
    ...(refused ? { [SpanAttribute.refusedContext]: refused.map((r) => `${r.source}:${r.reason}`) } : {}),
  };
  const span = tracer.startSpan(
    `${start.topic} forward`,
    { kind: SpanKind.PRODUCER, attributes, links: linksTo([producer]), root: true },
    ROOT_CONTEXT,
  );
  return new RuntimeSpan(tracer, span);
}

/** Links to each distinct context given, leaving out `except` (the span's parent, already joined). */
function linksTo(contexts: readonly (SpanContext | undefined)[], except?: SpanContext): Link[] {
  const links: Link[] = [];
  for (const c of contexts) {
    if (!c || (except && c.spanId === except.spanId && c.traceId === except.traceId)) continue;
    if (links.some((l) => l.context.spanId === c.spanId && l.context.traceId === c.traceId)) continue;
    links.push({ context: c });
  }
  return links;
}
