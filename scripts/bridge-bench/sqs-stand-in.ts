import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/**
 * An SQS stand-in for the bridge benchmark: accepts every `SendMessageBatch` at once, in a worker
 * thread of its own so that answering does not take turns with the bridge on its event loop (a
 * remote SQS costs the bridge no CPU either). Latency is added at the SDK client instead
 * (`injectLatency`), the same way for the stand-in and the emulator.
 */
export interface SqsStandInStats {
  readonly requests: number;
  readonly entries: number;
  /** Distinct envelope ids among the entries: a redelivered message counts once. */
  readonly distinctIds: number;
}

export interface SqsStandIn {
  readonly endpoint: string;
  stats(): Promise<SqsStandInStats>;
  /** CPU its worker thread has used, which the bench does not count as the bridge's. */
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

export async function startSqsStandIn(): Promise<SqsStandIn> {
  const worker = new Worker(new URL('./sqs-stand-in-server.ts', import.meta.url));
  const [listening] = (await once(worker, 'message')) as [{ endpoint: string }];
  return {
    endpoint: listening.endpoint,
    async stats() {
      worker.postMessage({ kind: 'stats' });
      const [stats] = (await once(worker, 'message')) as [SqsStandInStats];
      return stats;
    },
    async cpuMicros() {
      const usage = await worker.cpuUsage();
      return usage.user + usage.system;
    },
    async stop() {
      worker.postMessage({ kind: 'stop' });
      await once(worker, 'exit');
    },
  };
}
