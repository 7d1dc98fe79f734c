import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { describe, expect, it } from 'vitest';
import { ConsumerEngine } from '../../../src/consumer/consumer-engine.ts';
import { FailureRouter } from '../../../src/consumer/failures/failure-router.ts';
import { InvalidConsumerConfigError, TransientFailureError } from '../../../src/consumer/index.ts';
import { awardRecord, DLQ_URL, GROUP, parseAward, rawRecord } from './consumer-under-test.ts';
import { inMemoryStrategy } from './in-memory-strategy.ts';
import { recordingSqs } from './recording-sqs.ts';

interface Grant {
  readonly points: number;
}

/** The engine as a team would call it without Middy: a batch in, the response and the reports out. */
function engine(strategy = inMemoryStrategy<Grant>()) {
  const { sqs, inputsOf } = recordingSqs();
  const consumer = new ConsumerEngine<{ orderNo: string; points: number }, Grant>({
    group: GROUP,
    tagExpression: 'PAID',
    parsePayload: parseAward,
    keyOf: (award) => award.orderNo,
    strategy: strategy.strategy,
    business: (msg) => {
      if (msg.key === 'SO-SLOW') throw new TransientFailureError('ledger unavailable');
      return { points: msg.payload.points };
    },
    failures: new FailureRouter({ sqs, group: GROUP, deadLetterQueueUrl: DLQ_URL }),
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
    now: () => 1_000_000,
  });
  return { consumer, strategy, inputsOf };
}

describe('ConsumerEngine: a batch in, the batch response and one report per record out', () => {
  it('cannot be built without a signing key ring: no consumer skips the signature check', () => {
    const { sqs } = recordingSqs();
    const build = () =>
      // @ts-expect-error envelopeKeys is required
      new ConsumerEngine<{ orderNo: string; points: number }, Grant>({
        group: GROUP,
        tagExpression: 'PAID',
        parsePayload: parseAward,
        keyOf: (award) => award.orderNo,
        strategy: inMemoryStrategy<Grant>().strategy,
        business: (msg) => ({ points: msg.payload.points }),
        failures: new FailureRouter({ sqs, group: GROUP, deadLetterQueueUrl: DLQ_URL }),
      });
    expect(build).toThrow(InvalidConsumerConfigError);
    expect(build).toThrow(/no envelope signing key ring \(envelopeKeys\)/);
  });

  it('answers with the records that must come back and reports every record in batch order, routed', async () => {
    // Prepare
    const { consumer, inputsOf } = engine();
    const records = [
      awardRecord({ orderNo: 'SO1', points: 1 }),
      rawRecord('not an envelope'),
      awardRecord({ orderNo: 'SO-SLOW', points: 2 }),
      awardRecord({ orderNo: 'SO3', points: 3 }, { envelope: { tags: 'FINISHED' } }),
    ];
    // Act
    const { response, reports } = await consumer.consume({ Records: records }, consumer.invocation(30_000));
    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[2]!.messageId }] });
    expect(reports.map((r) => [r.sqsMessageId, r.settlement.outcome, r.disposition.action])).toEqual([
      [records[0]!.messageId, 'processed', 'ack'],
      [records[1]!.messageId, 'failed', 'dead-letter'],
      [records[2]!.messageId, 'failed', 'retry'],
      [records[3]!.messageId, 'filtered', 'ack'],
    ]);
    expect(inputsOf('SendMessageCommand')).toHaveLength(1);
  });

  it('takes a FIFO batch by message group, a packing strategy’s batch together, any other record by record', async () => {
    // Prepare
    const packing = engine(inMemoryStrategy<Grant>({ commitBatch: () => undefined }));
    const perRecord = engine();
    const fifo = engine(inMemoryStrategy<Grant>({ commitBatch: () => undefined }));
    const batch = () => [awardRecord({ orderNo: 'SO1', points: 1 }), awardRecord({ orderNo: 'SO2', points: 2 })];
    const grouped = batch().map((r) => ({ ...r, attributes: { ...r.attributes, MessageGroupId: 'A' } }));
    // Act
    await packing.consumer.consume({ Records: batch() }, packing.consumer.invocation(30_000));
    await perRecord.consumer.consume({ Records: batch() }, perRecord.consumer.invocation(30_000));
    await fifo.consumer.consume({ Records: grouped }, fifo.consumer.invocation(30_000));
    // Assess
    expect(packing.strategy.calls.map((c) => c.op)).toEqual(['begin', 'begin', 'commitBatch']);
    expect(perRecord.strategy.keysOf('commit').sort()).toEqual(['SO1', 'SO2']);
    expect(fifo.strategy.calls.map((c) => c.op)).toEqual(['begin', 'commit', 'begin', 'commit']);
  });

  it('names the invocation’s deadline on its own clock, a minute away when Lambda cannot tell', () => {
    const { consumer } = engine();
    expect(consumer.invocation(12_345).deadline).toBe(1_012_345);
    expect(consumer.invocation(undefined).deadline).toBe(1_060_000);
    expect(consumer.invocation(12_345).remainingMs()).toBe(12_345);
  });
});
