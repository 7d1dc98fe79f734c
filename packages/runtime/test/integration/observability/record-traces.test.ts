import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { SpanKind, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { newMsgId, orderEnvelope, pointsFixture, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { REDRIVE_COUNT_ATTRIBUTE } from '../../../src/consumer/internal.ts';
import { SpanAttribute, traceparentOf } from '../../../src/tracing/index.ts';
import { injectFault } from '../retries/sdk-faults.ts';

/** What DynamoDB answers when another transaction holds one of the items (moto never does). */
const conflict = () =>
  new TransactionCanceledException({
    message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: [{ Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }],
  });

/** Spans collected in memory: the consumer's, and a producer's and a bridge's the test makes itself. */
function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const producer = new BasicTracerProvider().getTracer('order-service');
  const bridge = new BasicTracerProvider().getTracer('bridge');
  /**
   * A producer span, ended, and the `traceparent` its RocketMQ instrumentation would put in the message; with
   * the bridge's forward span (a root linked to it), whose context the envelope carries as `hop`.
   */
  const produce = () => {
    const span = producer.startSpan('ORDER_TOPIC publish', { kind: SpanKind.PRODUCER });
    span.end();
    const forward = bridge.startSpan('ORDER_TOPIC forward', { root: true, links: [{ context: span.spanContext() }] });
    forward.end();
    return {
      span: span.spanContext(),
      traceparent: traceparentOf(span.spanContext()),
      forward: forward.spanContext(),
      hop: traceparentOf(forward.spanContext()),
    };
  };
  const spans = () => exporter.getFinishedSpans();
  const recordSpans = () => spans().filter((s) => s.kind === SpanKind.CONSUMER);
  const childrenOf = (parent: ReadableSpan) =>
    spans()
      .filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId)
      .map((s) => s.name)
      .sort();
  return { tracer: provider.getTracer('consumer'), produce, spans, recordSpans, childrenOf };
}

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('record spans (emulator)', () => {
  it('continues the bridge’s trace to the commit, linked to the producer’s span, and a duplicate copy in it too', async () => {
    // Prepare
    const t = tracing();
    const f = await pointsFixture({ tracer: t.tracer });
    const producer = t.produce();
    const body = orderEnvelope(
      { orderNo: 'SO-TRACE-1', userId: 'u-trace', points: 300 },
      { msgId: newMsgId(), userProperties: { traceparent: producer.traceparent }, traceparent: producer.hop },
    );
    // Act: the first delivery, then the same message forwarded again (a bridge ack lost)
    await f.invoke([body]);
    await f.invoke([body]);
    // Assess: both record spans are children of the bridge's forward span, in its trace, linked to the producer's
    const [applied, duplicate] = t.recordSpans();
    for (const span of [applied!, duplicate!]) {
      expect(span.spanContext().traceId).toBe(producer.forward.traceId);
      expect(span.parentSpanContext?.spanId).toBe(producer.forward.spanId);
      expect(span.links.map((l) => l.context.spanId)).toEqual([producer.span.spanId]);
      expect(span.attributes[SpanAttribute.delivery]).toBe('first');
      expect(span.attributes[SpanAttribute.key]).toBe('SO-TRACE-1');
    }
    expect(applied!.attributes[SpanAttribute.outcome]).toBe('applied');
    expect(duplicate!.attributes).toMatchObject({
      [SpanAttribute.outcome]: 'duplicate',
      [SpanAttribute.duplicateReason]: 'dedup-record-exists',
    });
    // The commit span is the record span's child, in the bridge's trace.
    expect(t.childrenOf(applied!)).toEqual(['commit', 'dedup', 'route']);
    const commit = t.spans().find((s) => s.name === 'commit')!;
    expect(commit.spanContext().traceId).toBe(producer.forward.traceId);
    // The transactional strategy finds the dedup record in the commit's condition check.
    expect(t.childrenOf(duplicate!)).toEqual(['commit', 'dedup', 'route']);
    expect(await f.balance('u-trace')).toBe(300);
    expect(f.reports.map((r) => r.traceId)).toEqual([producer.forward.traceId, producer.forward.traceId]);
  });

  it('never continues a producer’s own context: without the bridge’s, a first delivery starts its own trace', async () => {
    // Prepare: a message whose only context is what its producer wrote, naming another system's trace
    const t = tracing();
    const f = await pointsFixture({ tracer: t.tracer });
    const producer = t.produce();
    // Act
    await f.invoke([
      orderEnvelope(
        { orderNo: 'SO-TRACE-7', userId: 'u-own', points: 5 },
        { userProperties: { traceparent: producer.traceparent } },
      ),
    ]);
    // Assess: a root of the consumer's own, linked to the producer's span; the log line carries the record's trace
    const [span] = t.recordSpans();
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.spanContext().traceId).not.toBe(producer.span.traceId);
    expect(span!.links.map((l) => l.context.spanId)).toEqual([producer.span.spanId]);
    expect(span!.attributes).toMatchObject({ [SpanAttribute.delivery]: 'first', [SpanAttribute.outcome]: 'applied' });
    expect(f.reports[0]!.traceId).toBe(span!.spanContext().traceId);
  });

  it('starts a redriven letter’s own trace, linked to the original context', async () => {
    // Prepare: a conflicting copy is dead-lettered; the operator redrives the letter
    const t = tracing();
    const f = await pointsFixture({ tracer: t.tracer });
    const original = t.produce();
    const resend = t.produce();
    await f.invoke([orderEnvelope({ orderNo: 'SO-TRACE-2', userId: 'u-redrive', points: 300 })]);
    const conflicting = orderEnvelope(
      { orderNo: 'SO-TRACE-2', userId: 'u-redrive', points: 500 },
      { userProperties: { traceparent: resend.traceparent } },
    );
    await f.invoke([conflicting]);
    const letter = (await f.deadLetters())[0]!;
    const redriven = sqsRecord(letter.body, f.resources.queues['point-consumer-group']!.source.arn);
    redriven.messageAttributes[REDRIVE_COUNT_ATTRIBUTE] = { dataType: 'Number', stringValue: '1' };
    // Act
    await f.invoke([redriven]);
    // Assess
    const [first, deadLettered, again] = t.recordSpans();
    expect(first!.links).toEqual([]);
    expect(first!.parentSpanContext).toBeUndefined();
    expect(deadLettered!.links.map((l) => l.context.spanId)).toEqual([resend.span.spanId]);
    expect(deadLettered!.attributes).toMatchObject({
      [SpanAttribute.outcome]: 'conflict',
      [SpanAttribute.disposition]: 'dead-letter',
      [SpanAttribute.errorCode]: 'PAYLOAD_CONFLICT',
    });
    expect(again!.attributes[SpanAttribute.delivery]).toBe('redriven');
    expect(again!.parentSpanContext).toBeUndefined();
    expect(again!.spanContext().traceId).not.toBe(resend.span.traceId);
    expect(again!.links.map((l) => l.context.spanId)).toEqual([resend.span.spanId]);
    expect(again!.attributes[SpanAttribute.outcome]).toBe('conflict');
    expect(original.span.traceId).not.toBe(resend.span.traceId);
  });

  it.each([false, true])('links a copy SQS delivers again after a retried commit (packing %s)', async (packing) => {
    // Prepare: four TransactionConflicts outlast the in-invocation retries of the first delivery
    const t = tracing();
    const f = await pointsFixture({ tracer: t.tracer, packing });
    const fault = injectFault(f.dynamoDb, { command: 'TransactWriteItemsCommand', times: 4, error: conflict });
    const producer = t.produce();
    // Act: through the queue, as Lambda polls it
    await f.send(
      orderEnvelope(
        { orderNo: 'SO-TRACE-3', userId: 'u-retry', points: 1 },
        { userProperties: { traceparent: producer.traceparent }, traceparent: producer.hop },
      ),
    );
    await f.drain();
    // Assess: the first delivery retried in the bridge's trace, the second linked to it and applied
    expect(fault.injected).toBe(4);
    // (a packed commit spends the faults over fewer tries, so more than one delivery may be retried)
    const [retried, ...later] = t.recordSpans();
    expect(retried!.attributes).toMatchObject({
      [SpanAttribute.delivery]: 'first',
      [SpanAttribute.outcome]: 'retried',
    });
    expect(retried!.spanContext().traceId).toBe(producer.forward.traceId);
    expect(t.childrenOf(retried!)).toEqual(['commit', 'dedup', 'route']);
    expect(later.at(-1)!.attributes[SpanAttribute.outcome]).toBe('applied');
    for (const copy of later) {
      expect(copy.attributes[SpanAttribute.delivery]).toBe('redelivered');
      expect(copy.parentSpanContext).toBeUndefined();
      expect(copy.links.map((l) => l.context.spanId)).toEqual([producer.forward.spanId, producer.span.spanId]);
    }
    expect(await f.balance('u-retry')).toBe(1);
  });

  it('ignores a malformed traceparent with its reason and still consumes the message', async () => {
    const t = tracing();
    const f = await pointsFixture({ tracer: t.tracer });
    await f.invoke([
      orderEnvelope({ orderNo: 'SO-TRACE-4', userId: 'u-bad', points: 2 }, { userProperties: { traceparent: 'junk' } }),
    ]);
    const [span] = t.recordSpans();
    expect(span!.attributes[SpanAttribute.refusedContext]).toEqual(['rocketmq4-properties:TRACEPARENT_MALFORMED']);
    expect(span!.attributes[SpanAttribute.outcome]).toBe('applied');
    expect(await f.balance('u-bad')).toBe(2);
  });

  it('logs the bridge’s trace id, never an all-zero one nor the producer’s, when no provider is registered (the xray back end)', async () => {
    const t = tracing();
    const f = await pointsFixture({ tracer: trace.getTracer('no provider registered') });
    const producer = t.produce();
    const body = orderEnvelope(
      { orderNo: 'SO-TRACE-6', userId: 'u-noop', points: 4 },
      { userProperties: { traceparent: producer.traceparent }, traceparent: producer.hop },
    );
    const unbridged = orderEnvelope(
      { orderNo: 'SO-TRACE-8', userId: 'u-noop', points: 4 },
      { userProperties: { traceparent: producer.traceparent } },
    );
    await f.invoke([body]);
    await f.invoke([sqsRecord(body, f.resources.queues['point-consumer-group']!.source.arn, 2)]);
    await f.invoke([unbridged]);
    expect(f.reports.map((r) => r.traceId)).toEqual([producer.forward.traceId, producer.forward.traceId, undefined]);
  });

  it('makes no span without a tracer, and still logs the bridge’s trace id', async () => {
    const t = tracing();
    const f = await pointsFixture();
    const producer = t.produce();
    await f.invoke([
      orderEnvelope(
        { orderNo: 'SO-TRACE-5', userId: 'u-off', points: 3 },
        { userProperties: { traceparent: producer.traceparent }, traceparent: producer.hop },
      ),
    ]);
    expect(t.recordSpans()).toEqual([]);
    expect(f.reports[0]!.traceId).toBe(producer.forward.traceId);
  });
});
