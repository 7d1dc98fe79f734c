import { ReceiveMessageCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { pollOnce } from '@rocketmq-lambda/tools/local/sqs-poller.ts';
import { orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { RetrySchedule } from '../../../src/rocketmq/index.ts';
import { orderStatusFixture } from '../strategies/consumer-fixtures.ts';
import { recordCommands } from './sdk-faults.ts';

/** A PAID event for an order that does not exist: a transient failure on every delivery. */
const overtakingPaid = (orderNo: string, reconsumeTimes = 0) =>
  orderEnvelope({ orderNo, userId: 88372, points: 300 }, { tags: 'PAID', reconsumeTimes });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retries on RocketMQ’s schedule: the visibility delay per attempt (emulator)', () => {
  it('delays attempts 1, 2 and 16 by 10 s, 30 s and 2 h (attempt = SQS receive count + reconsumeTimes)', async () => {
    // Prepare: the default schedule; the queue's own visibility timeout shortened to 1 s so
    // that a message still invisible after 2.5 s is invisible because of the router's change
    const f = await orderStatusFixture({ schedule: new RetrySchedule() });
    await f.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: f.queue.source.url, Attributes: { VisibilityTimeout: '1' } }),
    );
    const sent = recordCommands(f.sqs);
    await f.send(
      overtakingPaid('SO-ATTEMPT-1', 0),
      overtakingPaid('SO-ATTEMPT-2', 1),
      overtakingPaid('SO-ATTEMPT-16', 15),
    );
    // Act: one Lambda-like poll receives the three (first receive of each)
    const poll = await pollOnce({
      sqs: f.sqs,
      queueUrl: f.queue.source.url,
      queueArn: f.queue.source.arn,
      handler: f.handler,
      functionName: 'order-status-consumer',
    });
    await sleep(2_500);
    const { Messages = [] } = await f.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: f.queue.source.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    // Assess: what the router asked of SQS …
    expect(poll).toMatchObject({ received: 3, failed: 3, deleted: 0 });
    const byKey = Object.fromEntries(f.reports.map((r) => [r.key, [r.attempt, r.disposition]]));
    expect(byKey).toEqual({
      'SO-ATTEMPT-1#PAID': [1, { action: 'retry', delaySeconds: 10 }],
      'SO-ATTEMPT-2#PAID': [2, { action: 'retry', delaySeconds: 30 }],
      'SO-ATTEMPT-16#PAID': [16, { action: 'retry', delaySeconds: 7200 }],
    });
    const visibilityChanges = sent.filter((c) => c.name === 'ChangeMessageVisibilityCommand');
    expect(visibilityChanges.map((c) => Number(c.input.VisibilityTimeout)).sort((a, b) => a - b)).toEqual([
      10, 30, 7200,
    ]);
    expect(new Set(visibilityChanges.map((c) => c.input.QueueUrl))).toEqual(new Set([f.queue.source.url]));
    // … and what the emulator's queue did: all three are still in flight past the queue's 1 s timeout
    expect(Messages).toEqual([]);
    expect(await f.sourceDepth()).toEqual({ visible: 0, inFlight: 3 });
  });

  it('holds a failed message back for its scheduled delay, then delivers it again as attempt 2 (3 s schedule, end to end)', async () => {
    // Prepare: a 3 s schedule; the queue's own visibility timeout raised to 60 s, so a message
    // back within 30 s is back because of the router's visibility change, not the queue's timeout
    const DELAY_SECONDS = 3;
    const f = await orderStatusFixture({
      schedule: new RetrySchedule(Array.from({ length: 16 }, () => DELAY_SECONDS)),
    });
    await f.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: f.queue.source.url, Attributes: { VisibilityTimeout: '60' } }),
    );
    const sent = recordCommands(f.sqs);
    await f.send(overtakingPaid('SO-SHORT-DELAY'));
    const poll = () =>
      pollOnce({
        sqs: f.sqs,
        queueUrl: f.queue.source.url,
        queueArn: f.queue.source.arn,
        handler: f.handler,
        functionName: 'order-status-consumer',
      });
    // Act: the first delivery fails; poll like Lambda until the message comes back
    const first = await poll();
    const emptyPollsAt: number[] = [];
    let again: Awaited<ReturnType<typeof poll>> | undefined;
    let backAt = 0;
    for (const giveUpAt = Date.now() + 30_000; Date.now() < giveUpAt; await sleep(100)) {
      const r = await poll();
      if (r.received > 0) {
        again = r;
        backAt = Date.now();
        break;
      }
      emptyPollsAt.push(Date.now());
    }
    // Assess: the router changed this delivery's visibility to the scheduled delay, and SQS accepted it …
    expect(first).toMatchObject({ received: 1, failed: 1, deleted: 0 });
    expect(f.reports[0]!.disposition).toEqual({ action: 'retry', delaySeconds: DELAY_SECONDS });
    const change = sent.find(
      (c) => c.name === 'ChangeMessageVisibilityCommand' && c.input.ReceiptHandle === first.records![0]!.receiptHandle,
    );
    expect(change).toMatchObject({ input: { QueueUrl: f.queue.source.url, VisibilityTimeout: DELAY_SECONDS } });
    expect(change!.error).toBeUndefined();
    // … so the message stayed invisible for the delay (polled and not received while it ran; SQS
    // made it visible no earlier than the delay after the change was asked for) …
    expect(emptyPollsAt.filter((t) => t < change!.at + DELAY_SECONDS * 1000).length).toBeGreaterThan(0);
    expect(backAt - change!.at).toBeGreaterThan(DELAY_SECONDS * 1000);
    // … and then came back, long before the queue's own 60 s timeout, as the second receive and attempt 2
    expect(again).toBeDefined();
    expect(again!.records![0]!.attributes.ApproximateReceiveCount).toBe('2');
    expect(f.reports[1]).toMatchObject({ key: 'SO-SHORT-DELAY#PAID', attempt: 2 });
  });

  it('dead-letters attempt 17 (reconsumeTimes 16 from the broker) instead of delaying it', async () => {
    // Prepare
    const f = await orderStatusFixture({ schedule: new RetrySchedule() });
    const sent = recordCommands(f.sqs);
    await f.send(overtakingPaid('SO-ATTEMPT-17', 16));
    // Act
    await f.drain();
    // Assess
    expect(f.reports).toHaveLength(1);
    expect(f.reports[0]).toMatchObject({
      attempt: 17,
      disposition: { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' },
    });
    expect(sent.filter((c) => c.name === 'ChangeMessageVisibilityCommand')).toEqual([]);
    expect((await f.deadLetters())[0]!.attributes).toMatchObject({
      attempt: '17',
      'failure-code': 'RETRIES_EXHAUSTED',
    });
  });
});
