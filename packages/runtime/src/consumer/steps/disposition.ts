import type { SQSRecord } from 'aws-lambda';
import { type ConsumptionError, HeldBackError } from '../failures/errors.ts';
import type { Disposition } from '../settlement.ts';
import type { BatchState, SettledRecord } from './batch-state.ts';
import type { ConsumerSetup } from './consumer-setup.ts';

export type RouteSetup = Pick<ConsumerSetup<unknown, unknown>, 'group' | 'failures' | 'counter' | 'concurrency'>;

/**
 * A record's fate, decided once and kept on the batch: routing asks for every record, an orderly
 * runner asks for a failed one in its turn (to know whether its group goes on), and the second
 * asker gets the first's answer, never a second send to the DLQ.
 */
export async function dispositionOf<P>(setup: RouteSetup, batch: BatchState<P>, record: SQSRecord) {
  const known = batch.dispositions.get(record);
  if (known) return known;
  const span = batch.spans.get(record);
  const disposition = await (span
    ? span.child('route', () => decide(setup, batch, record))
    : decide(setup, batch, record));
  batch.dispositions.set(record, disposition);
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

export const failureOf = (settled: SettledRecord): ConsumptionError | undefined =>
  settled.settlement.outcome === 'failed' ? settled.settlement.error : undefined;
