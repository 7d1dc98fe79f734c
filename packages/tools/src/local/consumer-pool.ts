import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { ConsumerHandler, RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { Context, SQSEvent } from 'aws-lambda';
import type { DeliveryAccount } from './delivery-account.ts';
import type { CrashAfterCommit } from './incident-scenario.ts';
import type { LocalQueue } from './provision.ts';
import type { QueueOccupancy } from './queue-occupancy.ts';
import { pollOnce } from './sqs-poller.ts';

/**
 * Routes each consumer report to the invocation that produced it. Pollers of one group
 * share one handler (as one Lambda function's concurrent invocations share code), so the
 * handler's single `onReport` cannot tell invocations apart; the async context can.
 */
export class InvocationReports {
  private readonly storage = new AsyncLocalStorage<RecordReport[]>();
  /** Reports produced outside any invocation: none expected; kept so nothing is dropped silently. */
  readonly stray: RecordReport[] = [];

  readonly onReport = (report: RecordReport) => {
    (this.storage.getStore() ?? this.stray).push(report);
  };

  collect<T>(reports: RecordReport[], run: () => Promise<T>): Promise<T> {
    return this.storage.run(reports, run);
  }
}

/** Raised by the fault a scenario injects: the process dies after the commit, before Lambda deletes the batch. */
export class SimulatedCrashError extends Error {
  override readonly name = 'SimulatedCrashError';
}

/** A fault around one invocation, run after the real handler returned. Throwing fails the invocation. */
export type InvocationFault = (group: string, reports: readonly RecordReport[]) => void;

/** Lambda's SQS event source settings for one function, as the local run emulates them. */
export interface EventSourceSettings {
  /** Concurrent invocations (`maxConcurrency`). */
  concurrency: number;
  batchSize: number;
  batchingWindowMs: number;
  /** The function timeout: the context deadline, and a batch overrunning it is not deleted. */
  timeoutMs: number;
}

export interface ConsumerPoolOptions extends EventSourceSettings {
  group: string;
  functionName: string;
  handler: ConsumerHandler;
  sqs: SQSClient;
  queue: LocalQueue;
  reports: InvocationReports;
  account: DeliveryAccount;
  fault?: InvocationFault;
  /** Told of every receive and delete, so the run knows what its queues hold without asking SQS. */
  occupancy?: QueueOccupancy;
  /** A poll that fails (emulator hiccup) is counted and retried after a pause. */
  onPollError?: (group: string, error: unknown) => void;
}

const IDLE_MIN_MS = 25;
const IDLE_MAX_MS = 200;

/**
 * `concurrency` pollers on one source queue, each behaving like one Lambda SQS poller:
 * receive a batch, invoke, delete what succeeded. An idle poller backs off a little so
 * an empty queue does not keep two shared cores busy.
 */
export class ConsumerPool {
  private stopping = false;
  private running: Promise<void>[] = [];
  private busy = 0;

  constructor(private readonly options: ConsumerPoolOptions) {}

  /** Handler invocations running now (for the progress display; their records are also in flight in the queue). */
  get inFlight(): number {
    return this.busy;
  }

  start(): void {
    this.running = Array.from({ length: this.options.concurrency }, (_, i) => this.poll(i));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
  }

  private async poll(index: number): Promise<void> {
    const o = this.options;
    let idle = IDLE_MIN_MS;
    while (!this.stopping) {
      const reports: RecordReport[] = [];
      try {
        const result = await pollOnce({
          sqs: o.sqs,
          queueUrl: o.queue.url,
          queueArn: o.queue.arn,
          functionName: o.functionName,
          batchSize: o.batchSize,
          batchingWindowMs: o.batchingWindowMs,
          timeoutMs: o.timeoutMs,
          handler: (event, context) => o.reports.collect(reports, () => this.invoke(event, context, reports)),
        });
        if (result.received > 0) {
          const records = result.records ?? [];
          o.occupancy?.received(
            o.group,
            records.map((r) => ({
              messageId: r.messageId,
              receiveCount: Number(r.attributes.ApproximateReceiveCount) || 1,
            })),
          );
          o.occupancy?.settled(o.group, [...(result.deletedIds ?? []), ...(result.goneIds ?? [])]);
          const span = { receivedAt: result.receivedAt ?? Date.now(), endedAt: Date.now() };
          o.account.recordInvocation(
            o.group,
            result.records ?? [],
            reports,
            result.timedOut ? 'timed-out' : result.crashed ? 'crashed' : 'none',
            span,
          );
          idle = IDLE_MIN_MS;
          continue;
        }
      } catch (error) {
        o.onPollError?.(o.group, error);
      }
      // Stagger idle pollers so they do not all hit the emulator at the same instant.
      await sleep(idle + index * 3);
      idle = Math.min(IDLE_MAX_MS, idle * 2);
    }
  }

  private async invoke(event: SQSEvent, context: Context, reports: RecordReport[]) {
    this.busy++;
    try {
      const response = await this.options.handler(event, context);
      this.options.fault?.(this.options.group, reports);
      return response;
    } finally {
      this.busy--;
    }
  }
}

/**
 * The crash the scenario injects, once per target: after the real handler committed, before Lambda could delete the
 * batch.
 */
export function crashAfterCommitFault(crashes: readonly CrashAfterCommit[]): InvocationFault | undefined {
  if (crashes.length === 0) return undefined;
  const pending = new Set(crashes.map((c) => `${c.group}\u0000${c.msgId.toUpperCase()}`));
  return (group, reports) => {
    for (const r of reports) {
      const id = `${group}\u0000${r.msgId ?? ''}`;
      if (r.settlement.outcome === 'processed' && pending.delete(id)) {
        throw new SimulatedCrashError(`simulated crash after committing ${r.msgId}, before the batch was acknowledged`);
      }
    }
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
