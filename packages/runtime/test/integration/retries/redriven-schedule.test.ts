import { orderEnvelope, pointsFixture, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { REDRIVE_COUNT_ATTRIBUTE } from '../../../src/consumer/internal.ts';
import { awsError, injectFault } from './sdk-faults.ts';

const ORDER = { orderNo: 'SO-REDRIVEN-1', userId: '7201', points: 300 };

describe('a redriven letter gets a fresh schedule', () => {
  it.each([
    ['a letter sent back by ops dlq redrive', 1, '1', { action: 'retry', delaySeconds: 0 }],
    [
      'the same envelope never redriven (RocketMQ already retried it 16 times)',
      17,
      undefined,
      { action: 'dead-letter', code: 'RETRIES_EXHAUSTED' },
    ],
  ])('%s: its first transient failure counts as attempt %i', async (_, attempt, redriveCount, disposition) => {
    // Prepare: the envelope says reconsumeTimes 16; DynamoDB is failing for a while
    const f = await pointsFixture();
    injectFault(f.dynamoDb, {
      command: 'TransactWriteItemsCommand',
      error: () => awsError('InternalServerError', 'Internal server error'),
    });
    const record = sqsRecord(
      orderEnvelope(ORDER, { reconsumeTimes: 16 }),
      f.resources.queues['point-consumer-group']!.source.arn,
    );
    if (redriveCount)
      record.messageAttributes[REDRIVE_COUNT_ATTRIBUTE] = { dataType: 'String', stringValue: redriveCount };
    // Act
    await f.invoke([record]);
    // Assess
    expect(f.reports[0]!.attempt).toBe(attempt);
    expect(f.reports[0]!.disposition).toEqual(disposition);
    expect(await f.balance('7201')).toBe(0);
  });
});
