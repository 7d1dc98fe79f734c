import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { SpanKind } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  type Sampler,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { messageTraceContext, SpanAttribute, traceparentOf } from '@rocketmq-lambda/runtime/tracing/index.ts';
import { interceptCommands } from '@rocketmq-lambda/tools/instrumentation/command-interceptor.ts';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parseBridgeConfig } from '../src/bridge-config.ts';
import { RouteMetrics } from '../src/bridge-metrics.ts';
import type { BridgeTracing } from '../src/bridge-tracing.ts';
import { DeadLetterQueue } from '../src/dead-letter-queue.ts';
import { RouteForwarder } from '../src/route-forwarder.ts';
import { SqsTarget } from '../src/sqs-target.ts';
import { receivedMessage } from './support/received-messages.ts';

const MAX_BYTES = 262_144;
let endpoint: string;
beforeAll(() => {
  endpoint = inject('emulatorEndpoint');
});

/**
 * A forwarder onto a fresh emulator queue, tracing into memory; `awsTraceHeader` as the X-Ray back end sets it,
 * `sampler` the bridge's (default the SDK's: parent-based, always on for a root).
 */
async function tracedForwarder(
  awsTraceHeader: boolean,
  sampler: Sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() }),
) {
  const sqs = createSqs(emulatorConfig(endpoint));
  const name = `trace-${randomUUID().slice(0, 8)}`;
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracing: BridgeTracing = { tracer: provider.getTracer('bridge'), awsTraceHeader };
  const route = parseBridgeConfig({
    proxyEndpoint: '127.0.0.1:8081',
    routes: [{ group: 'G', topic: 'ORDER_TOPIC', target: { kind: 'sqs', queueUrl }, dlqUrl }],
  }).routes[0]!;
  const forwarder = new RouteForwarder({
    route,
    clusterName: 'test',
    target: new SqsTarget(sqs, queueUrl, MAX_BYTES),
    deadLetters: new DeadLetterQueue(sqs, dlqUrl),
    maxMessageBytes: MAX_BYTES,
    metrics: new RouteMetrics('G', 'ORDER_TOPIC'),
    logger: new Logger({ serviceName: 'bridge-test', logLevel: 'SILENT' }),
    tracing,
    ack: async (messages) => messages.map(() => ({ ok: true })),
  });
  // moto's SendMessageBatch drops MessageSystemAttributes (docs/emulator.md): the entries are read as sent.
  const sentEntries: Array<Record<string, unknown>> = [];
  interceptCommands(sqs, 'record-sent-entries', async (command, send) => {
    if (command.name === 'SendMessageBatchCommand')
      sentEntries.push(...(command.input.Entries as Array<Record<string, unknown>>));
    return send();
  });
  const received = async () =>
    (
      await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ['All'],
        }),
      )
    ).Messages ?? [];
  const producer = new BasicTracerProvider().getTracer('order-service');
  return { forwarder, exporter, producer, received, sentEntries };
}

describe('the bridge traces its forwards in traces of its own, linked to the producer’s (emulator)', () => {
  it('forwards in a root span linked to the producer span, and hands its own context on in the envelope', async () => {
    // Prepare: a RocketMQ 4.x producer's context in the message's user properties
    const t = await tracedForwarder(false);
    const producerSpan = t.producer.startSpan('ORDER_TOPIC publish', { kind: SpanKind.PRODUCER });
    producerSpan.end();
    const producer = producerSpan.spanContext();
    const message = receivedMessage({ userProperties: { traceparent: traceparentOf(producer), tracestate: 'k=v' } });
    // Act
    await t.forwarder.forwardBatch([message]);
    // Assess: the producer's span is a link, never the parent; its trace id and its state go no further
    const forward = t.exporter
      .getFinishedSpans()
      .find((s) => s.kind === SpanKind.PRODUCER && s.name === 'ORDER_TOPIC forward')!;
    expect(forward.parentSpanContext).toBeUndefined();
    expect(forward.spanContext().traceId).not.toBe(producer.traceId);
    expect(forward.links.map((l) => l.context.spanId)).toEqual([producer.spanId]);
    expect(forward.links[0]!.context.traceState?.get('k')).toBe('v');
    expect(forward.attributes[SpanAttribute.forwardOutcome]).toBe('forwarded');
    const [sqsMessage] = await t.received();
    const envelope = parseEnvelope(sqsMessage!.Body!);
    const context = messageTraceContext(envelope);
    expect(context.parent).toMatchObject({
      traceId: forward.spanContext().traceId,
      spanId: forward.spanContext().spanId,
    });
    expect(context.producer?.spanId).toBe(producer.spanId);
    expect(envelope.tracestate).toBeUndefined();
    expect(t.sentEntries[0]).not.toHaveProperty('MessageSystemAttributes');
  });

  it('sets AWSTraceHeader in X-Ray’s format from the bridge’s own trace, never the 5.x producer’s', async () => {
    const t = await tracedForwarder(true);
    const traceId = '5759e988bd862e3fe1be46a994272793';
    await t.forwarder.forwardBatch([receivedMessage({ traceContext: `00-${traceId}-53995c3f42cd8ad8-01` })]);
    const forward = t.exporter.getFinishedSpans()[0]!;
    const own = forward.spanContext().traceId;
    const [sqsMessage] = await t.received();
    expect(own).not.toBe(traceId);
    expect(t.sentEntries[0]!.MessageSystemAttributes).toEqual({
      AWSTraceHeader: {
        DataType: 'String',
        StringValue: `Root=1-${own.slice(0, 8)}-${own.slice(8)};Parent=${forward.spanContext().spanId};Sampled=1`,
      },
    });
    expect(parseEnvelope(sqsMessage!.Body!).systemProperties.TRACE_CONTEXT).toBe(`00-${traceId}-53995c3f42cd8ad8-01`);
  });

  it.each([
    ['a producer’s sampled flag does not make the bridge sample', new AlwaysOffSampler(), '01', 0],
    ['a producer’s unsampled flag does not stop the bridge sampling', new AlwaysOnSampler(), '00', 1],
  ])('samples by its own decision: %s', async (_, root, producerFlags, sampled) => {
    // Prepare: the bridge's sampler, parent-based as the SDK's default is, so a parent's decision would rule
    const t = await tracedForwarder(true, new ParentBasedSampler({ root }));
    const victim = '4bf92f3577b34da6a3ce929d0e0e4736';
    // Act: a producer naming another system's trace and a sampling decision
    await t.forwarder.forwardBatch([
      receivedMessage({ userProperties: { traceparent: `00-${victim}-00f067aa0ba902b7-${producerFlags}` } }),
    ]);
    // Assess: the SQS entry's X-Ray header and the envelope carry the bridge's trace and decision only
    const header = (t.sentEntries[0]!.MessageSystemAttributes as { AWSTraceHeader: { StringValue: string } })
      .AWSTraceHeader.StringValue;
    expect(header).toMatch(new RegExp(`;Sampled=${sampled}$`));
    expect(header).not.toContain(victim.slice(8));
    const [sqsMessage] = await t.received();
    const traceparent = parseEnvelope(sqsMessage!.Body!).traceparent!;
    expect(traceparent).toMatch(new RegExp(`-0${sampled}$`));
    expect(traceparent).not.toContain(victim);
  });

  it('starts a trace of its own for a message without a context, and ignores a malformed one with its reason', async () => {
    const t = await tracedForwarder(false);
    await t.forwarder.forwardBatch([receivedMessage({ userProperties: { traceparent: 'ff-nonsense' } })]);
    const forward = t.exporter.getFinishedSpans()[0]!;
    expect(forward.parentSpanContext).toBeUndefined();
    expect(forward.attributes[SpanAttribute.refusedContext]).toEqual(['rocketmq4-properties:TRACEPARENT_MALFORMED']);
    const [sqsMessage] = await t.received();
    expect(parseEnvelope(sqsMessage!.Body!).traceparent).toBe(traceparentOf(forward.spanContext()));
  });
});
