import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConsumerHandler } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { MiddlewareStack } from '@smithy/types';
import { interceptCommands } from '../instrumentation/command-interceptor.ts';
import { SimulatedCrashError } from '../local/consumer-pool.ts';

/** Where an invocation dies, and why. */
export interface Crash {
  readonly why: string;
  /**
   * The call reaches AWS and is applied, and the process dies before the answer comes back
   * (inside a conditional update). Default: it dies right before sending it.
   */
  readonly afterSending?: boolean;
}

/** Decides, per SDK call, whether the process dies at it; undefined: not here. */
export type CrashPoint = (command: string, input: Record<string, unknown>) => Crash | undefined;

/** What a call made by an already dead invocation gets: nothing reaches AWS any more. */
export class ProcessDeadError extends Error {
  override readonly name = 'ProcessDeadError';
}

/**
 * Kills one invocation at a chosen SDK call, the way a Lambda process dies (out of memory,
 * a timeout, a host failure): the call is never sent, no later call of that invocation
 * reaches DynamoDB (a lease is not released, nothing is cleaned up), and the invocation
 * fails, so Lambda deletes none of its batch and every record comes back after the
 * visibility timeout.
 *
 * In-process, the consumer code still runs to its end after the "death" (it cannot be
 * stopped mid-await); every DynamoDB call it makes then fails, and the invocation's result
 * is discarded. One difference remains: the points consumer's failure router still shortens
 * the records' visibility on SQS, so they return after the retry delay instead of the
 * timeout. That changes when they come back, not what they find.
 */
export class ProcessCrashes {
  private readonly storage = new AsyncLocalStorage<{ crashed?: string }>();
  /** Why each crash happened, in order. */
  readonly crashes: string[] = [];

  /** Puts the crash point on a client: add it to every client the consumer uses for DynamoDB. */
  arm<I extends object, O extends object>(
    client: { middlewareStack: MiddlewareStack<I, O> },
    crashPoint: CrashPoint,
  ): void {
    interceptCommands(
      client,
      'chaosProcessCrash',
      async ({ name, input }, send) => {
        const invocation = this.storage.getStore();
        if (!invocation) return send();
        if (invocation.crashed)
          throw new ProcessDeadError(`the process died (${invocation.crashed}); this call never left it`);
        const crash = crashPoint(name, input);
        if (!crash) return send();
        // Whatever the call's answer, the process is gone before it could read it.
        if (crash.afterSending) await send().catch(() => {});
        invocation.crashed = crash.why;
        this.crashes.push(crash.why);
        throw new ProcessDeadError(`the process died (${crash.why})`);
      },
      // Outside the SDK's retry loop: a dead process does not retry.
      { per: 'command', priority: 'high' },
    );
  }

  /** The handler, with each invocation able to die at an armed crash point. */
  wrap(handler: ConsumerHandler): ConsumerHandler {
    return async (event, context) => {
      const invocation: { crashed?: string } = {};
      const response = await this.storage.run(invocation, () => handler(event, context));
      if (invocation.crashed) throw new SimulatedCrashError(`simulated crash: ${invocation.crashed}`);
      return response;
    };
  }
}
