import { sqsRecord } from '@rocketmq-lambda/tools/local/sqs-record.ts';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  InvalidPayloadError,
  LeaseHeldError,
  TransientFailureError,
} from '../../../../src/consumer/failures/errors.ts';
import { DEAD_LETTER_ATTRIBUTES, FailureRouter } from '../../../../src/consumer/failures/failure-router.ts';
import { REDRIVE_COUNT_ATTRIBUTE } from '../../../../src/consumer/sqs-attributes.ts';
import { RetrySchedule } from '../../../../src/rocketmq/index.ts';
import { recordingSqs, type SqsAnswer, serviceError } from '../recording-sqs.ts';

const GROUP = 'points-consumer-group';
const SOURCE_ARN = `arn:aws:sqs:us-east-1:123456789012:${GROUP}`;
const SOURCE_URL = `https://sqs.us-east-1.amazonaws.com/123456789012/${GROUP}`;
const DLQ_URL = `https://sqs.us-east-1.amazonaws.com/123456789012/${GROUP}-dlq`;
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

/** A failure router on a recording SQS stub, its clock fixed at NOW. */
function routerUnderTest(options: { answer?: SqsAnswer; schedule?: RetrySchedule; clock?: boolean } = {}) {
  const stub = recordingSqs(options.answer);
  const router = new FailureRouter({
    sqs: stub.sqs,
    group: GROUP,
    deadLetterQueueUrl: DLQ_URL,
    ...(options.schedule ? { schedule: options.schedule } : {}),
    ...(options.clock === false ? {} : { now: () => NOW }),
  });
  return { router, ...stub };
}

const record = (overrides: Partial<SQSRecord> = {}): SQSRecord => ({
  ...sqsRecord('{"order":"SO1"}', SOURCE_ARN, { messageId: 'm-1' }),
  ...overrides,
});
const transient = new TransientFailureError('DynamoDB throttled the write', 'ThrottlingException');
const permanent = new InvalidPayloadError('points must be a positive integer');

/** The dead letter's attributes as plain strings. */
function attributesOf(input: Record<string, unknown>): Record<string, string> {
  const attributes = input.MessageAttributes as Record<string, { DataType: string; StringValue: string }>;
  for (const value of Object.values(attributes)) expect(value.DataType).toBe('String');
  return Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, value.StringValue]));
}

describe('FailureRouter: a transient failure waits its turn on the RocketMQ schedule', () => {
  it.each([
    [1, 10],
    [2, 30],
    [16, 7200],
  ])('after failed attempt %i it hides the record for %i s and reports it for retry', async (attempt, delaySeconds) => {
    // Prepare
    const { router, sent } = routerUnderTest();
    // Act
    const disposition = await router.route(record(), transient, { attempt, msgId: 'MSG1', key: 'SO1' });
    // Assess: the queue URL is looked up from the ARN, then the record's visibility is set
    expect(disposition).toEqual({ action: 'retry', delaySeconds });
    expect(sent).toEqual([
      { command: 'GetQueueUrlCommand', input: { QueueName: GROUP, QueueOwnerAWSAccountId: '123456789012' } },
      {
        command: 'ChangeMessageVisibilityCommand',
        input: { QueueUrl: SOURCE_URL, ReceiptHandle: 'rh-m-1', VisibilityTimeout: delaySeconds },
      },
    ]);
  });

  it('uses RocketMQ’s schedule when none is given', () => {
    expect(routerUnderTest().router.schedule.delaysSeconds).toEqual(new RetrySchedule().delaysSeconds);
  });

  it('stretches the delay to a lease’s end, rounded up to the second', async () => {
    // Prepare: the key is leased elsewhere for another 95.2 s, longer than the scheduled 10 s
    const { router, inputsOf } = routerUnderTest();
    // Act
    const disposition = await router.route(record(), new LeaseHeldError('SO1', NOW + 95_200), { attempt: 1 });
    // Assess
    expect(disposition).toEqual({ action: 'retry', delaySeconds: 96 });
    expect(inputsOf('ChangeMessageVisibilityCommand')).toEqual([expect.objectContaining({ VisibilityTimeout: 96 })]);
  });

  it('keeps the scheduled delay when the lease ends sooner', async () => {
    const { router } = routerUnderTest();
    expect(await router.route(record(), new LeaseHeldError('SO1', NOW + 2_000), { attempt: 3 })).toEqual({
      action: 'retry',
      delaySeconds: 60,
    });
  });

  it('never asks SQS for more than its 12-hour visibility limit, however long the lease', async () => {
    const { router } = routerUnderTest();
    expect(await router.route(record(), new LeaseHeldError('SO1', NOW + 13 * 3600_000), { attempt: 1 })).toEqual({
      action: 'retry',
      delaySeconds: 12 * 3600,
    });
  });

  it('reads the wall clock when it is given none', async () => {
    // Prepare: a lease ending 100 s from now by the real clock
    const { router } = routerUnderTest({ clock: false });
    // Act
    const disposition = await router.route(record(), new LeaseHeldError('SO1', Date.now() + 100_000), { attempt: 1 });
    // Assess: 100 s, or 99 s if the clock ticked past a second boundary meanwhile
    expect(disposition).toMatchObject({ action: 'retry' });
    expect((disposition as { delaySeconds: number }).delaySeconds).toBeGreaterThanOrEqual(99);
    expect((disposition as { delaySeconds: number }).delaySeconds).toBeLessThanOrEqual(100);
  });

  it('still reports the record for retry when the visibility change fails (it comes back after the queue’s own timeout)', async () => {
    // Prepare
    const { router, inputsOf } = routerUnderTest({
      answer: ({ command }) =>
        command === 'ChangeMessageVisibilityCommand' ? serviceError('ReceiptHandleIsInvalid') : undefined,
    });
    // Act
    const disposition = await router.route(record(), transient, { attempt: 2 });
    // Assess: attempted, failed, still a retry; nothing dead-lettered
    expect(disposition).toEqual({ action: 'retry', delaySeconds: 30 });
    expect(inputsOf('ChangeMessageVisibilityCommand')).toHaveLength(1);
    expect(inputsOf('SendMessageCommand')).toHaveLength(0);
  });
});

describe('FailureRouter: the source queue URL', () => {
  it('is looked up once per queue and reused', async () => {
    // Prepare
    const { router, inputsOf } = routerUnderTest();
    const other = 'arn:aws:sqs:us-east-1:210987654321:order-status-consumer-group';
    // Act
    await router.route(record(), transient, { attempt: 1 });
    await router.route(record({ messageId: 'm-2', receiptHandle: 'rh-m-2' }), transient, { attempt: 1 });
    await router.route(record({ eventSourceARN: other }), transient, { attempt: 1 });
    // Assess: one look-up per ARN, each naming the queue and its owner
    expect(inputsOf('GetQueueUrlCommand')).toEqual([
      { QueueName: GROUP, QueueOwnerAWSAccountId: '123456789012' },
      { QueueName: 'order-status-consumer-group', QueueOwnerAWSAccountId: '210987654321' },
    ]);
    expect(inputsOf('ChangeMessageVisibilityCommand').map((i) => i.QueueUrl)).toEqual([
      SOURCE_URL,
      SOURCE_URL,
      'https://sqs.us-east-1.amazonaws.com/210987654321/order-status-consumer-group',
    ]);
  });

  it('is looked up again after a failed look-up instead of caching the failure', async () => {
    // Prepare: the first look-up fails
    const { router, inputsOf } = routerUnderTest({
      answer: ({ command }, before) =>
        command === 'GetQueueUrlCommand' && before === 0 ? serviceError('ServiceUnavailable') : undefined,
    });
    // Act
    const first = await router.route(record(), transient, { attempt: 1 });
    const second = await router.route(record(), transient, { attempt: 1 });
    // Assess: the first retry could not be delayed (no URL); the second looked the URL up again and delayed it
    expect(first).toEqual({ action: 'retry', delaySeconds: 10 });
    expect(second).toEqual({ action: 'retry', delaySeconds: 10 });
    expect(inputsOf('GetQueueUrlCommand')).toHaveLength(2);
    expect(inputsOf('ChangeMessageVisibilityCommand')).toEqual([expect.objectContaining({ QueueUrl: SOURCE_URL })]);
  });
});

describe('FailureRouter: dead letters carry their reason', () => {
  it('sends a permanent failure to the DLQ at once, with every attribute, and acknowledges it', async () => {
    // Prepare
    const { router, sent, inputsOf } = routerUnderTest();
    const before = Date.now();
    // Act
    const disposition = await router.route(record(), permanent, { attempt: 1, msgId: 'MSG1', key: 'SO1' });
    // Assess: no visibility change, one letter to the DLQ with the body and the reason
    expect(disposition).toEqual({ action: 'dead-letter', code: 'INVALID_PAYLOAD' });
    expect(sent.map((s) => s.command)).toEqual(['SendMessageCommand']);
    const [letter] = inputsOf('SendMessageCommand');
    expect(letter).toMatchObject({ QueueUrl: DLQ_URL, MessageBody: '{"order":"SO1"}' });
    const attributes = attributesOf(letter!);
    expect(attributes).toEqual({
      [DEAD_LETTER_ATTRIBUTES.code]: 'INVALID_PAYLOAD',
      [DEAD_LETTER_ATTRIBUTES.classification]: 'permanent',
      [DEAD_LETTER_ATTRIBUTES.reason]: 'points must be a positive integer',
      [DEAD_LETTER_ATTRIBUTES.group]: GROUP,
      [DEAD_LETTER_ATTRIBUTES.msgId]: 'MSG1',
      [DEAD_LETTER_ATTRIBUTES.key]: 'SO1',
      [DEAD_LETTER_ATTRIBUTES.attempt]: '1',
      [DEAD_LETTER_ATTRIBUTES.sourceQueue]: SOURCE_ARN,
      [DEAD_LETTER_ATTRIBUTES.deadLetteredAt]: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(Date.parse(attributes[DEAD_LETTER_ATTRIBUTES.deadLetteredAt]!)).toBeGreaterThanOrEqual(before - 1);
  });

  it('dead-letters a transient failure whose retries are spent as RETRIES_EXHAUSTED, keeping the last error’s code in the reason', async () => {
    // Prepare
    const { router, sent, inputsOf } = routerUnderTest();
    // Act
    const disposition = await router.route(record(), transient, { attempt: 17, msgId: 'MSG1', key: 'SO1' });
    // Assess
    expect(disposition).toEqual({ action: 'dead-letter', code: 'RETRIES_EXHAUSTED' });
    expect(sent.map((s) => s.command)).toEqual(['SendMessageCommand']);
    expect(attributesOf(inputsOf('SendMessageCommand')[0]!)).toMatchObject({
      [DEAD_LETTER_ATTRIBUTES.code]: 'RETRIES_EXHAUSTED',
      [DEAD_LETTER_ATTRIBUTES.classification]: 'transient',
      [DEAD_LETTER_ATTRIBUTES.reason]: 'ThrottlingException: DynamoDB throttled the write',
      [DEAD_LETTER_ATTRIBUTES.attempt]: '17',
    });
  });

  it('follows a configured schedule: one retry, then the DLQ', async () => {
    const { router } = routerUnderTest({ schedule: new RetrySchedule([5]) });
    expect(await router.route(record(), transient, { attempt: 1 })).toEqual({ action: 'retry', delaySeconds: 5 });
    expect(await router.route(record(), transient, { attempt: 2 })).toEqual({
      action: 'dead-letter',
      code: 'RETRIES_EXHAUSTED',
    });
  });

  it('leaves out what it does not know, and keeps a redriven letter’s redrive count', async () => {
    // Prepare: an unreadable envelope (no msgId, no key) that `ops dlq redrive` already sent back twice
    const { router, inputsOf } = routerUnderTest();
    const redriven = record({
      messageAttributes: { [REDRIVE_COUNT_ATTRIBUTE]: { dataType: 'Number', stringValue: '2' } },
    });
    // Act
    await router.route(redriven, permanent, { attempt: 1 });
    // Assess
    const attributes = attributesOf(inputsOf('SendMessageCommand')[0]!);
    expect(attributes[REDRIVE_COUNT_ATTRIBUTE]).toBe('2');
    expect(Object.keys(attributes)).not.toContain(DEAD_LETTER_ATTRIBUTES.msgId);
    expect(Object.keys(attributes)).not.toContain(DEAD_LETTER_ATTRIBUTES.key);
    expect(Object.keys(attributes)).toHaveLength(8);
  });

  it('records when SQS took the record in, while the letter has room for it (SQS allows 10 attributes)', async () => {
    // Prepare: an unauthenticated envelope (no msgId, no key recorded), and a redriven letter with everything
    const { router, inputsOf } = routerUnderTest();
    const sentAt = NOW - 3_600_000;
    const taken = (extra: Partial<SQSRecord> = {}) =>
      record({ attributes: { ...record().attributes, SentTimestamp: String(sentAt) }, ...extra });
    const full = taken({ messageAttributes: { [REDRIVE_COUNT_ATTRIBUTE]: { dataType: 'Number', stringValue: '1' } } });
    // Act
    await router.route(taken(), permanent, { attempt: 1 });
    await router.route(full, permanent, { attempt: 1, msgId: 'MSG1', key: 'SO1' });
    // Assess
    const [unauthenticated, complete] = inputsOf('SendMessageCommand').map((input) => attributesOf(input));
    expect(unauthenticated![DEAD_LETTER_ATTRIBUTES.sourceSentAt]).toBe(new Date(sentAt).toISOString());
    expect(Object.keys(complete!)).toHaveLength(10);
    expect(Object.keys(complete!)).not.toContain(DEAD_LETTER_ATTRIBUTES.sourceSentAt);
  });

  it('cuts a long reason at 1000 characters and any other attribute at 256, and replaces characters SQS refuses', async () => {
    // Prepare: an attacker-chosen key and a huge message with a control character in it
    const { router, inputsOf } = routerUnderTest();
    const longKey = `SO-${'k'.repeat(400)}`;
    const error = new InvalidPayloadError(`bad\u0000field ${'x'.repeat(2000)}`);
    // Act
    await router.route(record(), error, { attempt: 1, key: longKey });
    // Assess
    const attributes = attributesOf(inputsOf('SendMessageCommand')[0]!);
    const reason = attributes[DEAD_LETTER_ATTRIBUTES.reason]!;
    expect([...reason]).toHaveLength(1000);
    expect(reason.startsWith('bad\uFFFDfield ')).toBe(true);
    expect(reason.endsWith('…')).toBe(true);
    expect([...attributes[DEAD_LETTER_ATTRIBUTES.key]!]).toHaveLength(256);
    expect(attributes[DEAD_LETTER_ATTRIBUTES.key]!.endsWith('…')).toBe(true);
  });

  it('names the error’s code as the reason when its message is empty, and gives an empty body a placeholder', async () => {
    // Prepare
    const { router, inputsOf } = routerUnderTest();
    // Act
    await router.route(record({ body: '' }), new InvalidPayloadError(''), { attempt: 1 });
    // Assess: SQS refuses an empty body and an empty attribute
    const [letter] = inputsOf('SendMessageCommand');
    expect(letter!.MessageBody).toBe('(empty body)');
    expect(attributesOf(letter!)[DEAD_LETTER_ATTRIBUTES.reason]).toBe('INVALID_PAYLOAD');
  });

  it('keeps the record in the source queue (retry-dead-letter) when the DLQ send fails, never acknowledging it', async () => {
    // Prepare
    const { router, inputsOf } = routerUnderTest({
      answer: ({ command }) => (command === 'SendMessageCommand' ? serviceError('KmsThrottled') : undefined),
    });
    // Act
    const permanentFate = await router.route(record(), permanent, { attempt: 1 });
    const exhaustedFate = await router.route(record(), transient, { attempt: 17 });
    // Assess: both letters were attempted; neither record is acknowledged
    expect(permanentFate).toEqual({ action: 'retry-dead-letter' });
    expect(exhaustedFate).toEqual({ action: 'retry-dead-letter' });
    expect(inputsOf('SendMessageCommand')).toHaveLength(2);
  });
});
