import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/**
 * An SQS stand-in for the bridge benchmark: accepts every `SendMessageBatch` at once, in a worker
 * thread of its own so that answering does not take turns with the bridge on its event loop (a
 * remote SQS costs the bridge no CPU either). Latency is added at the SDK client instead
 * (`injectLatency`), the same way for the stand-in and the emulator.
 */
export interface SqsStandIn {
  readonly endpoint: string;
  /** Distinct envelope ids among the entries it accepted: a redelivered message counts once. */
  distinctIds(): Promise<number>;
  /** CPU its worker thread has used, which the bench does not count as the bridge's. */
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

export async function startSqsStandIn(): Promise<SqsStandIn> {
  const worker = new Worker(new URL('./sqs-stand-in-server.ts', import.meta.url));
  const [endpoint] = (await once(worker, 'message')) as [string];
  return {
    endpoint,
    async distinctIds() {
      worker.postMessage('distinct ids');
      const [count] = (await once(worker, 'message')) as [number];
      return count;
    },
    async cpuMicros() {
      const usage = await worker.cpuUsage();
      return usage.user + usage.system;
    },
    async stop() {
      worker.postMessage('stop');
      await once(worker, 'exit');
    },
  };
}
