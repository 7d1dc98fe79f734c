import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { parseEnvelope, type SigningKeyRing, signatureRefusal } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { type BridgeConfigInput, type BridgeRoute, parseBridgeConfig } from '../src/bridge-config.ts';
import { RouteMetrics } from '../src/bridge-metrics.ts';
import { DEAD_LETTER_REASON_ATTRIBUTE, DeadLetterQueue } from '../src/dead-letter-queue.ts';
import { RouteForwarder } from '../src/route-forwarder.ts';
import { BRIDGE_SQS_CLIENT_SETTINGS, SqsTarget } from '../src/sqs-target.ts';
import type { ReceivedMessage } from '../src/types.ts';
import { receivedMessage } from './support/received-messages.ts';
import { failBatchEntries, failBatchRequests } from './support/sqs-batch-faults.ts';

const MAX_BYTES = 262_144;
const logger = new Logger({ serviceName: 'bridge-test', logLevel: 'SILENT' });
let endpoint: string;

beforeAll(() => {
  endpoint = inject('emulatorEndpoint');
});

async function queuePair(fifo = false) {
  // The bridge's own client settings (no MD5 check, the middleware stack resolved once per command class).
  const sqs = createSqs(emulatorConfig(endpoint), BRIDGE_SQS_CLIENT_SETTINGS);
  const name = `bridge-${randomUUID().slice(0, 8)}`;
  const suffix = fifo ? '.fifo' : '';
  const attributes = fifo ? { FifoQueue: 'true' } : {};
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}${suffix}`, Attributes: attributes })))
    .QueueUrl!;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq${suffix}`, Attributes: attributes })))
    .QueueUrl!;
  return { sqs, queueUrl, dlqUrl };
}

/**
 * A forwarder on real emulator queues; `acks` records each acked msgId, `ack` runs at each batch's ack and fails it by
 * throwing.
 */
function forwarderFor(
  sqs: SQSClient,
  queueUrl: string,
  dlqUrl: string,
  fifo = false,
  ack?: (messages: readonly ReceivedMessage[]) => Promise<void>,
  extra: { route?: Partial<BridgeConfigInput['routes'][number]>; signingKeys?: SigningKeyRing } = {},
) {
  const route: BridgeRoute = parseBridgeConfig({
    proxyEndpoint: '127.0.0.1:8081',
    routes: [{ group: 'G', topic: 'ORDER_TOPIC', fifo, target: { kind: 'sqs', queueUrl }, dlqUrl, ...extra.route }],
  }).routes[0]!;
  const acks: string[] = [];
  const metrics = new RouteMetrics('G', 'ORDER_TOPIC');
  const forwarder = new RouteForwarder({
    route,
    clusterName: 'test',
    target: new SqsTarget(sqs, queueUrl, MAX_BYTES, fifo),
    deadLetters: new DeadLetterQueue(sqs, dlqUrl),
    maxMessageBytes: MAX_BYTES,
    metrics,
    logger,
    ...(extra.signingKeys ? { signingKeys: extra.signingKeys } : {}),
    ack: async (messages) => {
      try {
        await ack?.(messages);
      } catch (err) {
        return messages.map(() => ({ ok: false, reason: String(err) }));
      }
      acks.push(...messages.map((m) => m.msgId));
      return messages.map(() => ({ ok: true }));
    },
  });
  return { forwarder, acks, metrics };
}

/** Receives until empty; deletes what it got, since SQS FIFO withholds a group while any of it is in flight. */
async function drain(sqs: SQSClient, queueUrl: string) {
  const out: { body: string; groupId?: string; attributes: Record<string, string> }[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 300,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
    );
    if (Messages.length === 0) return out;
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
    for (const m of Messages) {
      out.push({
        body: m.Body!,
        ...(m.Attributes?.MessageGroupId ? { groupId: m.Attributes.MessageGroupId } : {}),
        attributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? '']),
        ),
      });
    }
  }
}

async function visibleCount(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages ?? 0);
}

/**
 * Forwards `receive`, then hands back what was not acked, in receive order, as RocketMQ redelivers
 * an orderly group, until everything is acked. Returns how many redeliveries it took.
 */
async function forwardUntilAcked(forwarder: RouteForwarder, receive: readonly ReceivedMessage[]): Promise<number> {
  let pending = [...receive];
  for (let redeliveries = 0; redeliveries < 10; redeliveries++) {
    const outcome = await forwarder.forwardBatch(pending);
    const left = new Set(outcome.notAcked.map((n) => n.msgId));
    pending = pending.filter((m) => left.has(m.msgId));
    if (pending.length === 0) return redeliveries;
  }
  throw new Error(`still not acked after 10 redeliveries: ${pending.map((m) => m.keys[0]).join(' ')}`);
}

/** Each order's statuses in the order its message group holds them in the queue. */
function statusesByOrder(landed: readonly { body: string; groupId?: string }[]): Map<string, string[]> {
  const byOrder = new Map<string, string[]>();
  for (const m of landed) {
    const { orderNo, status } = JSON.parse(parseEnvelope(m.body).body) as { orderNo: string; status: string };
    expect(m.groupId).toBe(orderNo);
    byOrder.set(orderNo, [...(byOrder.get(orderNo) ?? []), status]);
  }
  return new Map([...byOrder].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })));
}

describe('route forwarder on the emulator SQS', () => {
  it('forwards a receive of 25 in batches of ten and acks each message once', async () => {
    // Prepare
    const { sqs, queueUrl, dlqUrl } = await queuePair();
    const { forwarder, acks, metrics } = forwarderFor(sqs, queueUrl, dlqUrl);
    const messages = Array.from({ length: 25 }, (_, i) => receivedMessage({ keys: [`SO${i}`] }));
    let batchCalls = 0;
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendMessageBatchCommand') {
          batchCalls++;
          expect((args.input as { Entries: unknown[] }).Entries.length).toBeLessThanOrEqual(10);
        }
        return next(args);
      },
      { step: 'initialize' },
    );

    // Act
    const outcome = await forwarder.forwardBatch(messages);

    // Assess
    expect(batchCalls).toBe(3);
    expect(outcome.notAcked).toEqual([]);
    expect(new Set(acks)).toEqual(new Set(messages.map((m) => m.msgId)));
    const bodies = (await drain(sqs, queueUrl)).map((m) => parseEnvelope(m.body));
    expect(new Set(bodies.map((b) => b.msgId))).toEqual(new Set(messages.map((m) => m.msgId)));
    expect(metrics.stats).toMatchObject({ forwarded: 25, forwardFailed: 0 });
  });

  it('handles a partial batch failure entry by entry: acks the landed ones, leaves the failed ones un-acked', async () => {
    // Prepare
    const { sqs, queueUrl, dlqUrl } = await queuePair();
    failBatchEntries(sqs, (body) => body.includes('"SO-FAIL'), 'ThrottlingException');
    const { forwarder, acks, metrics } = forwarderFor(sqs, queueUrl, dlqUrl);
    const ok = [receivedMessage({ keys: ['SO-1'] }), receivedMessage({ keys: ['SO-2'] })];
    const failing = [receivedMessage({ keys: ['SO-FAIL-1'] }), receivedMessage({ keys: ['SO-FAIL-2'] })];

    // Act
    const outcome = await forwarder.forwardBatch([ok[0]!, failing[0]!, ok[1]!, failing[1]!]);

    // Assess
    expect(acks.sort()).toEqual(ok.map((m) => m.msgId).sort());
    expect(outcome.notAcked.map((n) => n.msgId).sort()).toEqual(failing.map((m) => m.msgId).sort());
    expect(outcome.notAcked[0]!.reason).toContain('ThrottlingException');
    expect((await drain(sqs, queueUrl)).map((m) => parseEnvelope(m.body).msgId).sort()).toEqual(
      ok.map((m) => m.msgId).sort(),
    );
    expect(metrics.stats).toMatchObject({ forwarded: 2, forwardFailed: 2 });
  });

  it('acks only after the message is in the queue, and not at all when SQS refuses the batch', async () => {
    // Prepare: at each ack, the acked message must already be receivable from the queue.
    const { sqs, queueUrl, dlqUrl } = await queuePair();
    const seenAtAck: number[] = [];
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, dlqUrl, false, async () => {
      seenAtAck.push(await visibleCount(sqs, queueUrl));
    });
    const unreachable = forwarderFor(sqs, `${queueUrl}-missing`, dlqUrl);

    // Act
    await forwarder.forwardBatch([receivedMessage()]);
    const refused = await unreachable.forwarder.forwardBatch([receivedMessage(), receivedMessage()]);

    // Assess
    expect(acks).toHaveLength(1);
    expect(seenAtAck).toEqual([1]);
    expect(unreachable.acks).toEqual([]);
    expect(refused.notAcked).toHaveLength(2);
    expect(refused.notAcked[0]!.reason).toMatch(/NonExistentQueue|does not exist/i);
  });

  it('sends a body too large for SQS to the DLQ with its reason, acks it, and forwards the rest', async () => {
    // Prepare
    const { sqs, queueUrl, dlqUrl } = await queuePair();
    const { forwarder, acks, metrics } = forwarderFor(sqs, queueUrl, dlqUrl);
    const huge = receivedMessage({
      body: Buffer.from(JSON.stringify({ orderNo: 'SO-BIG', blob: 'x'.repeat(300_000) })),
    });
    const small = receivedMessage();

    // Act
    const outcome = await forwarder.forwardBatch([huge, small]);

    // Assess
    expect(outcome.deadLettered).toEqual([huge.msgId]);
    expect(acks.sort()).toEqual([huge.msgId, small.msgId].sort());
    expect((await drain(sqs, queueUrl)).map((m) => parseEnvelope(m.body).msgId)).toEqual([small.msgId]);
    const [notice, ...more] = await drain(sqs, dlqUrl);
    expect(more).toEqual([]);
    expect(notice!.attributes).toEqual({
      [DEAD_LETTER_REASON_ATTRIBUTE]: 'BODY_TOO_LARGE',
      'dead-letter-kind': 'bridge-notice',
    });
    const body = JSON.parse(notice!.body);
    expect(body).toMatchObject({
      deadletterkind: 'bridge-notice',
      deadletterreason: 'BODY_TOO_LARGE',
      data: { msgId: huge.msgId, queueOffset: huge.queueOffset, body: '', bodyOmitted: true },
    });
    expect(body.deadletterdetail).toMatch(/^envelope is \d+ bytes; the target accepts at most 262144$/);
    expect(metrics.stats).toMatchObject({ forwarded: 1, deadLettered: 1 });
  });

  it('leaves a too-large message un-acked when even the DLQ cannot take the notice', async () => {
    const { sqs, queueUrl } = await queuePair();
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, `${queueUrl}-missing-dlq`);
    const outcome = await forwarder.forwardBatch([receivedMessage({ body: Buffer.alloc(300_000, 'a') })]);
    expect(acks).toEqual([]);
    expect(outcome.notAcked[0]!.reason).toMatch(/^dead-lettering failed/);
  });

  it('FIFO: uses the message group as MessageGroupId, and sends nothing of a group after its failed message', async () => {
    // Prepare
    const { sqs, queueUrl, dlqUrl } = await queuePair(true);
    failBatchEntries(sqs, (body) => body.includes('"A-2"'));
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, dlqUrl, true);
    const a1 = receivedMessage({ messageGroup: 'user-a', keys: ['A-1'] });
    const a2 = receivedMessage({ messageGroup: 'user-a', keys: ['A-2'] });
    const a3 = receivedMessage({ messageGroup: 'user-a', keys: ['A-3'] });
    const b1 = receivedMessage({ messageGroup: 'user-b', keys: ['B-1'] });

    // Act
    const outcome = await forwarder.forwardBatch([a1, a2, b1, a3]);

    // Assess: a3 never reached SQS, so RocketMQ hands a2 and a3 back and they land in order.
    expect(acks.sort()).toEqual([a1.msgId, b1.msgId].sort());
    expect(outcome.notAcked.map((n) => n.msgId)).toEqual([a2.msgId, a3.msgId]);
    const landed = await drain(sqs, queueUrl);
    expect(landed.map((m) => [m.groupId, parseEnvelope(m.body).keys[0]]).sort()).toEqual([
      ['user-a', 'A-1'],
      ['user-b', 'B-1'],
    ]);
  });

  it('FIFO: a first SendMessageBatch failing whole keeps every later message of its groups out of the queue', async () => {
    // Prepare: ten orders, their PAID events first, then their FINISHED events, as one receive of 20. The
    // first call fails whole (what the SDK throws once its retries against throttling or the network are spent).
    const { sqs, queueUrl, dlqUrl } = await queuePair(true);
    let calls = 0;
    failBatchRequests(sqs, () => ++calls === 1);
    const { forwarder } = forwarderFor(sqs, queueUrl, dlqUrl, true, undefined, {
      route: { messageGroupFrom: { from: 'key' } },
    });
    const orders = Array.from({ length: 10 }, (_, i) => `SO-${i}`);
    const event = (orderNo: string, status: string) =>
      receivedMessage({ keys: [orderNo], body: Buffer.from(JSON.stringify({ orderNo, status })) });
    const receive = [...orders.map((o) => event(o, 'PAID')), ...orders.map((o) => event(o, 'FINISHED'))];

    // Act: the receive, then RocketMQ's redeliveries of whatever was not acked, until everything is.
    const redeliveries = await forwardUntilAcked(forwarder, receive);

    // Assess: every order's PAID before its FINISHED, each once, nothing dead-lettered.
    expect(calls).toBeGreaterThan(1);
    expect(redeliveries).toBeGreaterThanOrEqual(1);
    expect(statusesByOrder(await drain(sqs, queueUrl))).toEqual(new Map(orders.map((o) => [o, ['PAID', 'FINISHED']])));
    expect(await drain(sqs, dlqUrl)).toEqual([]);
  });

  it('FIFO: an entry SQS refuses holds back the later entries of its group, never sends them in the same call', async () => {
    // Prepare: SQS refuses SO-1's PAID once and would accept everything else; two orders, PAID then FINISHED each.
    const { sqs, queueUrl, dlqUrl } = await queuePair(true);
    let refused = false;
    failBatchEntries(sqs, (body) => {
      if (refused || !body.includes('"SO-1\\",\\"status\\":\\"PAID')) return false;
      refused = true;
      return true;
    });
    const groupsPerCall: string[][] = [];
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Entries?: { MessageGroupId?: string }[] };
        if (context.commandName === 'SendMessageBatchCommand')
          groupsPerCall.push(input.Entries!.map((e) => e.MessageGroupId!));
        return next(args);
      },
      { step: 'initialize', priority: 'high' },
    );
    const { forwarder } = forwarderFor(sqs, queueUrl, dlqUrl, true, undefined, {
      route: { messageGroupFrom: { from: 'key' } },
    });
    const event = (orderNo: string, status: string) =>
      receivedMessage({ keys: [orderNo], body: Buffer.from(JSON.stringify({ orderNo, status })) });
    const receive = [
      event('SO-1', 'PAID'),
      event('SO-1', 'FINISHED'),
      event('SO-2', 'PAID'),
      event('SO-2', 'FINISHED'),
    ];

    // Act
    await forwardUntilAcked(forwarder, receive);

    // Assess
    expect(refused).toBe(true);
    expect(statusesByOrder(await drain(sqs, queueUrl))).toEqual(
      new Map([
        ['SO-1', ['PAID', 'FINISHED']],
        ['SO-2', ['PAID', 'FINISHED']],
      ]),
    );
    expect(await drain(sqs, dlqUrl)).toEqual([]);
    for (const groups of groupsPerCall) expect(new Set(groups).size).toBe(groups.length);
  });

  it('FIFO: a too-large message the DLQ refuses holds back the rest of its group, not what came before', async () => {
    // Prepare: the DLQ does not exist, so the notice for A-2 cannot be sent.
    const { sqs, queueUrl } = await queuePair(true);
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, `${queueUrl.replace('.fifo', '')}-missing-dlq.fifo`, true);
    const a1 = receivedMessage({ messageGroup: 'user-a', keys: ['A-1'] });
    const a2 = receivedMessage({ messageGroup: 'user-a', keys: ['A-2'], body: Buffer.alloc(300_000, 'a') });
    const a3 = receivedMessage({ messageGroup: 'user-a', keys: ['A-3'] });
    const b1 = receivedMessage({ messageGroup: 'user-b', keys: ['B-1'] });

    // Act
    const outcome = await forwarder.forwardBatch([a1, a2, a3, b1]);

    // Assess
    expect(acks.sort()).toEqual([a1.msgId, b1.msgId].sort());
    expect(outcome.notAcked.map((n) => n.msgId)).toEqual([a2.msgId, a3.msgId]);
    expect((await drain(sqs, queueUrl)).map((m) => parseEnvelope(m.body).keys[0]).sort()).toEqual(['A-1', 'B-1']);
  });

  it('FIFO: a receive over many groups takes as few calls as before, sent side by side', async () => {
    // Prepare: 20 messages of 20 groups; count calls and how many were in flight at once.
    const { sqs, queueUrl, dlqUrl } = await queuePair(true);
    let inFlight = 0;
    let mostInFlight = 0;
    let calls = 0;
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'SendMessageBatchCommand') return next(args);
        calls++;
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        try {
          return await next(args);
        } finally {
          inFlight--;
        }
      },
      { step: 'initialize' },
    );
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, dlqUrl, true);
    const messages = Array.from({ length: 20 }, (_, i) => receivedMessage({ messageGroup: `user-${i}` }));

    // Act
    await forwarder.forwardBatch(messages);

    // Assess
    expect(acks).toHaveLength(20);
    expect(calls).toBe(2);
    expect(mostInFlight).toBe(2);
  });

  it('FIFO: keeps a group in order across batches of ten', async () => {
    const { sqs, queueUrl, dlqUrl } = await queuePair(true);
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, dlqUrl, true);
    const messages = Array.from({ length: 25 }, (_, i) =>
      receivedMessage({ messageGroup: 'user-a', keys: [`A-${i}`] }),
    );
    await forwarder.forwardBatch(messages);
    expect(acks).toHaveLength(25);
    expect((await drain(sqs, queueUrl)).map((m) => parseEnvelope(m.body).keys[0])).toEqual(
      messages.map((m) => m.keys[0]),
    );
  });

  it("FIFO, 4.x-style ordered topic: the route's messageGroupFrom (first key) makes each order its own group", async () => {
    const { sqs, queueUrl, dlqUrl } = await queuePair(true);
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, dlqUrl, true, undefined, {
      route: { messageGroupFrom: { from: 'key' } },
    });
    // One queue, two orders interleaved, no RocketMQ 5 message group: what a 4.x queue selector produces.
    const messages = ['SO-1', 'SO-2', 'SO-1', 'SO-2'].map((orderNo) =>
      receivedMessage({ keys: [orderNo], queueId: 2 }),
    );
    await forwarder.forwardBatch(messages);
    expect(acks).toHaveLength(4);
    const landed = await drain(sqs, queueUrl);
    expect(landed.map((m) => [m.groupId, parseEnvelope(m.body).msgId])).toEqual(
      messages.map((m) => [m.keys[0], m.msgId]),
    );
  });

  it('signs every envelope it forwards, and fails the batch unacked when the key cannot be read', async () => {
    const key = Buffer.from('s'.repeat(32));
    let readable = true;
    const signingKeys: SigningKeyRing = {
      current: async () => {
        if (!readable) throw new Error('AccessDeniedException');
        return key;
      },
      accepted: async () => [key],
      reload: async () => false,
    };
    const { sqs, queueUrl, dlqUrl } = await queuePair();
    const { forwarder, acks } = forwarderFor(sqs, queueUrl, dlqUrl, false, undefined, { signingKeys });
    await forwarder.forwardBatch([receivedMessage(), receivedMessage()]);
    const landed = await drain(sqs, queueUrl);
    expect(landed.map((m) => signatureRefusal(m.body, [key]))).toEqual([undefined, undefined]);
    readable = false;
    await expect(forwarder.forwardBatch([receivedMessage()])).rejects.toThrow('AccessDeniedException');
    expect(acks).toHaveLength(2);
    expect(await drain(sqs, queueUrl)).toEqual([]);
  });

  it('counts an ack that fails after a successful forward (a duplicate will follow) without failing the batch', async () => {
    const { sqs, queueUrl, dlqUrl } = await queuePair();
    const { forwarder, metrics } = forwarderFor(sqs, queueUrl, dlqUrl, false, async () => {
      throw new Error('receipt handle expired');
    });
    const outcome = await forwarder.forwardBatch([receivedMessage()]);
    expect(outcome.acked).toEqual([]);
    expect(metrics.stats).toMatchObject({ forwarded: 1, ackFailed: 1 });
  });
});
