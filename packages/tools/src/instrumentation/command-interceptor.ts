import type {
  FinalizeHandler,
  FinalizeHandlerArguments,
  FinalizeHandlerOutput,
  HandlerExecutionContext,
  InitializeHandler,
  InitializeHandlerArguments,
  InitializeHandlerOutput,
  MiddlewareStack,
} from '@smithy/types';

/** One command on its way out: its name (`TransactWriteItemsCommand`) and its input. */
export interface OutgoingCommand {
  readonly name: string;
  readonly input: Record<string, unknown>;
}

/**
 * Wraps a request a client sends: `send` passes it on (and may be skipped, delayed or
 * followed by a thrown error); the value it resolves to is the service's answer.
 */
export type CommandInterceptor = (command: OutgoingCommand, send: () => Promise<unknown>) => Promise<unknown>;

export interface InterceptOptions {
  /**
   * `attempt` (default): inside the SDK's retry loop (after its `retryMiddleware`), once per
   * HTTP attempt, with the wire input; what it throws is retried (or not) exactly as the
   * service's own error would be. `command`: before the retry loop, once per command, with
   * the input as the caller wrote it.
   */
  readonly per?: 'attempt' | 'command';
  /** With `per: 'command'`: run before (`high`) or after (`low`) other command-level middleware. */
  readonly priority?: 'high' | 'low';
  /**
   * With `per: 'attempt'`: install right inside this interceptor, which then sees what this one
   * throws (a round-trip counter that must count injected faults). Default: right inside the
   * SDK's retry middleware, so an interceptor installed later wraps those installed earlier.
   */
  readonly inside?: string;
}

/**
 * Installs `intercept` on an SDK v3 client. The instrumentation of the tests, the benchmark
 * and the chaos run (fault injection, latency, round-trip counting, contention, rendezvous,
 * recording) all hook in here, so the SDK's middleware types are dealt with in one place.
 * Installing a name again replaces the earlier one.
 */
export function interceptCommands<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  name: string,
  intercept: CommandInterceptor,
  options: InterceptOptions = {},
): void {
  const outgoing = (context: HandlerExecutionContext, input: I): OutgoingCommand => ({
    name: context.commandName ?? 'unknown',
    input: input as Record<string, unknown>,
  });
  // The SDK's answer passes through `intercept` untouched: it is still the handler's output type.
  if (options.per === 'command') {
    client.middlewareStack.add(
      (next: InitializeHandler<I, O>, context: HandlerExecutionContext) =>
        async (args: InitializeHandlerArguments<I>): Promise<InitializeHandlerOutput<O>> =>
          (await intercept(outgoing(context, args.input), () => next(args))) as InitializeHandlerOutput<O>,
      { step: 'initialize', priority: options.priority ?? 'low', name, override: true },
    );
    return;
  }
  client.middlewareStack.addRelativeTo(
    (next: FinalizeHandler<I, O>, context: HandlerExecutionContext) =>
      async (args: FinalizeHandlerArguments<I>): Promise<FinalizeHandlerOutput<O>> =>
        (await intercept(outgoing(context, args.input), () => next(args))) as FinalizeHandlerOutput<O>,
    { relation: 'after', toMiddleware: options.inside ?? 'retryMiddleware', name, override: true },
  );
}
