import type { RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { DuplicateReason } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import type { SQSRecord } from 'aws-lambda';

/** The counters of the JSON summary, per group and in total. */
export interface DeliveryCounts {
  /** SQS receives handed to a handler: every redelivery and retry counts again. */
  delivered: number;
  processed: number;
  duplicatesSuppressed: number;
  filtered: number;
  deadLettered: number;
  /**
   * Deliveries that ended with the message back in the queue and no settled outcome: the
   * handler asked for a retry (transient failure, DLQ send failed), or the invocation
   * failed before the record was settled. So
   * `processed + duplicatesSuppressed + filtered + deadLettered + retried = delivered`.
   */
  retried: number;
}

/** What one delivery came to. */
export type DeliveryOutcome =
  | { kind: 'processed' }
  | { kind: 'duplicate'; reason: DuplicateReason; winnerMsgId?: string }
  | { kind: 'filtered'; tag: string | undefined }
  | { kind: 'dead-lettered'; code: string; reason: string }
  | { kind: 'retried'; code: string; why: string; delaySeconds?: number };

export interface Delivery {
  readonly group: string;
  readonly sqsMessageId: string;
  readonly msgId?: string;
  readonly key?: string;
  readonly attempt: number;
  readonly outcome: DeliveryOutcome;
  /** Settled, but the invocation then failed, so SQS was never told: it comes back. */
  readonly unacknowledged: boolean;
  /**
   * When its batch was in the poller's hands and when its invocation ended (deletes included),
   * by the run's clock. Whatever the delivery did happened in between. `deliveries` are in
   * `endedAt` order, which is not the order their effects were applied in: an invocation can
   * end long after its commits (a slow return, a delete, an overrun of its visibility timeout
   * while the message's next delivery runs), so only spans that do not overlap tell which came first.
   */
  readonly receivedAt: number;
  readonly endedAt: number;
}

/** One invocation's span: when the poller had its batch and when it was done with it. */
export interface InvocationSpan {
  readonly receivedAt: number;
  readonly endedAt: number;
}

export const emptyCounts = (): DeliveryCounts => ({
  delivered: 0,
  processed: 0,
  duplicatesSuppressed: 0,
  filtered: 0,
  deadLettered: 0,
  retried: 0,
});

/**
 * Every delivery of the run and what became of it, built from what the pollers handed the
 * handlers and the reports the real consumers produced for those records.
 */
export class DeliveryAccount {
  readonly deliveries: Delivery[] = [];
  readonly invocations = new Map<string, { count: number; failed: number; timedOut: number }>();
  private readonly counts = new Map<string, DeliveryCounts>();

  constructor(groups: readonly string[]) {
    for (const g of groups) {
      this.counts.set(g, emptyCounts());
      this.invocations.set(g, { count: 0, failed: 0, timedOut: 0 });
    }
  }

  /** Accounts one invocation: each record by its report, or as retried when it has none. */
  recordInvocation(
    group: string,
    records: readonly SQSRecord[],
    reports: readonly RecordReport[],
    failure: 'none' | 'crashed' | 'timed-out',
    span: InvocationSpan,
  ) {
    const inv = this.invocations.get(group)!;
    inv.count++;
    if (failure !== 'none') inv.failed++;
    if (failure === 'timed-out') inv.timedOut++;
    const bySqsId = new Map(reports.map((r) => [r.sqsMessageId, r]));
    const counts = this.counts.get(group)!;
    for (const record of records) {
      const report = bySqsId.get(record.messageId);
      const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
      const outcome: DeliveryOutcome = report
        ? outcomeOf(report)
        : failure === 'timed-out'
          ? {
              kind: 'retried',
              code: 'INVOCATION_TIMED_OUT',
              why: 'the invocation overran its timeout before settling the record',
            }
          : { kind: 'retried', code: 'INVOCATION_FAILED', why: 'the invocation failed before settling the record' };
      const unacknowledged = failure !== 'none' && outcome.kind !== 'retried';
      this.deliveries.push({
        group,
        sqsMessageId: record.messageId,
        msgId: report?.msgId,
        key: report?.key,
        attempt: report?.attempt ?? receiveCount,
        outcome,
        unacknowledged,
        receivedAt: span.receivedAt,
        endedAt: span.endedAt,
      });
      counts.delivered++;
      counts[COUNTER[outcome.kind]]++;
    }
  }

  countsOf(group: string): DeliveryCounts {
    return { ...(this.counts.get(group) ?? emptyCounts()) };
  }

  total(): DeliveryCounts {
    const total = emptyCounts();
    for (const c of this.counts.values())
      for (const k of Object.keys(total) as (keyof DeliveryCounts)[]) total[k] += c[k];
    return total;
  }
}

const COUNTER = {
  processed: 'processed',
  duplicate: 'duplicatesSuppressed',
  filtered: 'filtered',
  'dead-lettered': 'deadLettered',
  retried: 'retried',
} as const satisfies Record<DeliveryOutcome['kind'], keyof DeliveryCounts>;

function outcomeOf(report: RecordReport): DeliveryOutcome {
  const s = report.settlement;
  switch (s.outcome) {
    case 'processed':
      return { kind: 'processed' };
    case 'duplicate':
      return { kind: 'duplicate', reason: s.reason, winnerMsgId: s.winnerMsgId };
    case 'filtered':
      return { kind: 'filtered', tag: s.tag };
    case 'failed': {
      const d = report.disposition;
      if (d.action === 'dead-letter') return { kind: 'dead-lettered', code: d.code, reason: s.error.message };
      if (d.action === 'retry')
        return { kind: 'retried', code: s.error.code, why: s.error.message, delaySeconds: d.delaySeconds };
      return {
        kind: 'retried',
        code: 'DLQ_SEND_FAILED',
        why: `${s.error.code}: the DLQ send failed, the record stays in the source queue`,
      };
    }
  }
}
