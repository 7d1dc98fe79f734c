import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { SpanKind } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parseBridgeConfig } from '../../bridge/bridge-config.ts';
import { RouteMetrics } from '../../bridge/bridge-metrics.ts';
import type { BridgeTracing } from '../../bridge/bridge-tracing.ts';
import { DeadLetterQueue } from '../../bridge/dead-letter-queue.ts';
import { RouteForwarder } from '../../bridge/route-forwarder.ts';
import { SqsTarget } from '../../bridge/sqs-target.ts';
import { createSqs, emulatorConfig } from '../../lib/aws/index.ts';
import { parseEnvelope } from '../../lib/rocketmq/index.ts';
import { messageTraceContext, SpanAttribute, traceparentOf } from '../../lib/tracing/index.ts';
import { interceptCommands } from '../../scripts/instrumentation/command-interceptor.ts';
import { receivedMessage } from './support/received-messages.ts';

const MAX_BYTES = 262_144;
let endpoint: string;
beforeAll(() => {
  endpoint = inject('emulatorEndpoint');
});

/** A forwarder onto a fresh emulator queue, tracing into memory; `awsTraceHeader` as the X-Ray back end sets it. */
async function tracedForwarder(awsTraceHeader: boolean) {
  const sqs = createSqs(emulatorConfig(endpoint));
  const name = `trace-${randomUUID().slice(0, 8)}`;
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl!;
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
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
  return { forwarder, exporter, producer: provider.getTracer('order-service'), received, sentEntries };
}

describe('the bridge continues the producer’s trace (emulator)', () => {
  it('forwards in a span that is the producer span’s child and link, and hands its context on in the envelope', async () => {
    // Prepare: a RocketMQ 4.x producer's context in the message's user properties
    const t = await tracedForwarder(false);
    const producerSpan = t.producer.startSpan('ORDER_TOPIC publish', { kind: SpanKind.PRODUCER });
    producerSpan.end();
    const producer = producerSpan.spanContext();
    const message = receivedMessage({ userProperties: { traceparent: traceparentOf(producer), tracestate: 'k=v' } });
    // Act
    await t.forwarder.forwardBatch([message]);
    // Assess
    const forward = t.exporter
      .getFinishedSpans()
      .find((s) => s.kind === SpanKind.PRODUCER && s.name === 'ORDER_TOPIC forward')!;
    expect(forward.spanContext().traceId).toBe(producer.traceId);
    expect(forward.parentSpanContext?.spanId).toBe(producer.spanId);
    expect(forward.links.map((l) => l.context.spanId)).toEqual([producer.spanId]);
    expect(forward.attributes[SpanAttribute.forwardOutcome]).toBe('forwarded');
    const [sqsMessage] = await t.received();
    const envelope = parseEnvelope(sqsMessage!.Body!);
    const context = messageTraceContext(envelope);
    expect(context.parent).toMatchObject({ traceId: producer.traceId, spanId: forward.spanContext().spanId });
    expect(context.producer?.spanId).toBe(producer.spanId);
    expect(envelope.tracestate).toBe('k=v');
    expect(t.sentEntries[0]).not.toHaveProperty('MessageSystemAttributes');
  });

  it('sets AWSTraceHeader in X-Ray’s format when X-Ray is the back end, from a 5.x trace-context property', async () => {
    const t = await tracedForwarder(true);
    const traceId = '5759e988bd862e3fe1be46a994272793';
    await t.forwarder.forwardBatch([receivedMessage({ traceContext: `00-${traceId}-53995c3f42cd8ad8-01` })]);
    const forward = t.exporter.getFinishedSpans()[0]!;
    const [sqsMessage] = await t.received();
    expect(t.sentEntries[0]!.MessageSystemAttributes).toEqual({
      AWSTraceHeader: {
        DataType: 'String',
        StringValue: `Root=1-5759e988-bd862e3fe1be46a994272793;Parent=${forward.spanContext().spanId};Sampled=1`,
      },
    });
    expect(parseEnvelope(sqsMessage!.Body!).systemProperties.TRACE_CONTEXT).toBe(`00-${traceId}-53995c3f42cd8ad8-01`);
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
