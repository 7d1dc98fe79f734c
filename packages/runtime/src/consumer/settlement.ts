import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { RocketMQMessage } from '../rocketmq/index.ts';
import type { RuntimeSpan } from '../tracing/index.ts';
import type { ConsumptionError } from './failures/errors.ts';

/** One SQS record that passed parsing and the tag filter, ready for the business. */
export interface ConsumerMessage<P> {
  readonly record: SQSRecord;
  readonly message: RocketMQMessage;
  readonly payload: P;
  /** The business idempotency key (e.g. the order number), never the msgId. */
  readonly key: string;
  readonly fingerprint: string;
  /** 1-based delivery attempt: SQS receive count plus the RocketMQ `reconsumeTimes` the bridge saw. */
  readonly attempt: number;
  /** Lease mode: the fencing token this delivery holds. */
  readonly leaseToken?: number;
  /** The trace this record belongs to (32 hex): its span's, or the message's context when no span is made. */
  readonly traceId?: string;
  /** The record's span, when the consumer traces: the business may open its own children under it. */
  readonly span?: RuntimeSpan;
}

/** The Lambda invocation a batch is consumed in. */
export interface Invocation {
  /** Epoch ms by which the invocation ends: a lease must outlive it, an outside call must end before it. */
  readonly deadline: number;
  /** Milliseconds left before the deadline, on the runtime's clock. */
  remainingMs(): number;
}

/**
 * A consumer group's business: what one message means, declared for the strategy to commit
 * (writes for a transaction, a conditional update) or performed and returned (lease mode's
 * outside call). The runtime calls it once per message that needs an effect; what it throws
 * fails that message alone, classified (`classify`).
 */
export type Business<P, R> = (msg: ConsumerMessage<P>, invocation: Invocation) => Promise<R> | R;

/** What the runtime answers for one batch: the response Lambda reads, and one report per record. */
export interface BatchResult {
  readonly response: SQSBatchResponse;
  readonly reports: readonly RecordReport[];
}

/** Why a record needed no effect. */
export type DuplicateReason =
  | 'dedup-record-exists'
  /** A record imported from the legacy store, with the same content: the legacy consumer processed it. */
  | 'legacy-record-exists'
  /** A record imported from a legacy store that keeps no content (a Redis key): taken as done, unchecked. */
  | 'legacy-record-unverified'
  | 'effect-already-present'
  | 'in-batch-duplicate'
  | 'lease-completed'
  | 'lease-lost'
  | 'state-already-advanced';

/** What became of one SQS record. Every record gets exactly one. */
export type Settlement =
  | { outcome: 'processed'; result?: unknown }
  | { outcome: 'duplicate'; reason: DuplicateReason; winnerMsgId?: string; result?: unknown }
  | { outcome: 'filtered'; tag: string | undefined }
  | { outcome: 'failed'; error: ConsumptionError };

/** The final fate of a record after failure handling. */
export type Disposition =
  | { action: 'ack' }
  | { action: 'retry'; delaySeconds: number }
  | { action: 'dead-letter'; code: string }
  /** The DLQ send itself failed: the record stays in the source queue (never lost). */
  | { action: 'retry-dead-letter' };

/** One line of the consumer's account of a batch: what the local run, logs and metrics report. */
export interface RecordReport {
  readonly group: string;
  readonly sqsMessageId: string;
  /** SQS FIFO: the message group the record belongs to. */
  readonly messageGroupId?: string;
  /** When SQS accepted the message (its SentTimestamp, epoch ms): how long it has waited. */
  readonly sentAt?: number;
  readonly msgId?: string;
  readonly key?: string;
  /** Times `ops dlq redrive` sent this copy back, when it did: the log line says so, `ops trace` reads it. */
  readonly redriveCount?: number;
  /** The record's trace (32 hex), when its message carried a context or the consumer traces. */
  readonly traceId?: string;
  readonly attempt: number;
  readonly settlement: Settlement;
  readonly disposition: Disposition;
}
