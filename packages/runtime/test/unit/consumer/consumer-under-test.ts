import middy, { type MiddlewareObj } from '@middy/core';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { sqsRecord } from '@rocketmq-lambda/tools/local/sqs-record.ts';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { InvalidPayloadError } from '../../../src/consumer/failures/errors.ts';
import { FailureRouter } from '../../../src/consumer/failures/failure-router.ts';
import type { ConsumptionStrategy } from '../../../src/consumer/idempotency/strategy.ts';
import type { Invocation } from '../../../src/consumer/index.ts';
import {
  ConsumerEngine,
  type ConsumerEngineOptions,
  type ConsumerInternal,
  type ReportObserver,
  rocketmqConsumer,
} from '../../../src/consumer/internal.ts';
import type { ConsumerMessage, RecordReport } from '../../../src/consumer/settlement.ts';
import { REDRIVE_COUNT_ATTRIBUTE } from '../../../src/consumer/sqs-attributes.ts';
import { type EnvelopeFields, MsgIdGenerator, RetrySchedule, writeEnvelope } from '../../../src/rocketmq/index.ts';
import { recordingSqs, type SqsAnswer } from './recording-sqs.ts';

export const GROUP = 'points-consumer-group';
export const SOURCE_ARN = `arn:aws:sqs:us-east-1:123456789012:${GROUP}`;
export const DLQ_URL = `https://sqs.us-east-1.amazonaws.com/123456789012/${GROUP}-dlq`;

/** The business payload of these tests: an order that awards points. */
export interface Award {
  readonly orderNo: string;
  readonly points: number;
  readonly note?: string;
}

/** Refuses what the points parser refuses: no order number, or points that are not a positive integer. */
export function parseAward(body: string): Award {
  const value: unknown = JSON.parse(body);
  if (typeof value !== 'object' || value === null) throw new InvalidPayloadError('body is not an object');
  const { orderNo, points, note } = value as Record<string, unknown>;
  if (typeof orderNo !== 'string' || orderNo === '') throw new InvalidPayloadError('orderNo is required');
  if (!Number.isInteger(points) || (points as number) <= 0)
    throw new InvalidPayloadError('points must be a positive integer');
  return { orderNo, points: points as number, ...(typeof note === 'string' ? { note } : {}) };
}

const ids = new MsgIdGenerator();
let sqsIds = 0;

/** An SQS record holding the bridge's signed envelope of one `ORDER_TOPIC` message (tag `PAID` unless told). */
export function awardRecord(
  order: Record<string, unknown>,
  options: {
    envelope?: Partial<EnvelopeFields>;
    receiveCount?: number;
    redriveCount?: number;
    messageId?: string;
  } = {},
): SQSRecord {
  const body = writeEnvelope({
    topic: 'ORDER_TOPIC',
    msgId: ids.next(),
    tags: 'PAID',
    body: JSON.stringify(order),
    ...options.envelope,
  });
  return rawRecord(body, options);
}

/**
 * An SQS record with any body at all (an envelope the bridge never wrote), signed when it is a JSON
 * object (`LocalSigningKey.sign`), so that the consumer judges its content; unless `unsigned`.
 */
export function rawRecord(
  body: string,
  options: { receiveCount?: number; redriveCount?: number; messageId?: string; unsigned?: boolean } = {},
): SQSRecord {
  const record = sqsRecord(options.unsigned ? body : PROCESS_SIGNING_KEY.sign(body), SOURCE_ARN, {
    messageId: options.messageId ?? `m-${++sqsIds}`,
    receiveCount: options.receiveCount ?? 1,
  });
  if (options.redriveCount === undefined) return record;
  return {
    ...record,
    messageAttributes: { [REDRIVE_COUNT_ATTRIBUTE]: { dataType: 'Number', stringValue: String(options.redriveCount) } },
  };
}

/** The business as the runtime calls it. */
export type Business<R> = (msg: ConsumerMessage<Award>, invocation: Invocation) => Promise<R> | R;

export interface ConsumerSetup<R>
  extends Partial<
    Omit<ConsumerEngineOptions<Award, R>, 'strategy' | 'failures' | 'parsePayload' | 'keyOf' | 'business'>
  > {
  strategy: ConsumptionStrategy<R>;
  /** Every record's report (default: kept in `reports`). */
  onReport?: ReportObserver;
  business?: Business<R>;
  /** Middlewares used before the consumer's (Powertools' logger and metrics sit there in production). */
  before?: MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal>[];
  sqsAnswer?: SqsAnswer;
  schedule?: RetrySchedule;
}

/**
 * The public middleware as a team wires it, on an in-memory strategy and a recording SQS
 * stub: no emulator, so every path runs in milliseconds.
 */
export function consumerUnderTest<R>(setup: ConsumerSetup<R>) {
  const { strategy, business, before = [], sqsAnswer, schedule, ...engineOptions } = setup;
  const reports: RecordReport[] = [];
  const businessCalls: ConsumerMessage<Award>[] = [];
  const { sqs, sent, inputsOf } = recordingSqs(sqsAnswer);
  const failures = new FailureRouter({
    sqs,
    group: GROUP,
    deadLetterQueueUrl: DLQ_URL,
    schedule: schedule ?? new RetrySchedule(),
  });
  const run: Business<R> = (msg, invocation) => {
    businessCalls.push(msg);
    if (!business) throw new Error('this test gives the business nothing to do');
    return business(msg, invocation);
  };
  let wired = middy<SQSEvent, SQSBatchResponse, Error, Context, ConsumerInternal>();
  for (const middleware of before) wired = wired.use(middleware);
  const consumer = wired.use(
    rocketmqConsumer(
      new ConsumerEngine<Award, R>({
        group: GROUP,
        tagExpression: 'PAID',
        parsePayload: parseAward,
        keyOf: (award) => award.orderNo,
        strategy,
        business: run,
        failures,
        envelopeKeys: PROCESS_SIGNING_KEY.ring,
        ...engineOptions,
      }),
      'onReport' in setup ? setup.onReport : (r) => reports.push(r),
    ),
  );

  return {
    reports,
    businessCalls,
    sent,
    inputsOf,
    invoke: (records: SQSRecord[], context: Context = lambdaContext('consumer-under-test', 30_000)) =>
      consumer({ Records: records }, context),
    /** The report of one SQS record. */
    reportOf: (record: SQSRecord) => reports.find((r) => r.sqsMessageId === record.messageId),
  };
}
