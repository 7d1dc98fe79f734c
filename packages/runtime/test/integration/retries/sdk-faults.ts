import { interceptCommands } from '@rocketmq-lambda/tools/instrumentation/command-interceptor.ts';
import { type FaultKind, injectFaults } from '@rocketmq-lambda/tools/instrumentation/fault-injection.ts';
import type { MiddlewareStack } from '@smithy/types';

/** Any AWS SDK v3 client (the DynamoDB document client shares its base client's stack). */
type AnyClient<I extends object = object, O extends object = object> = { middlewareStack: MiddlewareStack<I, O> };

export interface FaultOptions {
  /** Which commands fail, e.g. `UpdateItemCommand`. */
  command: string | ((name: string, input: Record<string, unknown>) => boolean);
  /** How many matching calls fail (then they pass). Default: every one. */
  times?: number;
  /**
   * The fault: one of the project's named kinds (`packages/tools/src/instrumentation/fault-injection.ts`, as the chaos
   * run injects them), or an error of the test's own making.
   */
  fault?: FaultKind;
  error?: () => Error;
  /**
   * `before-send`: the request never reaches the emulator (a throttle, a refused
   * connection). `after-send`: the emulator applied it and the answer is lost (a timeout
   * after commit). Both run inside the SDK's retry loop, so the SDK's own retries see them.
   * Only for `error`: a named kind decides this itself.
   */
  when?: 'before-send' | 'after-send';
}

/**
 * Injects a fault the emulator cannot produce (throttling, TransactionConflict, a lost
 * answer) through `packages/tools/src/instrumentation/fault-injection.ts`, inside the SDK's retry loop, the way the
 * fault would reach the consumer from AWS. Returns a counter of faults injected.
 */
export function injectFault<I extends object, O extends object>(
  client: AnyClient<I, O>,
  options: FaultOptions,
): { readonly injected: number; readonly calls: number } {
  const state = { injected: 0, calls: 0 };
  const matches = (name: string, input: Record<string, unknown>) =>
    typeof options.command === 'string' ? name === options.command : options.command(name, input);
  injectFaults(client, (name, input) => {
    if (!matches(name, input)) return undefined;
    state.calls++;
    if (state.injected >= (options.times ?? Number.POSITIVE_INFINITY)) return undefined;
    state.injected++;
    if (options.fault) return options.fault;
    if (!options.error) throw new Error('injectFault needs a fault kind or an error');
    return { error: options.error, when: options.when ?? 'before-send' };
  });
  return state;
}

export interface RecordedCommand {
  name: string;
  input: Record<string, unknown>;
  /** `Date.now()` when the command was handed to the client, before it was sent. */
  at: number;
  /** The error name when the command failed (after the SDK's own retries). */
  error?: string;
}

/** Records every command the client sends, and whether it failed, for asserting on what was asked of AWS. */
export function recordCommands<I extends object, O extends object>(client: AnyClient<I, O>): RecordedCommand[] {
  const recorded: RecordedCommand[] = [];
  interceptCommands(
    client,
    `record-${Math.random().toString(36).slice(2)}`,
    async ({ name, input }, send) => {
      const command: RecordedCommand = { name, input, at: Date.now() };
      recorded.push(command);
      try {
        return await send();
      } catch (error) {
        command.error = (error as Error).name;
        throw error;
      }
    },
    { per: 'command', priority: 'high' },
  );
  return recorded;
}

/** An AWS service error as the SDK raises it, recognisable by name to the SDK's retry strategy and to `classify`. */
export function awsError(name: string, message = name, httpStatusCode = 400): Error {
  return Object.assign(new Error(message), {
    name,
    $fault: httpStatusCode >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode },
  });
}
