import type { MiddlewareStack } from '@smithy/types';
import { interceptCommands } from './command-interceptor.ts';

/**
 * Adds a fixed delay to every request a client sends (every attempt, inside the SDK's
 * retry loop), as a stand-in for the network round trip to a real regional endpoint that
 * a local emulator does not have. Used by the benchmark, so figures from the emulator
 * weigh round trips the way production does.
 */
export function injectLatency<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  latencyMs: number,
): void {
  if (latencyMs <= 0) return;
  interceptCommands(client, 'latencyInjection', async (_command, send) => {
    await new Promise((resolve) => setTimeout(resolve, latencyMs));
    return send();
  });
}
