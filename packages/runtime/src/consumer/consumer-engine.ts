import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Tracer } from '@opentelemetry/api';
import type { SQSEvent } from 'aws-lambda';
import { DeliveryLifetimes, type Ordering, type QueueLifetimes } from '../config/index.ts';
import { type RocketMQMessage, type SigningKeyRing, TagExpression } from '../rocketmq/index.ts';
import { sleep } from './concurrency.ts';
import { type ConsumptionMode, consumptionModeOf } from './consumption-mode.ts';
import { InvalidConsumerConfigError, refusedAsConfig } from './failures/errors.ts';
import type { FailureRouter } from './failures/failure-router.ts';
import type { ConsumptionStrategy } from './idempotency/strategy.ts';
import type { BatchResult, Business, Invocation } from './settlement.ts';
import type { ConsumerSetup } from './steps/consumer-setup.ts';
import { prepareBatch } from './steps/prepare.ts';
import { routeBatch } from './steps/route.ts';

export interface ConsumerEngineOptions<P, R> {
  /** RocketMQ consumer group: names the records, the metrics and the DLQ. */
  group: string;
  /** RocketMQ tag expression (`*`, `PAID || FINISHED`); non-matching messages are acknowledged as filtered. */
  tagExpression: string;
  /**
   * The topic the group subscribes to (the consumer handler gives its catalogue entry's): an envelope of
   * another topic is dead-lettered as `UNSUBSCRIBED_TOPIC`, whatever its tag.
   */
  topic?: string;
  /** Parses and validates the business body; throws `InvalidPayloadError` for bad content. */
  parsePayload: (body: string, message: RocketMQMessage) => P;
  /** The business idempotency key (an order number). Never the msgId: an application re-send has a new one. */
  keyOf: (payload: P) => string;
  /**
   * The business fields whose hash tells a duplicate (same) from a conflict (different). Default: the whole payload.
   */
  fingerprintFields?: (payload: P) => unknown;
  strategy: ConsumptionStrategy<R>;
  /** What one message means; the engine calls it for each message that needs an effect. */
  business: Business<P, R>;
  failures: FailureRouter;
  /**
   * `orderly` (RocketMQ's orderly listener, a FIFO queue): attempts are the message's own
   * failures, counted in `failureCounts`, not SQS's receive count. Default `concurrent`.
   * Whatever the ordering, a batch of FIFO records is consumed one record of a message group
   * at a time.
   */
  ordering?: Ordering;
  /** Orderly groups: where each message's failure count is kept (the idempotency table, under the group's prefix). */
  failureCounts?: { client: DynamoDBDocumentClient; tableName: string; recordIdPrefix: string };
  /** The source queue and DLQ as deployed (default: what the schedule derives, as the CDK app creates them). */
  queues?: QueueLifetimes;
  /**
   * Records of one batch settled concurrently (distinct keys only; one key is always sequential); FIFO batches: message
   * groups at once.
   */
  concurrency?: number;
  /** In-invocation retries of a commit refused for contention (`ContentionError`) before the record fails. */
  contentionRetries?: number;
  /** Base of the exponential, jittered backoff between those retries; default 25 ms. */
  contentionBackoffMs?: number;
  /**
   * Every envelope must carry the bridge's signature made with one of these keys; anything else is
   * dead-lettered at once as `UNAUTHENTICATED_MESSAGE` (packages/runtime/src/rocketmq/envelope-signature.ts). There is
   * no consumer without one: a message that reaches the function by any other way than the bridge
   * (a loosened queue policy, a direct invocation) must not act.
   */
  envelopeKeys: SigningKeyRing;
  /**
   * A span per record (with children for dedup, commit and routing) when given: the handler gives the
   * global tracer when the stage's tracing backend is not `off`. Without one, no span is made.
   */
  tracer?: Tracer;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The consumer runtime's engine: takes one SQS batch and the invocation it runs in, and
 * returns the batch response and one report per record. Every record is prepared (read,
 * checked, filtered), settled by its consumption mode's runner (the strategy makes the
 * business's effect exactly-once), and routed once (retried on RocketMQ's schedule,
 * dead-lettered with its reason, or acknowledged). It knows SQS, DynamoDB and RocketMQ's
 * rules, not the application: its group, tags, record-id prefix and business are given.
 *
 * Refuses at construction what cannot work: no signing key ring, a schedule the queues cannot carry,
 * records that expire while a copy can still come back, an orderly group without failure counts or with packing.
 */
export class ConsumerEngine<P, R> {
  private readonly setup: ConsumerSetup<P, R>;
  /** Chosen here, once: the runner, how attempts are counted, what the group refuses. */
  private readonly mode: ConsumptionMode;

  constructor(options: ConsumerEngineOptions<P, R>) {
    // The type requires it; a caller in plain JavaScript (or through a cast) is refused here rather than
    // at its first batch, since a consumer without keys could only refuse every envelope or trust any.
    if (!options.envelopeKeys)
      throw new InvalidConsumerConfigError(
        `consumer group ${options.group}: no envelope signing key ring (envelopeKeys); every consumer checks the bridge's signature`,
      );
    const tags = TagExpression.parse(options.tagExpression);
    const lifetimes = recordsOutliveRetries(options);
    this.mode = consumptionModeOf(options, lifetimes);
    this.setup = {
      group: options.group,
      topic: options.topic,
      tags,
      horizonSeconds: lifetimes.redriveHorizonSeconds(options.strategy.recordTtlSeconds),
      parsePayload: options.parsePayload,
      keyOf: options.keyOf,
      fingerprintFields: options.fingerprintFields ?? ((p: P) => p),
      envelopeKeys: options.envelopeKeys,
      strategy: options.strategy,
      business: options.business,
      failures: options.failures,
      counter: this.mode.counter,
      // 10 = the largest SQS batch without a batching window: one wave of DynamoDB calls per batch.
      concurrency: options.concurrency ?? 10,
      contention: {
        retries: options.contentionRetries ?? 3,
        backoffMs: options.contentionBackoffMs ?? 25,
        sleep: options.sleep ?? sleep,
      },
      tracer: options.tracer,
      now: options.now ?? Date.now,
    };
  }

  /** The invocation that ends `remainingMs` from now on the engine's clock (a minute when Lambda cannot tell). */
  invocation(remainingMs: number | undefined): Invocation {
    const now = this.setup.now;
    const deadline = now() + (remainingMs ?? 60_000);
    return { deadline, remainingMs: () => Math.max(0, deadline - now()) };
  }

  /** The consumer group whose batches it consumes. */
  get group(): string {
    return this.setup.group;
  }

  /** Consumes one batch: prepare → settle (by the mode's runner) → route. Reporting is the caller's. */
  async consume(event: SQSEvent, invocation: Invocation): Promise<BatchResult> {
    const batch = await prepareBatch(this.setup, event.Records, invocation);
    await this.mode.run(this.setup, batch);
    return routeBatch(this.setup, batch);
  }
}

/**
 * Refused at start-up: a schedule the queues cannot carry (too few receives, too short a
 * retention), or dedup records that expire while a copy of a message can still come back.
 */
function recordsOutliveRetries<P, R>(options: ConsumerEngineOptions<P, R>): DeliveryLifetimes {
  const schedule = options.failures.schedule;
  return refusedAsConfig(() => {
    const ordering = options.ordering ?? 'concurrent';
    const lifetimes = options.queues
      ? new DeliveryLifetimes(schedule, options.queues, ordering)
      : DeliveryLifetimes.derive(schedule, ordering);
    lifetimes.assertRecordTtl(options.strategy.recordTtlSeconds);
    return lifetimes;
  }, `consumer group ${options.group}: `);
}
