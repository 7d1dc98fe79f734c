import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import type { SQSRecord } from 'aws-lambda';
import { FailureRouter } from '../../../../src/consumer/failures/failure-router.ts';
import type { ConsumptionStrategy } from '../../../../src/consumer/idempotency/strategy.ts';
import type { Business, Settlement } from '../../../../src/consumer/settlement.ts';
import type { BatchState } from '../../../../src/consumer/steps/batch-state.ts';
import type { ConsumerSetup } from '../../../../src/consumer/steps/consumer-setup.ts';
import { prepareBatch } from '../../../../src/consumer/steps/prepare.ts';
import { TagExpression } from '../../../../src/rocketmq/index.ts';
import { type Award, DLQ_URL, GROUP, parseAward } from '../consumer-under-test.ts';
import { recordingSqs, type SqsAnswer } from '../recording-sqs.ts';

/**
 * A runner's setup as `ConsumerEngine` builds it, without the engine or Middy: an in-memory
 * strategy, a recording SQS stub behind the failure router, contention backoff recorded
 * instead of slept.
 */
export function runnerSetup<R>(
  strategy: ConsumptionStrategy<R>,
  business: Business<Award, R>,
  options: { concurrency?: number; contentionRetries?: number; sqsAnswer?: SqsAnswer } = {},
) {
  const { sqs, inputsOf } = recordingSqs(options.sqsAnswer);
  const sleeps: number[] = [];
  const setup: ConsumerSetup<Award, R> = {
    group: GROUP,
    tags: TagExpression.parse('PAID'),
    horizonSeconds: 86_400,
    parsePayload: parseAward,
    keyOf: (award) => award.orderNo,
    fingerprintFields: (award) => award,
    envelopeKeys: PROCESS_SIGNING_KEY.ring,
    strategy,
    business,
    failures: new FailureRouter({ sqs, group: GROUP, deadLetterQueueUrl: DLQ_URL }),
    concurrency: options.concurrency ?? 10,
    contention: {
      retries: options.contentionRetries ?? 3,
      backoffMs: 25,
      sleep: async (ms) => void sleeps.push(ms),
    },
    now: () => 1_000_000,
  };
  return {
    setup,
    sleeps,
    inputsOf,
    /** The batch as the prepare step leaves it, for the runner to settle. */
    prepare: (records: SQSRecord[]) => prepareBatch(setup, records, { deadline: 1_030_000, remainingMs: () => 30_000 }),
  };
}

/** The settlement a runner gave one record. */
export const settlementOf = <P>(batch: BatchState<P>, record: SQSRecord): Settlement | undefined =>
  batch.settledAs(record)?.settlement;
