import { Logger } from '@aws-lambda-powertools/logger';
import { SpanKind } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { SpanAttribute, traceparentOf } from '@rocketmq-lambda/runtime/tracing/index.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { type LocalRocketMQ4, startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { startOtlpReceiver } from '@rocketmq-lambda/tools/testing/otlp-receiver.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { readAllMessages } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { Message, type Producer } from 'ali-ons';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { parseBridgeConfig } from '../src/bridge-config.ts';
import { BridgeChildProcess, bridgeEnv, forwardedMsgIds } from './support/bridge-child-process.ts';
import { remotingBridgeConfig } from './support/remoting-bridge-config.ts';
import { orderServiceProducer } from './support/rocketmq4-producer.ts';

/**
 * A RocketMQ 4.7.1 producer's trace context, as far as it reaches: the producer puts its
 * `traceparent` in the message's properties (as OpenTelemetry's rocketmq-client-4.8 instrumentation
 * does); the real bridge forwards the message in a trace of its own that links to the producer's
 * span, and the points consumer commits in the bridge's trace. The producer chooses nothing in it.
 */
const ORDER_TOPIC = 'ORDER_TOPIC';
/** What the bridge process signs its span exports with, and the receiver verifies them against. */
const TRACE_EXPORT_CREDENTIALS = {
  accessKeyId: 'AKIATRACEEXPORTTEST1',
  secretAccessKey: 'trace-export-test-secret-0123456789abcdef',
  sessionToken: 'trace-export-test-session-token',
};

let rocketMq: LocalRocketMQ4 | undefined;
let producer: Producer | undefined;
const ids = new MsgIdGenerator('7F000001', 0x7ace);

beforeAll(async () => {
  rocketMq = await startLocalRocketMQ4({ topics: [{ name: ORDER_TOPIC, queues: 2 }] });
  producer = await orderServiceProducer(rocketMq.namesrvAddr);
});

afterAll(async () => {
  await producer?.close();
  await rocketMq?.stop();
});

describe('trace context: RocketMQ 4.7.1 producer → bridge → consumer → commit', () => {
  it('runs the bridge’s trace from the forward to the commit, linked to the producer’s span, for an order and its re-send', async () => {
    // Prepare: spans of all three parties collected in memory; the consumer's queue is the bridge's target
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const f = await pointsFixture({ tracer: provider.getTracer('consumer') });
    const queue = f.resources.queues['point-consumer-group']!;
    const bridge = new Bridge(
      parseBridgeConfig(
        remotingBridgeConfig(rocketMq!, [
          {
            group: `points-trace-${ids.next().slice(-6)}`,
            topic: ORDER_TOPIC,
            tagExpression: 'PAID',
            target: { kind: 'sqs', queueUrl: queue.source.url },
            dlqUrl: queue.deadLetter.url,
          },
        ]),
      ),
      {
        sqs: f.sqs,
        logger: new Logger({ serviceName: 'bridge-test', logLevel: 'ERROR' }),
        signingKeys: PROCESS_SIGNING_KEY.ring,
        tracing: { tracer: provider.getTracer('bridge'), awsTraceHeader: false },
      },
    );
    const orderService = provider.getTracer('order-service');
    /** The order sent in a producer span whose context goes into the message's properties. */
    const publish = async () => {
      const span = orderService.startSpan(`${ORDER_TOPIC} publish`, { kind: SpanKind.PRODUCER });
      const message = new Message(
        ORDER_TOPIC,
        'PAID',
        JSON.stringify({ orderNo: 'SO-E2E-T', userId: 'u-t', points: 300 }),
      );
      message.keys = ['SO-E2E-T'];
      message.properties.UNIQ_KEY = ids.next();
      message.properties.traceparent = traceparentOf(span.spanContext());
      message.properties.tracestate = 'shop=checkout';
      await producer!.send(message);
      span.end();
      return { msgId: message.properties.UNIQ_KEY, context: span.spanContext() };
    };
    // Act: the order, then the application's re-send of it (a new msgId, a new producer span)
    const first = await publish();
    const resend = await publish();
    await bridge.start();
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && f.reports.length < 2) {
      await f.drain();
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await bridge.stop();
    // Assess
    const spans = exporter.getFinishedSpans();
    const byParent = (parent: ReadableSpan) =>
      spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
    const chainOf = (sent: typeof first) => {
      const forward = spans.find(
        (s) => s.kind === SpanKind.PRODUCER && s.links.some((l) => l.context.spanId === sent.context.spanId),
      )!;
      const record = byParent(forward).find((s) => s.kind === SpanKind.CONSUMER)!;
      return { forward, record, children: byParent(record) };
    };
    // Both copies reach the consumer; which one is applied depends on which queue the broker served first.
    expect(f.reports.map((r) => r.settlement.outcome).sort()).toEqual(['duplicate', 'processed']);
    const outcomeOf = (msgId: string) =>
      f.reports.find((r) => r.msgId === msgId)!.settlement.outcome === 'processed' ? 'applied' : 'duplicate';
    for (const sent of [first, resend]) {
      const outcome = outcomeOf(sent.msgId);
      const { forward, record, children } = chainOf(sent);
      // The forward is a root of the bridge's own: the producer's span is a link, never its parent.
      expect(forward).toMatchObject({ name: `${ORDER_TOPIC} forward`, kind: SpanKind.PRODUCER });
      expect(forward.parentSpanContext).toBeUndefined();
      expect(forward.spanContext().traceId).not.toBe(sent.context.traceId);
      expect(forward.links.map((l) => l.context.spanId)).toEqual([sent.context.spanId]);
      expect(forward.links[0]!.context.traceState?.get('shop')).toBe('checkout');
      expect(record.links.map((l) => l.context.spanId)).toEqual([sent.context.spanId]);
      expect(record.attributes).toMatchObject({
        [SpanAttribute.outcome]: outcome,
        [SpanAttribute.delivery]: 'first',
        [SpanAttribute.messageId]: sent.msgId,
      });
      // The applied copy committed; a duplicate met in the same batch is judged against it without a write.
      const inBatch = f.reports.find((r) => r.msgId === sent.msgId)!.settlement;
      const expected =
        outcome === 'applied' || (inBatch.outcome === 'duplicate' && inBatch.reason !== 'in-batch-duplicate')
          ? ['commit', 'dedup', 'route']
          : ['route'];
      expect(children.map((s) => s.name).sort()).toEqual(expected);
      const last = children.find((s) => s.name === (outcome === 'applied' ? 'commit' : 'route'))!;
      for (const span of [record, last]) expect(span.spanContext().traceId).toBe(forward.spanContext().traceId);
      // The producer's vendor state stays on the link: nothing the producer wrote travels on in the context.
      expect(record.spanContext().traceState).toBeUndefined();
      expect(f.reports.find((r) => r.msgId === sent.msgId)!.traceId).toBe(forward.spanContext().traceId);
    }
    expect(await f.balance('u-t')).toBe(300);
  }, 180_000);

  it('the bridge process sends its forward spans to the OTLP endpoint itself, SigV4-signed, the last ones at drain', async () => {
    // Prepare: an OTLP/HTTP receiver of the test's own standing in for X-Ray's endpoint, which verifies each
    // request's signature with the credentials the bridge process is given; the bridge as the task runs it (its
    // own process, the stage's back end in TRACING_BACKEND, credentials from the environment as the SDK finds them)
    const receiver = await startOtlpReceiver({
      sigv4: { ...TRACE_EXPORT_CREDENTIALS, region: 'us-east-1', service: 'xray' },
    });
    const f = await pointsFixture();
    const queue = f.resources.queues['point-consumer-group']!;
    const orderService = new BasicTracerProvider().getTracer('order-service');
    const producerSpan = orderService.startSpan(`${ORDER_TOPIC} publish`, { kind: SpanKind.PRODUCER });
    const send = async (orderNo: string, traceparent?: string) => {
      const message = new Message(ORDER_TOPIC, 'PAID', JSON.stringify({ orderNo, userId: 'u-x', points: 1 }));
      message.keys = [orderNo];
      message.properties.UNIQ_KEY = ids.next();
      if (traceparent) message.properties.traceparent = traceparent;
      await producer!.send(message);
      return message.properties.UNIQ_KEY as string;
    };
    const traced = await send('SO-EXPORT-1', traceparentOf(producerSpan.spanContext()));
    producerSpan.end();
    const untraced = await send('SO-EXPORT-2');
    const startedAt = Math.floor(Date.now() / 1000);
    // Act
    const bridge = new BridgeChildProcess(
      bridgeEnv(
        remotingBridgeConfig(rocketMq!, [
          {
            group: `points-export-${ids.next().slice(-6)}`,
            topic: ORDER_TOPIC,
            tagExpression: 'PAID',
            target: { kind: 'sqs', queueUrl: queue.source.url },
            dlqUrl: queue.deadLetter.url,
          },
        ]),
        {
          TRACING_BACKEND: 'xray',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
          AWS_ACCESS_KEY_ID: TRACE_EXPORT_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: TRACE_EXPORT_CREDENTIALS.secretAccessKey,
          AWS_SESSION_TOKEN: TRACE_EXPORT_CREDENTIALS.sessionToken,
        },
      ),
    );
    try {
      await bridge.waitFor(
        'both messages forwarded',
        (lines) => ([traced, untraced].every((id) => forwardedMsgIds(lines).includes(id)) ? true : undefined),
        90_000,
      );
      bridge.kill('SIGTERM');
      const exit = await bridge.exited;
      // Assess: exported, every request signed for X-Ray by the process's credentials, by the time the drained
      // process exits; each forward in a trace of the bridge's own with an X-Ray trace id
      expect(receiver.refusals).toEqual([]);
      expect(receiver.verified()).toBeGreaterThan(0);
      expect(exit.code).toBe(0);
      expect(bridge.lines).toContainEqual(
        expect.objectContaining({ message: 'exporting forward spans', tracing: 'xray', endpoint: receiver.url }),
      );
      const forwardOf = (msgId: string) =>
        receiver.spans.filter((s) => s.attributes[SpanAttribute.messageId] === msgId && s.name.endsWith('forward'));
      const [withContext] = forwardOf(traced);
      const [withoutContext] = forwardOf(untraced);
      expect(forwardOf(traced)).toHaveLength(1);
      expect(withContext).toMatchObject({
        serviceName: 'rocketmq-bridge',
        name: `${ORDER_TOPIC} forward`,
        links: [{ traceId: producerSpan.spanContext().traceId, spanId: producerSpan.spanContext().spanId }],
      });
      expect(withContext).not.toHaveProperty('parentSpanId');
      expect(withContext!.traceId).not.toBe(producerSpan.spanContext().traceId);
      expect(forwardOf(untraced)).toHaveLength(1);
      // X-Ray's trace id: its first 8 hex digits are the epoch second the trace began.
      for (const span of [withContext!, withoutContext!]) {
        const epoch = Number.parseInt(span.traceId.slice(0, 8), 16);
        expect(epoch).toBeGreaterThanOrEqual(startedAt - 5);
        expect(epoch).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
      }
      // The envelope carries on the context of the exported span.
      // (The group starts at the topic's first offset: the earlier test's messages are forwarded too.)
      const envelopes = (await readAllMessages(f.sqs, queue.source.url))
        .map((m) => JSON.parse(m.body) as { id: string; traceparent?: string })
        .filter((e) => e.id === traced || e.id === untraced);
      expect(envelopes.map((e) => e.traceparent).sort()).toEqual(
        [withContext!, withoutContext!].map((s) => `00-${s.traceId}-${s.spanId}-01`).sort(),
      );
    } finally {
      bridge.kill('SIGKILL');
      await receiver.close();
    }
  }, 180_000);
});
