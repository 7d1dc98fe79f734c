import { ProvisionedThroughputExceededException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { MiddlewareStack } from '@smithy/types';
import { interceptCommands } from './command-interceptor.ts';

/**
 * Faults the DynamoDB emulator cannot produce, injected where real AWS would raise them:
 * on the SDK client, inside its retry loop, so the SDK's own retries run as in production.
 * Used by the tests and the chaos run only.
 */
export const FaultKind = {
  /** `ProvisionedThroughputExceededException`: retried by the SDK with backoff. */
  throttle: 'throttle',
  /** A transaction cancelled with reason `TransactionConflict`: not retried by the SDK. */
  transactionConflict: 'transactionConflict',
  /** The write is applied, then the answer is lost (timeout): the retry must discover it was done. */
  unknownOutcome: 'unknownOutcome',
  /** The request never reaches DynamoDB (a connection reset before sending). */
  lostRequest: 'lostRequest',
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/**
 * A fault of the caller's own making: `error` is thrown before the request is sent (it never
 * reaches DynamoDB), or after it was applied (`after-send`: the answer is lost).
 */
export interface CustomFault {
  error: () => Error;
  when: 'before-send' | 'after-send';
}

/** Decides per request whether to inject a fault; `command` is e.g. `TransactWriteItemsCommand`. */
export type FaultDecider = (command: string, input: Record<string, unknown>) => FaultKind | CustomFault | undefined;

/** A named fault that was injected (custom faults are counted by their decider). */
export interface InjectedFault {
  kind: FaultKind;
  command: string;
}

let injections = 0;

export function injectFaults<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  decide: FaultDecider,
  onFault?: (fault: InjectedFault) => void,
): void {
  // Named per call so several injections can stack on one client.
  interceptCommands(client, `faultInjection-${++injections}`, async ({ name: command, input }, send) => {
    const kind = decide(command, input);
    if (!kind) return send();
    if (typeof kind === 'object') {
      if (kind.when === 'after-send') await send();
      throw kind.error();
    }
    onFault?.({ kind, command });
    switch (kind) {
      case 'throttle':
        throw new ProvisionedThroughputExceededException({
          message: 'Rate of requests exceeds the allowed throughput (injected)',
          $metadata: { httpStatusCode: 400 },
        });
      case 'transactionConflict':
        throw new TransactionCanceledException({
          message:
            'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict] (injected)',
          $metadata: { httpStatusCode: 400 },
          CancellationReasons: ((input.TransactItems as unknown[]) ?? [{}]).map(() => ({
            Code: 'TransactionConflict',
            Message: 'Transaction is ongoing for the item',
          })),
        });
      case 'unknownOutcome': {
        await send();
        throw Object.assign(new Error('socket timed out after the request was sent (injected)'), {
          name: 'TimeoutError',
          $metadata: {},
        });
      }
      case 'lostRequest':
        throw Object.assign(new Error('read ECONNRESET (injected)'), {
          name: 'TimeoutError',
          code: 'ECONNRESET',
          $metadata: {},
        });
    }
  });
}

/** Injects each listed fault once, in order, on the first requests of the given command. */
export function faultsInOrder(command: string, faults: readonly FaultKind[]): FaultDecider {
  const queue = [...faults];
  return (name) => (name === command ? queue.shift() : undefined);
}
