import type { RecordReport } from '../settlement.ts';

/** Something told of every record's report: logs and metrics, the local run's account, tests. */
export type ReportObserver = (report: RecordReport) => void;

/**
 * Hands every report to the observer, even when it throws on one: the first error is raised
 * after the last report, so one broken log sink never hides the other records.
 */
export function reportEach(reports: readonly RecordReport[], observe: ReportObserver | undefined): void {
  if (!observe) return;
  let failure: unknown;
  for (const report of reports) {
    try {
      observe(report);
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
