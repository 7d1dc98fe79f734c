import { runBridgeProcess } from '../../../bridge/bridge-process.ts';
import type { BeforeAckHook } from '../../../bridge/route-forwarder.ts';

/**
 * The bridge process as the end-to-end tests run it.
 * - `BRIDGE_FAULT=crash-before-ack`: every forwarded batch reports its msgIds on stdout and is not
 *   acked, exactly the state a process killed between forward and ack leaves behind; the test then
 *   SIGKILLs it.
 * - `BRIDGE_FAULT=sigkill-before-ack` with `BRIDGE_FAULT_AFTER=<n>`: acks normally until more than
 *   n messages were forwarded, then reports the batch in hand and kills itself with SIGKILL after
 *   its forward and before its ack (RocketMQ 5) or offset commit (RocketMQ 4).
 */
const fault = process.env.BRIDGE_FAULT;
const faultAfter = Number(process.env.BRIDGE_FAULT_AFTER ?? '0');
let forwarded = 0;

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
};

await runBridgeProcess(fault && hooks[fault] ? { beforeAck: hooks[fault] } : {});
