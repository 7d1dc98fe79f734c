import type { SQSBatchItemFailure, SQSRecord } from 'aws-lambda';
import { mapLimit } from '../concurrency.ts';
import { HeldBackError } from '../failures/errors.ts';
import type { BatchResult, Disposition, RecordReport } from '../settlement.ts';
import { messageGroupOf, redriveCountOf, sentAtOf } from '../sqs-attributes.ts';
import type { BatchState, SettledRecord } from './batch-state.ts';
import { dispositionOf, failureOf, type RouteSetup } from './disposition.ts';
import { endRecordSpans } from './record-trace.ts';

/**
 * The last step: every failed record gets its fate once (retried after its delay, or
 * dead-lettered with its reason), held-back records are made visible again, and the batch is
 * answered with the records that must come back, plus one report per record in batch order.
 */
export async function routeBatch<P>(setup: RouteSetup, batch: BatchState<P>): Promise<BatchResult> {
  await mapLimit(batch.records, setup.concurrency, (record) => dispositionOf(setup, batch, record));
  const dispositions = batch.dispositions;
  const heldBack = batch.records.filter((r) => failureOf(batch.settledAs(r)!) instanceof HeldBackError);
  await setup.failures.release(heldBack);
  const batchItemFailures: SQSBatchItemFailure[] = batch.records
    .filter((r) => comesBack(dispositions.get(r)!))
    .map((r) => ({ itemIdentifier: r.messageId }));
  const reports = batch.records.map((r) => reportOf(setup.group, r, batch.settledAs(r)!, dispositions.get(r)!));
  endRecordSpans(batch, reports);
  return { response: { batchItemFailures }, reports };
}

const comesBack = (d: Disposition) => d.action === 'retry' || d.action === 'retry-dead-letter';

function reportOf(group: string, record: SQSRecord, settled: SettledRecord, disposition: Disposition): RecordReport {
  const redriveCount = redriveCountOf(record);
  return {
    group,
    sqsMessageId: record.messageId,
    messageGroupId: messageGroupOf(record),
    sentAt: sentAtOf(record),
    ...(redriveCount > 0 ? { redriveCount } : {}),
    ...settled,
    disposition,
  };
}
