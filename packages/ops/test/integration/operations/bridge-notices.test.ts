import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { DeadLetterQueue, DeadLetterReason } from '@rocketmq-lambda/bridge/internal.ts';
import { buildEnvelope, noticeBody } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { newMsgId, orderEnvelope, pointsFixture, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { ops, type PointsFixture } from './operations-fixture.ts';

const GROUP = ['--group', 'point-consumer-group'];
const TOO_LARGE = 'envelope is 300412 bytes; the target accepts at most 262144';
/** A minute ago: well inside every redrive horizon, so nothing but its kind keeps a notice from being selected. */
const STORED_AT = Date.now() - 60_000;

type Listed = {
  messageId: string;
  kind: string;
  reasonText: string;
  notice?: { reason: string; detail?: string; body: Record<string, unknown> };
  failure?: { code?: string };
  envelope?: { msgId: string };
};

/** The envelope of an order too large to forward, as the bridge built it from a RocketMQ 4 delivery. */
function largeOrder(orderNo: string) {
  return buildEnvelope({
    topic: 'ORDER_TOPIC',
    msgId: newMsgId(),
    offsetMsgId: '7F00000100002A9F0000000000001A2B',
    tags: 'PAID',
    keys: [orderNo],
    body: JSON.stringify({ orderNo, userId: 'u-1', points: 1, blob: 'x'.repeat(300_000) }),
    brokerName: 'broker-a',
    queueId: 3,
    queueOffset: 1234,
    storeTimestamp: STORED_AT,
  });
}

/**
 * A group DLQ holding every kind of letter: the bridge's BODY_TOO_LARGE notice as the bridge
 * writes it; one written before notices were marked with `dead-letter-kind` (the reason attribute
 * only); a notice that was sent to the consumer anyway, which failed it (the failure router's
 * attributes on a notice body); a message SQS's redrive policy moved (no attribute); and a
 * letter of the failure router.
 */
async function dlqOfEveryKind(f: PointsFixture) {
  const queue = f.resources.queues['point-consumer-group']!;
  const notice = largeOrder('SO-BIG');
  const sent = await new DeadLetterQueue(f.sqs, queue.deadLetter.url).send({
    envelope: notice,
    reason: DeadLetterReason.BodyTooLarge,
    detail: TOO_LARGE,
  });
  expect(sent).toEqual({ ok: true });
  const older = largeOrder('SO-BIG-OLD');
  await f.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.deadLetter.url,
      MessageBody: JSON.stringify({
        ...older,
        deadletterreason: 'BODY_TOO_LARGE',
        deadletterdetail: TOO_LARGE,
        data: { ...older.data, body: '', bodyEncoding: 'utf8', bodyOmitted: true },
      }),
      MessageAttributes: { BridgeDeadLetterReason: { DataType: 'String', StringValue: 'BODY_TOO_LARGE' } },
    }),
  );
  // What `dlq redrive --reason unknown` used to do with a notice: the consumer gets it, fails it, and its router
  // dead-letters it again under its own reason.
  const consumed = largeOrder('SO-BIG-CONSUMED');
  const crash = newMsgId();
  // Signed, as the bridge signs what it sends
  await f.invoke([
    sqsRecord(PROCESS_SIGNING_KEY.sign(noticeBody(consumed, 'BODY_TOO_LARGE', TOO_LARGE)), queue.source.arn),
  ]);
  await f.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.deadLetter.url,
      MessageBody: orderEnvelope({ orderNo: 'SO-CRASH', userId: 'u-9', points: 5 }, { msgId: crash }),
    }),
  );
  await f.invoke(['{"specversion":"1.0", "id": ']);
  return { notice, older, consumed, crash };
}

async function sourceDepth(f: PointsFixture) {
  const { Attributes } = await f.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: f.resources.queues['point-consumer-group']!.source.url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes!.ApproximateNumberOfMessages) + Number(Attributes!.ApproximateNumberOfMessagesNotVisible);
}

describe('ops dlq and the bridge’s notices (emulator)', () => {
  it('lists each kind of letter with its own reason: a notice says why and where its body still is', async () => {
    // Prepare
    const f = await pointsFixture();
    const { notice, older, consumed } = await dlqOfEveryKind(f);

    // Act
    const list = await ops(f, ['dlq', 'list', ...GROUP, '--json']);
    const show = await ops(f, ['dlq', 'show', ...GROUP, notice.data.msgId]);

    // Assess
    const letters: Listed[] = list.json().messages;
    const byMsgId = (msgId: string) => letters.filter((l) => l.envelope?.msgId === msgId);
    expect(byMsgId(notice.data.msgId).map((l) => l.reasonText)).toEqual([`BODY_TOO_LARGE: ${TOO_LARGE}`]);
    expect(letters.map((l) => l.kind).sort()).toEqual([
      'bridge-notice',
      'bridge-notice',
      'bridge-notice',
      'failure-router',
      'redrive-policy',
    ]);
    for (const l of [...byMsgId(notice.data.msgId), ...byMsgId(older.data.msgId)]) {
      expect(l.reasonText).toBe(`BODY_TOO_LARGE: ${TOO_LARGE}`);
      expect(l.notice!.body).toMatchObject({
        topic: 'ORDER_TOPIC',
        offsetMsgId: '7F00000100002A9F0000000000001A2B',
        brokerName: 'broker-a',
        queueId: 3,
        queueOffset: 1234,
      });
    }
    const failedByConsumer = byMsgId(consumed.data.msgId)[0]!;
    expect(failedByConsumer.failure?.code).toBe('INVALID_PAYLOAD');
    expect(failedByConsumer.reasonText).toMatch(
      /^BODY_TOO_LARGE: envelope is .*\(bridge notice; later sent to the consumer, which failed it: INVALID_PAYLOAD/,
    );
    expect(letters.filter((l) => l.reasonText.startsWith('reason unknown')).map((l) => l.kind)).toEqual([
      'redrive-policy',
    ]);
    expect(show.stdout).toContain(
      `Still in RocketMQ: topic ORDER_TOPIC, msgId ${notice.data.msgId}, offsetMsgId 7F00000100002A9F0000000000001A2B, ` +
        `broker broker-a, queue 3, offset 1234, stored at ${new Date(STORED_AT).toISOString()}.`,
    );
    expect(show.stdout).toContain('mqadmin queryMsgByOffset -n <nameserver> -t ORDER_TOPIC -b broker-a -i 3 -o 1234');
    expect(show.stdout).toContain(`mqadmin queryMsgByUniqueKey -n <nameserver> -t ORDER_TOPIC -i ${notice.data.msgId}`);
  });

  it('never sends a notice to the consumer: not for --reason unknown, not when selected by reason, key or --all', async () => {
    // Prepare
    const f = await pointsFixture();
    const { notice, crash } = await dlqOfEveryKind(f);

    // Act
    const unknown = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'unknown', '--yes', '--json']);
    const byReason = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'BODY_TOO_LARGE', '--yes', '--json']);
    const byKey = await ops(f, ['dlq', 'redrive', ...GROUP, '--key', 'SO-BIG', '--yes', '--json']);
    const everything = await ops(f, ['dlq', 'redrive', ...GROUP, '--all', '--yes', '--json']);

    // Assess: --reason unknown moves the redrive-policy letter only.
    expect(unknown.json().selected.map((l: Listed) => l.envelope?.msgId)).toEqual([crash]);
    expect(unknown.json().moved).toBe(1);
    expect(unknown.json().selected.map((l: Listed) => l.kind)).toEqual(['redrive-policy']);
    // Every notice any filter selects is held back with where its body is and how to fetch it.
    for (const run of [byReason, byKey, everything]) {
      const heldNotices = run.json().heldBack.filter((h: Listed) => h.kind === 'bridge-notice');
      expect(heldNotices.length).toBeGreaterThan(0);
      for (const held of heldNotices as (Listed & { why: string })[]) {
        expect(held.why).toMatch(/^a bridge notice \(BODY_TOO_LARGE\), not a message: it has no body/);
        expect(held.why).toContain('mqadmin queryMsgByOffset -n <nameserver> -t ORDER_TOPIC -b broker-a -i 3 -o 1234');
      }
      expect(run.json().selected.filter((l: Listed) => l.kind === 'bridge-notice')).toEqual([]);
    }
    expect(byKey.json().heldBack.map((h: Listed) => h.envelope?.msgId)).toEqual([notice.data.msgId]);
    expect(everything.json().heldBack).toHaveLength(3);
    // The --all run moved the router's letter; nothing else reached the source queue.
    expect(everything.json().moved).toBe(1);
    expect(await sourceDepth(f)).toBe(2);
    const left: Listed[] = (await ops(f, ['dlq', 'list', ...GROUP, '--json'])).json().messages;
    expect(left.map((l) => l.kind)).toEqual(['bridge-notice', 'bridge-notice', 'bridge-notice']);
  });
});
