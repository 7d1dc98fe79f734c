import type { SQSBatchItemFailure, SQSRecord } from 'aws-lambda';
import { mapLimit } from '../concurrency.ts';
import { type ConsumptionError, HeldBackError } from '../failures/errors.ts';
import { redriveCountOf } from '../failures/failure-router.ts';
import { messageGroupOf } from '../runners/message-groups.ts';
import type { BatchResult, Disposition, RecordReport } from '../settlement.ts';
import type { BatchState, SettledRecord } from './batch-state.ts';
import type { ConsumerSetup } from './consumer-setup.ts';
import { endRecordSpans } from './record-trace.ts';

type RouteSetup = Pick<ConsumerSetup<unknown, unknown>, 'group' | 'failures' | 'counter' | 'concurrency'>;

/**
 * The last step: every failed record gets its fate once (retried after its delay, or
 * dead-lettered with its reason), held-back records are made visible again, and the batch is
 * answered with the records that must come back, plus one report per record in batch order.
 */
export async function routeBatch<P>(setup: RouteSetup, batch: BatchState<P>): Promise<BatchResult> {
  const dispositions = new Map<SQSRecord, Disposition>();
  await mapLimit(batch.records, setup.concurrency, async (record) => {
    dispositions.set(record, await dispose(setup, batch, record));
  });
  const heldBack = batch.records.filter((r) => failureOf(batch.settledAs(r)!) instanceof HeldBackError);
  await setup.failures.release(heldBack);
  const batchItemFailures: SQSBatchItemFailure[] = batch.records
    .filter((r) => comesBack(dispositions.get(r)!))
    .map((r) => ({ itemIdentifier: r.messageId }));
  const reports = batch.records.map((r) => reportOf(setup.group, r, batch.settledAs(r)!, dispositions.get(r)!));
  endRecordSpans(batch, reports);
  return { response: { batchItemFailures }, reports };
}

/** A record's fate, decided once (an orderly runner decides it in turn; `routeBatch` then reuses it). */
export function dispose<P>(setup: RouteSetup, batch: BatchState<P>, record: SQSRecord): Promise<Disposition> {
  let disposition = batch.dispositions.get(record);
  if (!disposition) {
    const span = batch.spans.get(record);
    disposition = span ? span.child('route', () => decide(setup, batch, record)) : decide(setup, batch, record);
    batch.dispositions.set(record, disposition);
  }
  return disposition;
}

async function decide<P>(setup: RouteSetup, batch: BatchState<P>, record: SQSRecord): Promise<Disposition> {
  const settled = batch.settledAs(record)!;
  const error = failureOf(settled);
  if (!error) return { action: 'ack' };
  // Not attempted, so neither counted nor delayed: `routeBatch` makes it visible again at once.
  if (error instanceof HeldBackError) return { action: 'retry', delaySeconds: 0 };
  let attempt = settled.attempt;
  if (setup.counter && error.classification === 'transient') {
    try {
      attempt = batch.attemptOffsets.get(record)! + (await setup.counter.countFailure(record, settled.msgId));
    } catch {
      // Uncounted, the failure is retried as the attempt it was read as; the queue's redrive
      // count (derived for orderly groups to come later than any count) remains the bound.
    }
    batch.settleRecord(record, { ...settled, attempt });
  }
  return setup.failures.route(record, error, { ...settled, attempt });
}

const failureOf = (settled: SettledRecord): ConsumptionError | undefined =>
  settled.settlement.outcome === 'failed' ? settled.settlement.error : undefined;

const comesBack = (d: Disposition) => d.action === 'retry' || d.action === 'retry-dead-letter';

function reportOf(group: string, record: SQSRecord, settled: SettledRecord, disposition: Disposition): RecordReport {
  const redriveCount = redriveCountOf(record);
  return {
    group,
    sqsMessageId: record.messageId,
    messageGroupId: messageGroupOf(record),
    sentAt: Number(record.attributes?.SentTimestamp) || undefined,
    ...(redriveCount > 0 ? { redriveCount } : {}),
    ...settled,
    disposition,
  };
}
