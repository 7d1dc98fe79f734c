import type { SQSRecord } from 'aws-lambda';
import type { RuntimeSpan } from '../../tracing/index.ts';
import type { ConsumerMessage, Disposition, Invocation, Settlement } from '../settlement.ts';

/** What the runtime knows of a record once a step has settled it; routing adds its disposition. */
export interface SettledRecord {
  readonly msgId?: string;
  readonly key?: string;
  readonly traceId?: string;
  /** 1-based attempt on the retry schedule. */
  readonly attempt: number;
  readonly settlement: Settlement;
}

/**
 * One batch on its way through the runtime, the only state its steps share. `prepare` fills
 * `messages` (and settles what it refuses), a runner settles every message, `route` gives
 * each failed record its disposition. Each record is settled once, by the first step that can.
 */
export class BatchState<P> {
  /** Every record that was read, passed the tag filter and has a key, in batch order. */
  readonly messages: ConsumerMessage<P>[] = [];
  /** Attempts RocketMQ made before the message reached this queue (its `reconsumeTimes`, unless redriven). */
  readonly attemptOffsets = new Map<SQSRecord, number>();
  /** Each record's fate once decided (`dispositionOf`): an orderly runner decides a failed one's in its turn. */
  readonly dispositions = new Map<SQSRecord, Disposition>();
  /** Each traced record's span, ended once its disposition is known (empty when the consumer does not trace). */
  readonly spans = new Map<SQSRecord, RuntimeSpan>();
  private readonly settled = new Map<SQSRecord, SettledRecord>();

  constructor(
    readonly records: readonly SQSRecord[],
    readonly invocation: Invocation,
  ) {}

  settleRecord(record: SQSRecord, settled: SettledRecord): void {
    this.settled.set(record, settled);
  }

  settleMessage(msg: ConsumerMessage<P>, settlement: Settlement): void {
    const { msgId } = msg.message;
    this.settled.set(msg.record, { msgId, key: msg.key, traceId: msg.traceId, attempt: msg.attempt, settlement });
  }

  settledAs(record: SQSRecord): SettledRecord | undefined {
    return this.settled.get(record);
  }

  /** The record's effect is there: it committed now, or was done already. */
  committed(msg: ConsumerMessage<P>): boolean {
    const outcome = this.settled.get(msg.record)?.settlement.outcome;
    return outcome === 'processed' || outcome === 'duplicate';
  }
}
