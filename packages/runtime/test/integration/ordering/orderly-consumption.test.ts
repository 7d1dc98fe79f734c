import { ChangeMessageVisibilityCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { redriveDeadLetters } from '@rocketmq-lambda/ops/operations/index.ts';
import { orderlyFixture } from '@rocketmq-lambda/tools/testing/orderly-fixture.ts';
import { newMsgId, orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { orderlySchedule } from '../../../src/config/index.ts';
import { awsError, injectFault } from '../retries/sdk-faults.ts';

const paid = (orderNo: string, msgId = newMsgId()) =>
  orderEnvelope({ orderNo, userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' }, { msgId, tags: 'PAID' });
const finished = (orderNo: string) =>
  orderEnvelope({ orderNo, finishedAt: '2020-07-12T09:00:00Z' }, { tags: 'FINISHED' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Retries at once: every record comes back on the next poll. */
const IMMEDIATE = orderlySchedule({ intervalSeconds: 0 });
const statusOf = async (f: Awaited<ReturnType<typeof orderlyFixture>>, orderNo: string) =>
  (await f.order(orderNo))?.status;

describe('orderly consumption on the emulator’s FIFO queues (order-status group)', () => {
  it('the second of three messages in one group fails: the third is not applied until the second succeeds; another group in the same batch commits meanwhile', async () => {
    // Prepare: group USER-1 carries three orders' PAID events; SO-2's row is not there yet (its
    // PAID fails as NOT_YET_APPLICABLE). Group USER-2 carries one more PAID.
    const f = await orderlyFixture({ schedule: IMMEDIATE });
    for (const orderNo of ['SO-1', 'SO-3', 'SO-B']) await f.createOrder(orderNo);
    await f.send('USER-1', paid('SO-1'));
    await f.send('USER-1', paid('SO-2'));
    await f.send('USER-1', paid('SO-3'));
    await f.send('USER-2', paid('SO-B'));
    // Act: one batch, then another while SO-2 is still missing, then SO-2 appears
    const first = await f.poll();
    const afterFirst = await Promise.all(['SO-1', 'SO-3', 'SO-B'].map((o) => statusOf(f, o)));
    const second = await f.poll();
    const afterSecond = await statusOf(f, 'SO-3');
    await f.createOrder('SO-2');
    const third = await f.poll();
    // Assess: one batch held both groups; SO-3 stayed WAIT_PAY until SO-2 was applied
    expect(first.records).toHaveLength(4);
    expect(afterFirst).toEqual(['PAID', 'WAIT_PAY', 'PAID']);
    expect(second.records.map((r) => r.attributes.MessageGroupId)).toEqual(['USER-1', 'USER-1']);
    expect(afterSecond).toBe('WAIT_PAY');
    expect(third.response?.batchItemFailures).toEqual([]);
    expect(await Promise.all(['SO-2', 'SO-3'].map((o) => statusOf(f, o)))).toEqual(['PAID', 'PAID']);
    const so3 = f.reports.filter((r) => r.key === 'SO-3#PAID');
    expect(
      so3.map((r) => (r.settlement.outcome === 'failed' ? r.settlement.error.code : r.settlement.outcome)),
    ).toEqual(['HELD_BACK', 'HELD_BACK', 'processed']);
    const so2Applied = f.reports.findIndex((r) => r.key === 'SO-2#PAID' && r.settlement.outcome === 'processed');
    expect(f.reports.findIndex((r) => r.key === 'SO-3#PAID' && r.settlement.outcome === 'processed')).toBeGreaterThan(
      so2Applied,
    );
    expect((await f.order('SO-3'))!.statusUpdatedAt! >= (await f.order('SO-2'))!.statusUpdatedAt!).toBe(true);
  });

  it('counts a held-back follower’s own failures only: received as often as its maximum, its first failure is attempt 1, retried, not dead-lettered', async () => {
    // Prepare: at most 3 attempts. SO-X's PAID fails twice before its order appears; SO-Y's
    // PAID behind it is received on each of those polls, then fails once itself.
    const f = await orderlyFixture({ schedule: orderlySchedule({ intervalSeconds: 0, maxAttempts: 3 }) });
    await f.send('USER-1', paid('SO-X'));
    await f.send('USER-1', paid('SO-Y'));
    // Act
    await f.poll();
    await f.poll();
    await f.createOrder('SO-X');
    const third = await f.poll();
    // Assess: on that third poll SO-Y was received for the third time, and its first own failure is attempt 1
    const followerRecord = third.records.find((r) => r.body.includes('SO-Y'))!;
    expect(followerRecord.attributes.ApproximateReceiveCount).toBe('3');
    const follower = f.reports.filter((r) => r.key === 'SO-Y#PAID');
    expect(
      follower.map((r) => [
        r.attempt,
        r.settlement.outcome === 'failed' ? r.settlement.error.code : r.settlement.outcome,
        r.disposition.action,
      ]),
    ).toEqual([
      [1, 'HELD_BACK', 'retry'],
      [1, 'HELD_BACK', 'retry'],
      [1, 'NOT_YET_APPLICABLE', 'retry'],
    ]);
    expect(await f.failuresOf(followerRecord.messageId)).toBe(1);
    expect(await f.failuresOf(third.records.find((r) => r.body.includes('SO-X'))!.messageId)).toBe(2);
    expect(await f.deadLetters()).toEqual([]);
    // … and after its order appears it is applied as attempt 2
    await f.createOrder('SO-Y');
    await f.poll();
    expect(f.reports.at(-1)).toMatchObject({ key: 'SO-Y#PAID', attempt: 2, settlement: { outcome: 'processed' } });
  });

  it('counts one failure once when the answer to the count’s write is lost and the SDK sends it again', async () => {
    // Prepare: the first write of a count is applied, then its answer is lost
    const f = await orderlyFixture({ schedule: IMMEDIATE });
    const fault = injectFault(f.dynamoDb, {
      command: (name, input) => name === 'UpdateItemCommand' && input.TableName === f.tables.idempotency,
      times: 1,
      when: 'after-send',
      error: () => awsError('TimeoutError', 'socket timed out'),
    });
    await f.send('USER-1', paid('SO-NOWHERE'));
    // Act
    const { records } = await f.poll();
    // Assess: the SDK's retry met the condition on its own delivery and read the count from the refusal
    expect(fault.calls).toBe(2);
    expect(await f.failuresOf(records[0]!.messageId)).toBe(1);
    expect(f.reports[0]).toMatchObject({ attempt: 1, disposition: { action: 'retry', delaySeconds: 0 } });
  });

  it('dead-letters a message at its maximum into the FIFO DLQ, keeping its group, and the group moves on in the same batch', async () => {
    // Prepare: SO-GONE never appears; SO-NEXT is waiting behind it
    const f = await orderlyFixture({ schedule: orderlySchedule({ intervalSeconds: 0, maxAttempts: 3 }) });
    await f.createOrder('SO-NEXT');
    const goneMsgId = newMsgId();
    await f.send('USER-1', paid('SO-GONE', goneMsgId));
    await f.send('USER-1', paid('SO-NEXT'));
    // Act
    const polls = [await f.poll(), await f.poll(), await f.poll()];
    // Assess: attempts 1, 2 retried, 3 dead-lettered; SO-NEXT applied on the third poll
    expect(f.reports.filter((r) => r.key === 'SO-GONE#PAID').map((r) => [r.attempt, r.disposition])).toEqual([
      [1, { action: 'retry', delaySeconds: 0 }],
      [2, { action: 'retry', delaySeconds: 0 }],
      [3, { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' }],
    ]);
    expect(polls[2]!.response?.batchItemFailures).toEqual([]);
    expect(await statusOf(f, 'SO-NEXT')).toBe('PAID');
    const { Messages = [] } = await f.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: f.deadLetter.url,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
        VisibilityTimeout: 60,
      }),
    );
    expect(Messages).toHaveLength(1);
    expect(Messages[0]!.Attributes).toMatchObject({
      MessageGroupId: 'USER-1',
      MessageDeduplicationId: polls[0]!.records[0]!.messageId,
    });
    expect(Messages[0]!.MessageAttributes).toMatchObject({
      'failure-code': { StringValue: 'RETRIES_EXHAUSTED' },
      attempt: { StringValue: '3' },
      'rocketmq-msg-id': { StringValue: goneMsgId },
    });
    expect((await f.poll()).records).toEqual([]);
  });

  it('takes a letter redriven by ops back into its message group, where it starts a fresh count and is applied', async () => {
    // Prepare: SO-LOST is dead-lettered at its maximum, then its order appears
    const f = await orderlyFixture({ schedule: orderlySchedule({ intervalSeconds: 0, maxAttempts: 2 }) });
    await f.send('USER-1', paid('SO-LOST'));
    await f.poll();
    await f.poll();
    await f.createOrder('SO-LOST');
    // Act
    const redrive = await redriveDeadLetters({
      sqs: f.sqs,
      deadLetterQueueUrl: f.deadLetter.url,
      sourceQueueUrl: f.source.url,
      filter: {},
      dryRun: false,
      ratePerSecond: 100,
      visibilityTimeoutSeconds: 30,
    });
    const back = await f.poll();
    // Assess: sent back with its group; a new SQS message, so its count starts again at attempt 1
    expect(redrive.moved).toBe(1);
    expect(back.records.map((r) => r.attributes.MessageGroupId)).toEqual(['USER-1']);
    expect(f.reports.map((r) => [r.attempt, r.disposition.action])).toEqual([
      [1, 'retry'],
      [2, 'dead-letter'],
      [1, 'ack'],
    ]);
    expect(await statusOf(f, 'SO-LOST')).toBe('PAID');
  });

  it('never lets FINISHED overtake a PAID that failed: it waits unattempted, then applies after it; nothing is dead-lettered', async () => {
    // Prepare: the order row is written late, so its PAID fails first
    const f = await orderlyFixture({ schedule: IMMEDIATE });
    await f.send('SO-9', paid('SO-9'));
    await f.send('SO-9', finished('SO-9'));
    // Act
    await f.poll();
    await f.createOrder('SO-9');
    await f.poll();
    // Assess
    expect(
      f.reports.map((r) => [r.key, r.settlement.outcome === 'failed' ? r.settlement.error.code : r.settlement.outcome]),
    ).toEqual([
      ['SO-9#PAID', 'NOT_YET_APPLICABLE'],
      ['SO-9#FINISHED', 'HELD_BACK'],
      ['SO-9#PAID', 'processed'],
      ['SO-9#FINISHED', 'processed'],
    ]);
    expect(await statusOf(f, 'SO-9')).toBe('FINISHED');
    expect(await f.deadLetters()).toEqual([]);
  });

  it('retries the failed message after its fixed interval, not after the queue’s visibility timeout: its held-back followers are released', async () => {
    // Prepare: a 2 s interval on a queue whose own visibility timeout is 60 s
    const f = await orderlyFixture({ schedule: orderlySchedule({ intervalSeconds: 2 }), visibilityTimeoutSeconds: 60 });
    await f.send('USER-1', paid('SO-LATE'));
    await f.send('USER-1', paid('SO-AFTER'));
    // Act: the first poll fails SO-LATE; poll until the group comes back
    const failedAt = Date.now();
    await f.poll();
    const early = await f.poll();
    let back: Awaited<ReturnType<typeof f.poll>> | undefined;
    while (Date.now() - failedAt < 20_000) {
      back = await f.poll();
      if (back.records.length > 0) break;
      await sleep(200);
    }
    const waitedMs = Date.now() - failedAt;
    // Assess: nothing of the group while SO-LATE was invisible, then both, in order, about 2 s later
    expect(early.records).toEqual([]);
    expect(back!.records.map((r) => (r.body.includes('SO-LATE') ? 'SO-LATE' : 'SO-AFTER'))).toEqual([
      'SO-LATE',
      'SO-AFTER',
    ]);
    expect(waitedMs).toBeGreaterThanOrEqual(1_900);
    expect(waitedMs).toBeLessThan(10_000);
    expect(f.reports.find((r) => r.key === 'SO-LATE#PAID')!.disposition).toEqual({ action: 'retry', delaySeconds: 2 });
  });
});

describe('the emulator’s FIFO queues (what the tests above rely on)', () => {
  it('hold back a message group while a message of it is in flight, and hand out the other groups', async () => {
    // Prepare
    const f = await orderlyFixture({ schedule: IMMEDIATE });
    await f.send('A', paid('SO-A1'));
    await f.send('A', paid('SO-A2'));
    await f.send('B', paid('SO-B1'));
    const receive = async (max: number) =>
      (
        await f.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: f.source.url,
            MaxNumberOfMessages: max,
            MessageSystemAttributeNames: ['MessageGroupId'],
            VisibilityTimeout: 30,
          }),
        )
      ).Messages ?? [];
    // Act
    const [a1] = await receive(1);
    const whileInFlight = await receive(10);
    await f.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: f.source.url,
        ReceiptHandle: a1!.ReceiptHandle!,
        VisibilityTimeout: 0,
      }),
    );
    const afterRelease = await receive(10);
    // Assess
    expect(a1!.Body).toContain('SO-A1');
    expect(whileInFlight.map((m) => m.Attributes?.MessageGroupId)).toEqual(['B']);
    expect(afterRelease.map((m) => (m.Body!.includes('SO-A1') ? 'A1' : 'A2'))).toEqual(['A1', 'A2']);
  });

  it('absorb a second send with the same deduplication id (the RocketMQ msgId) while the first is still queued', async () => {
    // moto forgets a deduplication id once its message is deleted (AWS keeps it five minutes), so only this half is
    // shown here.
    const f = await orderlyFixture({ schedule: IMMEDIATE });
    const body = paid('SO-DUP');
    await f.send('SO-DUP', body);
    await f.send('SO-DUP', body);
    await f.sqs.send(
      new SendMessageCommand({
        QueueUrl: f.source.url,
        MessageBody: paid('SO-DUP'),
        MessageGroupId: 'SO-DUP',
        MessageDeduplicationId: newMsgId(),
      }),
    );
    const { Messages = [] } = await f.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: f.source.url, MaxNumberOfMessages: 10, VisibilityTimeout: 30 }),
    );
    expect(Messages).toHaveLength(2);
  });
});
