import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  type ConsumptionError,
  HeldBackError,
  PermanentFailureError,
  TransientFailureError,
} from '../../../../src/consumer/failures/errors.ts';
import type { Disposition, Settlement } from '../../../../src/consumer/settlement.ts';
import { REDRIVE_COUNT_ATTRIBUTE } from '../../../../src/consumer/sqs-attributes.ts';
import { deliveryOf, traceOutcomeOf } from '../../../../src/consumer/steps/record-trace.ts';
import { parseEnvelope, writeEnvelope } from '../../../../src/rocketmq/index.ts';

const ack: Disposition = { action: 'ack' };
const failed = (error: ConsumptionError): Settlement => ({ outcome: 'failed', error });

describe('a record span’s outcome', () => {
  it.each([
    ['applied', { outcome: 'processed' }, ack],
    ['duplicate', { outcome: 'duplicate', reason: 'dedup-record-exists' }, ack],
    ['filtered', { outcome: 'filtered', tag: 'X' }, ack],
    ['held-back', failed(new HeldBackError('g', 'M')), { action: 'retry', delaySeconds: 0 }],
    ['conflict', failed(new PermanentFailureError('c', 'PAYLOAD_CONFLICT')), { action: 'dead-letter', code: 'C' }],
    ['dead-lettered', failed(new PermanentFailureError('p', 'INVALID_PAYLOAD')), { action: 'dead-letter', code: 'P' }],
    ['retried', failed(new TransientFailureError('t')), { action: 'retry', delaySeconds: 10 }],
    ['retried', failed(new TransientFailureError('t')), { action: 'retry-dead-letter' }],
    ['failed', failed(new TransientFailureError('t')), ack],
  ] as [string, Settlement, Disposition][])('is %s', (outcome, settlement, disposition) => {
    expect(traceOutcomeOf(settlement, disposition)).toBe(outcome);
  });
});

describe('how a copy was delivered', () => {
  const record = (attributes: Partial<SQSRecord> = {}) =>
    ({ messageAttributes: {}, attributes: { ApproximateReceiveCount: '1' }, ...attributes }) as SQSRecord;
  const message = (reconsumeTimes = 0) =>
    parseEnvelope(writeEnvelope({ topic: 'T', msgId: 'A'.repeat(32), body: '{}', reconsumeTimes }));

  it('tells the first delivery, a redelivery, a redriven letter and a replayed event apart', () => {
    expect(deliveryOf(record(), message())).toBe('first');
    expect(deliveryOf(record({ attributes: { ApproximateReceiveCount: '2' } as never }), message())).toBe(
      'redelivered',
    );
    expect(deliveryOf(record(), message(3))).toBe('redelivered');
    const redriven = record({
      messageAttributes: { [REDRIVE_COUNT_ATTRIBUTE]: { stringValue: '1', dataType: 'Number' } } as never,
    });
    expect(deliveryOf(redriven, message(16))).toBe('redriven');
    const envelope = JSON.parse(writeEnvelope({ topic: 'T', msgId: 'A'.repeat(32), body: '{}' }));
    const replayed = parseEnvelope(
      JSON.stringify({ 'detail-type': 'mq:Topic:SendMessage', 'replay-name': 'orders-2026-12-01', detail: envelope }),
    );
    expect(deliveryOf(record(), replayed)).toBe('replayed');
  });
});
