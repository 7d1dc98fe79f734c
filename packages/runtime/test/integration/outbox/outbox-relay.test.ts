import { OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import { type RelayReport, readOutboxNotice } from '@rocketmq-lambda/runtime/outbox/index.ts';
import { parseEnvelope, signatureRefusal } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { injectFaults } from '@rocketmq-lambda/tools/instrumentation/fault-injection.ts';
import { describe, expect, inject, it } from 'vitest';
import { GROUP, outboxItem, type Received, relayStage, TOPIC } from './relay-fixture.ts';

/** The SDK's attempts per call (`createDynamoDb` / `createSqs`'s `maxAttempts`): a fault must outlast them to reach the relay. */
const SDK_ATTEMPTS = 3;

/** Reports of one invocation by their records' stream order (message groups run side by side). */
const inStreamOrder = (reports: readonly RelayReport[]) =>
  reports
    .toSorted((a, b) => (BigInt(a.sequenceNumber) < BigInt(b.sequenceNumber) ? -1 : 1))
    .map((r) => [r.eventId, r.outcome]);

/** What every relayed copy must be: the bridge's envelope, signed with the stage key, named by the event id. */
function expectRelayedEnvelope(received: Received, key: Uint8Array, item: ReturnType<typeof outboxItem>) {
  expect(signatureRefusal(received.body, [key])).toBeUndefined();
  const message = parseEnvelope(received.body);
  expect(message.msgId).toBe(item.eventId);
  expect(message.keys[0]).toBe(item.eventId);
  expect(message.keys).toEqual([item.eventId, item.businessKey]);
  expect(message.userProperties[OUTBOX_EVENT_ID_PROPERTY]).toBe(item.eventId);
  expect(message.userProperties.origin).toBe('relay-test');
  expect(message.storeTimestamp).toBe(item.committedAt);
  expect(message.bornTimestamp).toBe(item.committedAt);
  expect(message.topic).toBe(item.topic);
  expect(message.tags).toBe(item.tag);
  expect(message.body).toBe(item.body);
  return message;
}

describe('the outbox relay on the emulator, through the stream poller', () => {
  it('relays a PENDING item to each kind of target as a signed envelope, then marks it RELAYED', async () => {
    // Prepare
    const stage = await relayStage(inject('emulatorEndpoint'));
    const toQueues = await stage.commit(outboxItem('SO-1', { messageGroup: 'U-88372' }));
    const toBus = await stage.commit(outboxItem('SO-2', { topic: TOPIC.eventbridge, target: 'eventbridge' }));
    const toRocketMQ = await stage.commit(outboxItem('SO-3', { topic: TOPIC.rocketmq, target: 'rocketmq' }));

    // Act
    const poll = await stage.poller.pollOnce();

    // Assess
    expect(poll.received).toBe(3);
    expect(poll.retryFrom).toBeUndefined();
    const [notified] = await stage.receive(stage.queues.notify);
    expectRelayedEnvelope(notified!, stage.signing.key, toQueues);
    const orderly = await stage.receive(stage.queues.orderly);
    expect(orderly).toHaveLength(1);
    expect(orderly[0]!.messageGroupId).toBe('U-88372');
    expect(orderly[0]!.deduplicationId).toBe(toQueues.eventId);
    expect(orderly[0]!.body).toBe(notified!.body);
    expect(await stage.receive(stage.queues.small)).toEqual([]); // subscribed to another tag
    const [event] = await stage.receive(stage.queues.bus);
    expect(JSON.parse(event!.body).source).toBe(`rocketmq.outbox-${toBus.group}`);
    expectRelayedEnvelope(event!, stage.signing.key, toBus);
    const [outbound] = await stage.receive(stage.queues.outbound);
    expect(expectRelayedEnvelope(outbound!, stage.signing.key, toRocketMQ).source).toBe(
      `rocketmq://outbox-${toRocketMQ.group}`,
    );
    for (const item of [toQueues, toBus, toRocketMQ]) {
      const stored = await stage.itemOf(item.eventId);
      expect(stored?.status).toBe('RELAYED');
      expect(stored?.relayedAt).toBeGreaterThanOrEqual(item.committedAt);
    }
    // Its own RELAYED marks come back on the stream and are skipped: nothing is sent twice.
    expect((await stage.poller.pollOnce()).received).toBe(3);
    expect(await stage.receive(stage.queues.notify)).toEqual([]);
    expect(stage.reports.map((r) => r.outcome)).toEqual(['relayed', 'relayed', 'relayed']);
  });

  it('killed after the send and before the mark: the redelivered record sends the same envelope again', async () => {
    // Prepare: the first mark never reaches DynamoDB (nor do the SDK's two retries of it), as when the
    // relay dies between the send and the mark
    let marks = 0;
    const stage = await relayStage(inject('emulatorEndpoint'));
    injectFaults(stage.dynamoDb, (command) =>
      /^Update(Item)?Command$/.test(command) && marks++ < SDK_ATTEMPTS
        ? {
            when: 'before-send',
            error: () => Object.assign(new Error('relay killed (injected)'), { name: 'TimeoutError' }),
          }
        : undefined,
    );
    const item = await stage.commit(outboxItem('SO-10', { messageGroup: 'U-1' }));

    // Act
    const first = await stage.poller.pollOnce();
    const pendingBetween = (await stage.itemOf(item.eventId))?.status;
    const second = await stage.poller.pollOnce();

    // Assess
    expect(first.retryFrom).toBe(first.records[0]!.dynamodb!.SequenceNumber);
    expect(pendingBetween).toBe('PENDING');
    expect(second.records[0]!.dynamodb!.SequenceNumber).toBe(first.retryFrom);
    const copies = await stage.receive(stage.queues.notify);
    expect(copies).toHaveLength(2);
    expect(copies[1]!.body).toBe(copies[0]!.body); // byte for byte: downstream dedups it on the event id
    expectRelayedEnvelope(copies[0]!, stage.signing.key, item);
    expect(await stage.receive(stage.queues.orderly)).toHaveLength(1); // FIFO dedup on the event id
    expect((await stage.itemOf(item.eventId))?.status).toBe('RELAYED');
    expect(stage.reports.map((r) => [r.outcome, 'code' in r ? r.code : undefined])).toEqual([
      ['retry', 'MARK_FAILED'],
      ['relayed', undefined],
    ]);
  });

  it("a failing target for one message group holds back that group's later records, not another group's", async () => {
    // Prepare: one subscribing queue throttles the sends of U-A's first record for one invocation (the SDK's
    // retries included); the FIFO queue takes its copy, and deduplicates the retry's on the event id
    const stage = await relayStage(inject('emulatorEndpoint'));
    const a1 = await stage.commit(outboxItem('SO-A1', { messageGroup: 'U-A' }));
    const b1 = await stage.commit(outboxItem('SO-B1', { messageGroup: 'U-B' }));
    const a2 = await stage.commit(outboxItem('SO-A2', { messageGroup: 'U-A' }));
    let throttled = 0;
    injectFaults(stage.sqs, (command, input) => {
      const toNotify = input.QueueUrl === stage.queues.notify && String(input.MessageBody).includes(a1.eventId);
      if (command !== 'SendMessageCommand' || !toNotify || throttled >= SDK_ATTEMPTS) return;
      throttled++;
      return {
        when: 'before-send',
        error: () => Object.assign(new Error('Rate exceeded (injected)'), { name: 'ThrottlingException' }),
      };
    });

    // Act
    const first = await stage.poller.pollOnce();
    const afterFirst = (await stage.receive(stage.queues.notify)).map((m) => parseEnvelope(m.body).msgId);
    await stage.poller.pollOnce();

    // Assess
    const seq = (i: number) => first.records[i]!.dynamodb!.SequenceNumber!;
    expect(first.retryFrom).toBe(seq(0));
    expect(afterFirst).toEqual([b1.eventId]); // a2 was not sent before a1
    expect(inStreamOrder(stage.reports.slice(0, 3))).toEqual([
      [a1.eventId, 'retry'],
      [b1.eventId, 'relayed'],
      [a2.eventId, 'held-back'],
    ]);
    // The retry from a1's sequence number: a1, then a2 after it; b1, relayed already by this instance, is skipped.
    expect(inStreamOrder(stage.reports.slice(3))).toEqual([
      [a1.eventId, 'relayed'],
      [b1.eventId, 'already-relayed'],
      [a2.eventId, 'relayed'],
    ]);
    const sent = (await stage.receive(stage.queues.notify)).map((m) => parseEnvelope(m.body).msgId);
    expect(sent).toEqual([a1.eventId, a2.eventId]);
    // The FIFO queue: each group in order, a1's second copy deduplicated on the event id.
    const fifo = await stage.receive(stage.queues.orderly);
    const ofGroup = (g: string) => fifo.filter((m) => m.messageGroupId === g).map((m) => parseEnvelope(m.body).msgId);
    expect(fifo).toHaveLength(3);
    expect(ofGroup('U-A')).toEqual([a1.eventId, a2.eventId]);
    expect(ofGroup('U-B')).toEqual([b1.eventId]);
    for (const item of [a1, a2, b1]) expect((await stage.itemOf(item.eventId))?.status).toBe('RELAYED');
  });

  it('a refused item is marked FAILED with its reason, noticed in the DLQ, and the stream goes on', async () => {
    // Prepare: one message too large for its queue, one topic with no target, an ordinary item of the same
    // group after them, and an item without a body
    const stage = await relayStage(inject('emulatorEndpoint'));
    const tooLarge = await stage.commit(
      outboxItem('SO-20', { topic: 'SMALL_TOPIC', messageGroup: 'U-9', body: 'x'.repeat(2_000) }),
    );
    const noTarget = await stage.commit(outboxItem('SO-21', { topic: TOPIC.none, messageGroup: 'U-9' }));
    const after = await stage.commit(outboxItem('SO-22', { messageGroup: 'U-9' }));
    const { body: _, ...bodiless } = outboxItem('SO-23');
    const unreadable = await stage.commit(bodiless as typeof after);

    // Act
    const poll = await stage.poller.pollOnce();

    // Assess
    expect(poll.retryFrom).toBeUndefined();
    const large = await stage.itemOf(tooLarge.eventId);
    expect(large?.status).toBe('FAILED');
    expect(large?.failureReason).toMatch(/^TARGET_REFUSED: InvalidParameterValue.*shorter than 1024 bytes/);
    const missing = await stage.itemOf(noTarget.eventId);
    expect(missing?.status).toBe('FAILED');
    expect(missing?.failureReason).toBe(
      `NO_RELAY_TARGET: topic ${TOPIC.none} has no target in OUTBOX_TARGETS for this relay`,
    );
    const notices = (await stage.receive(stage.queues.deadLetters)).map((m) => readOutboxNotice(m.body));
    // In stream order within the U-9 group; the unreadable item keeps no order with anything.
    expect(notices.map((n) => [n?.eventId, n?.group, n?.topic, n?.code]).toSorted()).toEqual(
      [
        [tooLarge.eventId, tooLarge.group, 'SMALL_TOPIC', 'TARGET_REFUSED'],
        [noTarget.eventId, noTarget.group, TOPIC.none, 'NO_RELAY_TARGET'],
        [unreadable.eventId, GROUP.group, '', 'UNREADABLE_ITEM'],
      ].toSorted(),
    );
    expect(notices.filter((n) => n?.topic !== '').map((n) => n?.eventId)).toEqual([tooLarge.eventId, noTarget.eventId]);
    expect((await stage.itemOf(unreadable.eventId))?.failureReason).toBe('UNREADABLE_ITEM: the outbox item lacks body');
    expect(notices.find((n) => n?.code === 'NO_RELAY_TARGET')?.reason).toContain(TOPIC.none);
    expect((await stage.itemOf(after.eventId))?.status).toBe('RELAYED');
  });

  it('a redrive (FAILED → PENDING) comes back on the stream as a MODIFY and is relayed', async () => {
    // Prepare: an item its relay marked FAILED earlier (the FAILED image on the stream is skipped)
    const stage = await relayStage(inject('emulatorEndpoint'));
    const item = await stage.commit(outboxItem('SO-30', { status: 'FAILED', failureReason: 'TARGET_UNAVAILABLE: x' }));
    expect((await stage.poller.pollOnce()).received).toBe(1);
    expect(await stage.receive(stage.queues.notify)).toEqual([]);

    // Act
    await stage.redrive(item.eventId);
    const poll = await stage.poller.pollOnce();

    // Assess
    expect(poll.records.map((r) => r.eventName)).toEqual(['MODIFY']);
    const [copy] = await stage.receive(stage.queues.notify);
    expectRelayedEnvelope(copy!, stage.signing.key, item);
    const stored = await stage.itemOf(item.eventId);
    expect(stored?.status).toBe('RELAYED');
    expect(stored?.redriveCount).toBe(1);
    expect(stage.reports.map((r) => r.outcome)).toEqual(['relayed']);
  });
});

describe('the stream poller', () => {
  it('stops when told, having relayed what was committed while it ran', async () => {
    const stage = await relayStage(inject('emulatorEndpoint'));
    const stop = new AbortController();
    const running = stage.poller.run(stop.signal, 10);
    const items = await Promise.all(['SO-40', 'SO-41'].map((key) => stage.commit(outboxItem(key))));
    for (let i = 0; i < 200 && stage.reports.length < items.length; i++) await new Promise((r) => setTimeout(r, 25));
    stop.abort();
    await running;
    expect(new Set(stage.reports.map((r) => r.eventId))).toEqual(new Set(items.map((i) => i.eventId)));
  });
});
