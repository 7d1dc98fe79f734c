import type { MiddlewareStack } from '@smithy/types';

interface ClientWithStack {
  middlewareStack: MiddlewareStack<any, any>;
}

/**
 * Adds a fixed delay to every request a client sends (every attempt, inside the SDK's
 * retry loop), as a stand-in for the network round trip to a real regional endpoint that
 * a local emulator does not have. Used by the benchmark, so figures from the emulator
 * weigh round trips the way production does.
 */
export function injectLatency(client: ClientWithStack, latencyMs: number): void {
  if (latencyMs <= 0) return;
  client.middlewareStack.addRelativeTo(
    (next: (args: any) => Promise<any>) => async (args: unknown) => {
      await new Promise((resolve) => setTimeout(resolve, latencyMs));
      return next(args);
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'latencyInjection', override: true },
  );
}
