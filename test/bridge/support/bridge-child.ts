import { runBridgeProcess } from '../../../bridge/bridge-process.ts';

/**
 * The bridge process as the end-to-end test runs it. With `BRIDGE_FAULT=crash-before-ack` every
 * forwarded batch reports its msgIds on stdout and is not acked, exactly the state a process killed
 * between forward and ack leaves behind; the test then SIGKILLs it.
 */
const crashBeforeAck = process.env.BRIDGE_FAULT === 'crash-before-ack';

await runBridgeProcess(crashBeforeAck
  ? {
      beforeAck: async (messages) => {
        process.stdout.write(`${JSON.stringify({ fault: 'crash-before-ack', msgIds: messages.map((m) => m.msgId) })}\n`);
        throw new Error('injected: crashed between forward and ack');
      },
    }
  : {});
