import { runBridgeProcess } from '../../src/bridge-process.ts';
import type { BeforeAckHook } from '../../src/types.ts';

/**
 * The bridge process as the end-to-end tests run it.
 * - `BRIDGE_FAULT=crash-before-ack`: every forwarded batch reports its msgIds on stdout and is not
 *   acked, exactly the state a process killed between forward and ack leaves behind; the test then
 *   SIGKILLs it.
 * - `BRIDGE_FAULT=sigkill-before-ack` with `BRIDGE_FAULT_AFTER=<n>`: acks normally until more than
 *   n messages were forwarded, then reports the batch in hand and kills itself with SIGKILL after
 *   its forward and before its ack (RocketMQ 5) or offset commit (RocketMQ 4).
 * - `BRIDGE_FAULT=sigkill-with-batches-in-flight` with `BRIDGE_FAULT_BATCHES=<n>`: holds every
 *   forwarded batch before its ack until n batches are held at once, reports them and kills
 *   itself with SIGKILL: a pipelined bridge dying with n batches forwarded and none acked.
 * - `BRIDGE_HOLD_START=1`: reports `{"hold":"start"}` once loaded and starts only on SIGUSR2, so a
 *   test can time a task's joining its consumer group to within a few milliseconds (a cold start
 *   of this process takes seconds on a busy machine).
 */
const fault = process.env.BRIDGE_FAULT;
const faultAfter = Number(process.env.BRIDGE_FAULT_AFTER ?? '0');
const faultBatches = Number(process.env.BRIDGE_FAULT_BATCHES ?? '1');
let forwarded = 0;
const held: string[][] = [];

const report = (name: string, msgIds: string[]) => process.stdout.write(`${JSON.stringify({ fault: name, msgIds })}\n`);

const hooks: Record<string, BeforeAckHook> = {
  'crash-before-ack': async (messages) => {
    report(
      'crash-before-ack',
      messages.map((m) => m.msgId),
    );
    throw new Error('injected: crashed between forward and ack');
  },
  'sigkill-before-ack': async (messages) => {
    forwarded += messages.length;
    if (forwarded <= faultAfter) return;
    report(
      'sigkill-before-ack',
      messages.map((m) => m.msgId),
    );
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => undefined);
  },
  'sigkill-with-batches-in-flight': async (messages) => {
    held.push(messages.map((m) => m.msgId));
    if (held.length >= faultBatches) {
      process.stdout.write(`${JSON.stringify({ fault: 'sigkill-with-batches-in-flight', batches: held })}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
    await new Promise(() => undefined);
  },
};

if (process.env.BRIDGE_HOLD_START === '1') {
  // A signal listener alone does not keep the process alive.
  const alive = setInterval(() => undefined, 60_000);
  const go = new Promise((resolve) => process.once('SIGUSR2', resolve));
  process.stdout.write(`${JSON.stringify({ hold: 'start' })}\n`);
  await go;
  clearInterval(alive);
}

await runBridgeProcess(fault && hooks[fault] ? { beforeAck: hooks[fault] } : {});
