import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import type { CrashAfterCommit } from './incident-scenario.ts';
import { compactOrderTrace, orderTraceSections, shippingText, type TracedOrder } from './incident-trace.ts';
import type { LocalRunResult } from './local-pipeline.ts';
import { type ReportContext, renderReport } from './replay-report.ts';
import { judgeRun } from './run-verdict.ts';
import type { VerdictFacts } from './verdict-block.ts';

export interface ReadableReportOptions {
  readonly crashes?: readonly CrashAfterCommit[];
  readonly facts?: VerdictFacts;
  /** The order to trace after the report (the incident's), `full` for each group's whole `ops trace`. */
  readonly trace?: { readonly order: TracedOrder; readonly full: boolean };
  readonly catalogue?: readonly ConsumerGroupDefinition[];
}

/**
 * What `npm start` prints without `--json`: the run judged (each group's chaos plug-in, the
 * followed order, the injected faults), the report with that verdict first, what shipping the
 * function logs cost, and the followed order as `ops trace` tells it, compact unless asked whole.
 */
export async function readableReport(
  result: LocalRunResult,
  context: ReportContext,
  options: ReadableReportOptions = {},
): Promise<string> {
  const traced = options.trace && result.logShipping ? options.trace : undefined;
  const verdict = await judgeRun(result, {
    ...context,
    definitions: options.catalogue ?? CONSUMER_GROUPS,
    crashes: options.crashes,
  });
  const parts = [
    renderReport(result, { ...context, verdict, facts: options.facts, tracedAfter: traced !== undefined }),
    ...(result.logShipping ? [shippingText(result.logShipping)] : []),
  ];
  const trace = traced && (await (traced.full ? orderTraceSections : compactOrderTrace)(result, traced.order));
  return `${parts.join('\n')}\n${trace ? `\n${trace}\n` : ''}`;
}
