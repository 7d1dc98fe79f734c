import type { MiddlewareStack } from '@smithy/types';
import { interceptCommands } from '../instrumentation/command-interceptor.ts';

export interface TransactionRendezvous {
  /** Transactions that reached the rendezvous. */
  readonly arrived: number;
  /** True once `parties` transactions were waiting together and were let go at once. */
  readonly met: boolean;
}

/**
 * Holds every `TransactWriteItems` a client sends until `parties` of them are waiting, then
 * lets them all go at once: concurrent invocations then race at the commit, the interleaving
 * forced instead of hoped for. If they do not all arrive within `timeoutMs`, the held
 * requests fail, so a test can never pass on a race that did not happen. Later transactions
 * (after the rendezvous met) pass straight through.
 */
export function transactionRendezvous<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  parties: number,
  timeoutMs = 5_000,
): TransactionRendezvous {
  const state = { arrived: 0, met: false };
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  interceptCommands(
    client,
    'transactionRendezvous',
    async ({ name }, send) => {
      if (name !== 'TransactWriteItemsCommand' || state.met) return send();
      if (++state.arrived === parties) {
        state.met = true;
        open();
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`rendezvous: ${state.arrived} of ${parties} transactions arrived within ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      try {
        await Promise.race([gate, timeout]);
      } finally {
        clearTimeout(timer);
      }
      return send();
    },
    // Before the SDK's retry loop: one arrival per command, whatever its retries.
    { per: 'command' },
  );
  return state;
}
