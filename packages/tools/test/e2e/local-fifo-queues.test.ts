import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { consumerGroup, FIFO_QUEUE_ATTRIBUTES, lifetimesOf } from '@rocketmq-lambda/runtime/config/index.ts';
import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { LocalBridge } from '../../src/local/local-bridge.ts';
import { PROCESS_SIGNING_KEY } from '../../src/local/local-signing-key.ts';
import { provisionLocal } from '../../src/local/provision.ts';
import { QueueOccupancy } from '../../src/local/queue-occupancy.ts';
import { pollOnce } from '../../src/local/sqs-poller.ts';
import { trafficMessage } from '../../src/local/traffic.ts';

const ORDER_STATUS = consumerGroup('order-status-consumer-group');
const POINTS = consumerGroup('point-consumer-group');

/** The emulator accepts a `.fifo` name on a standard queue, so only the queue's own attributes say what it is. */
async function attributesOf(sqs: ReturnType<typeof createSqs>, queueUrl: string) {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
  );
  return Attributes;
}

describe('the local run on FIFO queues', () => {
  const endpoint = inject('emulatorEndpoint');
  const sqs = createSqs(emulatorConfig(endpoint));

  it("creates an orderly group's source queue and DLQ as FIFO, with the derived redrive count; a concurrent group's stay standard", async () => {
    // Act
    const { queues } = await provisionLocal(endpoint, `t${randomUUID().slice(0, 8)}`, {
      groups: [ORDER_STATUS.group, POINTS.group],
    });

    // Assess
    const orderly = queues[ORDER_STATUS.group]!;
    expect(orderly.fifo).toBe(true);
    for (const url of [orderly.source.url, orderly.deadLetter.url]) {
      expect(url).toMatch(/\.fifo$/);
      expect(await attributesOf(sqs, url)).toMatchObject(FIFO_QUEUE_ATTRIBUTES);
    }
    const redrive = JSON.parse((await attributesOf(sqs, orderly.source.url)).RedrivePolicy!) as {
      maxReceiveCount: number;
      deadLetterTargetArn: string;
    };
    expect(redrive).toEqual({
      maxReceiveCount: lifetimesOf(ORDER_STATUS).lifetimes.queues.maxReceiveCount,
      deadLetterTargetArn: orderly.deadLetter.arn,
    });
    expect(redrive.maxReceiveCount).toBe(171);
    expect(queues[POINTS.group]!.fifo).toBe(false);
    expect((await attributesOf(sqs, queues[POINTS.group]!.source.url)).FifoQueue).toBeUndefined();
  });

  it('sends one order as one message group keyed by its order number, absorbs a same-msgId copy, and hands the handler what Lambda does', async () => {
    // Prepare
    const resources = await provisionLocal(endpoint, `t${randomUUID().slice(0, 8)}`, { groups: [ORDER_STATUS.group] });
    const queue = resources.queues[ORDER_STATUS.group]!;
    const ids = new MsgIdGenerator();
    const event = (tags: string, orderNo: string) =>
      trafficMessage(
        writeEnvelope({
          topic: 'ORDER_TOPIC',
          msgId: ids.next(),
          tags,
          keys: [orderNo],
          body: JSON.stringify({ orderNo }),
        }),
      );
    const paid = event('PAID', 'SO1');
    const finished = event('FINISHED', 'SO1');
    const other = event('PAID', 'SO2');
    const occupancy = new QueueOccupancy({ [ORDER_STATUS.group]: queue.maxReceiveCount });
    const bridge = new LocalBridge(
      sqs,
      resources,
      [ORDER_STATUS],
      0,
      Math.random,
      300,
      occupancy,
      Date.now() + 60_000,
      PROCESS_SIGNING_KEY,
    );

    // Act: the PAID again (a bridge re-forward, same msgId) between the others.
    await bridge.send([paid, other, { ...paid, label: 'bridge redelivery (same msgId)' }, finished]);
    const seen: Array<Record<string, string | undefined>> = [];
    for (let polls = 0; seen.length < 3 && polls < 20; polls++) {
      await pollOnce({
        sqs,
        queueUrl: queue.source.url,
        queueArn: queue.source.arn,
        functionName: ORDER_STATUS.functionName,
        handler: async (e) => {
          seen.push(...e.Records.map((r) => ({ body: r.body, ...r.attributes })));
          return { batchItemFailures: [] };
        },
      });
    }

    // Assess
    expect(bridge.account.deduplicated[ORDER_STATUS.group]).toBe(1);
    expect(bridge.account.enqueued[ORDER_STATUS.group]).toBe(3);
    expect(occupancy.inQueue(ORDER_STATUS.group)).toBe(3);
    expect(seen).toHaveLength(3);
    const so1 = seen.filter((r) => r.MessageGroupId === 'SO1');
    // The bridge signs each copy it puts on the queue.
    const onQueue = (m: { body: string }) => PROCESS_SIGNING_KEY.sign(m.body);
    expect(so1.map((r) => r.body)).toEqual([onQueue(paid), onQueue(finished)]);
    expect(so1.map((r) => r.MessageDeduplicationId)).toEqual([paid.msgId, finished.msgId]);
    for (const r of seen) expect(r.SequenceNumber).toMatch(/^\d+$/);
    expect(seen.find((r) => r.body === onQueue(other))).toMatchObject({
      MessageGroupId: 'SO2',
      MessageDeduplicationId: other.msgId,
    });
  });
});
