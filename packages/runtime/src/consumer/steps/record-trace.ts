import { type Attributes, isSpanContextValid, type Tracer } from '@opentelemetry/api';
import type { SQSRecord } from 'aws-lambda';
import type { RocketMQMessage } from '../../rocketmq/index.ts';
import { type Delivery, messageTraceContext, SpanAttribute, startRecordSpan } from '../../tracing/index.ts';
import { HeldBackError } from '../failures/errors.ts';
import type { Disposition, RecordReport, Settlement } from '../settlement.ts';
import { redriveCountOf } from '../sqs-attributes.ts';
import type { BatchState } from './batch-state.ts';

/** What a record span's outcome attribute says: the words an operator asks about. */
export type TraceOutcome =
  | 'applied'
  | 'duplicate'
  | 'conflict'
  | 'retried'
  | 'dead-lettered'
  | 'filtered'
  | 'held-back'
  | 'failed';

/**
 * Opens the record's span when the consumer traces (kept on the batch until routing ends it) and
 * returns the record's trace id. Without a tracer nothing is made: the message's context is read
 * (a shared empty reading when it carries none) only for the id the record's log line carries.
 */
export function traceRecord<P>(
  tracer: Tracer | undefined,
  group: string,
  batch: BatchState<P>,
  record: SQSRecord,
  message: RocketMQMessage,
  attempt: number,
): string | undefined {
  const traceContext = messageTraceContext(message);
  if (!tracer) return traceContext.parent?.traceId;
  const span = startRecordSpan(tracer, {
    group,
    topic: message.topic,
    msgId: message.msgId,
    tag: message.tags,
    keys: message.keys,
    attempt,
    delivery: deliveryOf(record, message),
    traceContext,
  });
  batch.spans.set(record, span);
  // With no provider registered (xray: Lambda traces the invocation, nothing exports these spans) a
  // root span is the API's no-op with an all-zero id: the log line keeps the message's own trace id.
  return isSpanContextValid(span.span.spanContext()) ? span.traceId : traceContext.parent?.traceId;
}

/**
 * How this copy arrived: a letter `ops dlq redrive` sent back, an event the bus archive replayed,
 * a copy SQS (or RocketMQ before the bridge) delivered again, or the first delivery.
 */
export function deliveryOf(record: SQSRecord, message: RocketMQMessage): Delivery {
  if (redriveCountOf(record) > 0) return 'redriven';
  if (message.replayName !== undefined) return 'replayed';
  const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? '1') || 1;
  if (receiveCount > 1 || message.reconsumeTimes > 0) return 'redelivered';
  return 'first';
}

/** Ends every traced record's span with its outcome, disposition and what explains them. */
export function endRecordSpans<P>(batch: BatchState<P>, reports: readonly RecordReport[]): void {
  if (batch.spans.size === 0) return;
  for (const [i, record] of batch.records.entries()) {
    const span = batch.spans.get(record);
    if (!span) continue;
    const report = reports[i]!;
    const outcome = traceOutcomeOf(report.settlement, report.disposition);
    span.end(outcomeAttributes(report, outcome), outcome === 'dead-lettered' || outcome === 'failed');
  }
}

export function traceOutcomeOf(settlement: Settlement, disposition: Disposition): TraceOutcome {
  switch (settlement.outcome) {
    case 'processed':
      return 'applied';
    case 'duplicate':
      return 'duplicate';
    case 'filtered':
      return 'filtered';
    case 'failed':
      if (settlement.error instanceof HeldBackError) return 'held-back';
      if (settlement.error.code === 'PAYLOAD_CONFLICT') return 'conflict';
      if (disposition.action === 'dead-letter') return 'dead-lettered';
      if (disposition.action === 'retry' || disposition.action === 'retry-dead-letter') return 'retried';
      return 'failed';
  }
}

function outcomeAttributes(report: RecordReport, outcome: TraceOutcome): Attributes {
  const s = report.settlement;
  return {
    [SpanAttribute.outcome]: outcome,
    [SpanAttribute.disposition]: report.disposition.action,
    [SpanAttribute.attempt]: report.attempt,
    ...(report.key === undefined ? {} : { [SpanAttribute.key]: report.key }),
    ...(s.outcome === 'duplicate'
      ? {
          [SpanAttribute.duplicateReason]: s.reason,
          ...(s.winnerMsgId ? { [SpanAttribute.winnerMsgId]: s.winnerMsgId } : {}),
        }
      : {}),
    ...(s.outcome === 'failed' ? { [SpanAttribute.errorCode]: s.error.code } : {}),
  };
}
