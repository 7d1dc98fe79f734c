import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { consumerGroup } from '@rocketmq-lambda/runtime/config/index.ts';
import { writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import { newMsgId, orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { queueDepth } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { describe, expect, inject, it } from 'vitest';
import { runOps } from '../../../src/command/ops.ts';

/** A deployment of one group on the emulator, and the real command line against it. */
async function deployment(group: string) {
  const endpoint = inject('emulatorEndpoint');
  const prefix = `g${randomUUID().slice(0, 8)}`;
  const { queues } = await provisionLocal(endpoint, prefix, { groups: [group] });
  const sqs = createSqs(emulatorConfig(endpoint));
  const ops = async (argv: string[]) => {
    let stdout = '';
    const code = await runOps([...argv, '--endpoint', endpoint, '--prefix', prefix, '--json', '--yes'], {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { isTTY: false, write: () => true },
    });
    return { code, report: JSON.parse(stdout) };
  };
  return { sqs, prefix, queues: queues[group]!, ops };
}

describe('ops dlq redrive checks where a letter goes even when it records nothing (emulator)', () => {
  it('holds back a letter SQS’s redrive policy moved when the target is not the queue that redrives into the DLQ', async () => {
    // Prepare: a letter moved by the redrive policy after 17 receives nobody deleted: no attribute of ours on it
    const d = await deployment('point-consumer-group');
    await d.sqs.send(
      new SendMessageCommand({
        QueueUrl: d.queues.source.url,
        MessageBody: orderEnvelope({ orderNo: 'SO-MOVED', userId: 'u-1', points: 5 }),
      }),
    );
    for (let i = 0; i < 18; i++)
      await d.sqs.send(new ReceiveMessageCommand({ QueueUrl: d.queues.source.url, VisibilityTimeout: 0 }));
    expect((await queueDepth(d.sqs, d.queues.deadLetter.url)).visible).toBe(1);
    const { QueueUrl: otherUrl } = await d.sqs.send(
      new CreateQueueCommand({ QueueName: `${d.prefix}-coupon-consumer-group` }),
    );
    // Act: the wrong target, then the right one
    const wrong = await d.ops([
      'dlq',
      'redrive',
      '--group',
      'point-consumer-group',
      '--all',
      '--source-queue-url',
      otherUrl!,
    ]);
    const right = await d.ops(['dlq', 'redrive', '--group', 'point-consumer-group', '--all']);
    // Assess
    expect(wrong.code).toBe(1);
    expect(wrong.report.moved).toBe(0);
    expect(wrong.report.heldBack[0].why).toBe(
      `it records no source queue (SQS's redrive policy moved it), so it came from a queue that redrives into this DLQ (${d.queues.source.arn}), ` +
        `and the redrive target arn:aws:sqs:us-east-1:123456789012:${d.prefix}-coupon-consumer-group is not the only one: redrive it to its own source queue`,
    );
    expect((await queueDepth(d.sqs, otherUrl!)).visible).toBe(0);
    expect(right.code).toBe(0);
    expect(right.report.moved).toBe(1);
  });

  it('sends a FIFO letter back in the message group its envelope gives, and holds back one whose group differs', async () => {
    // Prepare: two letters in the orderly group's FIFO DLQ; the catalogue groups its messages by order number
    const group = consumerGroup('order-status-consumer-group');
    expect(group.messageGroupFrom).toEqual({ from: 'key' });
    const d = await deployment(group.group);
    const letter = (orderNo: string, messageGroupId: string) =>
      d.sqs.send(
        new SendMessageCommand({
          QueueUrl: d.queues.deadLetter.url,
          MessageBody: writeEnvelope({
            topic: 'ORDER_TOPIC',
            msgId: newMsgId(),
            tags: 'PAID',
            keys: [orderNo],
            body: JSON.stringify({ orderNo }),
          }),
          MessageGroupId: messageGroupId,
          MessageDeduplicationId: randomUUID(),
          MessageAttributes: {
            'failure-code': { DataType: 'String', StringValue: 'RETRIES_EXHAUSTED' },
            'source-queue': { DataType: 'String', StringValue: d.queues.source.arn },
          },
        }),
      );
    await letter('SO-OWN', 'SO-OWN');
    await letter('SO-MOVED', 'USER-1');
    // Act
    const run = await d.ops(['dlq', 'redrive', '--group', group.group, '--all']);
    // Assess
    expect(run.code).toBe(1);
    expect(run.report.moved).toBe(1);
    expect(run.report.heldBack.map((h: { why: string }) => h.why)).toEqual([
      'its message group "USER-1" is not the one its envelope gives ("SO-MOVED"): sent back in it, the order would be consumed out of sequence. Inspect it with dlq show',
    ]);
    const { Messages = [] } = await d.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: d.queues.source.url, MessageSystemAttributeNames: ['MessageGroupId'] }),
    );
    expect(Messages.map((m) => [JSON.parse(m.Body!).data.keys[0], m.Attributes?.MessageGroupId])).toEqual([
      ['SO-OWN', 'SO-OWN'],
    ]);
  });
});
