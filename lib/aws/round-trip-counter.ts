import type { MiddlewareStack } from '@smithy/types';

interface ClientWithStack {
  middlewareStack: MiddlewareStack<any, any>;
}

/** One request that went to the service: a retry by the SDK is another round trip. */
export interface RoundTrip {
  /** The command, e.g. `TransactWriteItemsCommand`. */
  readonly command: string;
  /** The wire input (DynamoDB attribute values, as sent). */
  readonly input: Record<string, unknown>;
  /** The error name when the service (or an injected fault) answered with one. */
  readonly error?: string;
  /** Cancellation reasons of a cancelled transaction, in action order. */
  readonly cancellationCodes?: readonly string[];
}

/**
 * Counts the requests an SDK client really sends, one per HTTP attempt (it sits inside
 * the SDK's retry loop), and lets an observer see each one with its outcome: the
 * benchmark derives round trips per message and write units from it.
 */
export class RoundTripCounter {
  private trips = 0;
  private readonly perCommand = new Map<string, number>();
  private readonly observers: Array<(trip: RoundTrip) => void> = [];

  get total(): number {
    return this.trips;
  }

  byCommand(): Record<string, number> {
    return Object.fromEntries(this.perCommand);
  }

  onRoundTrip(observer: (trip: RoundTrip) => void): this {
    this.observers.push(observer);
    return this;
  }

  reset(): void {
    this.trips = 0;
    this.perCommand.clear();
  }

  /** Installs the counter on a client (a `DynamoDBDocumentClient` shares its base client's stack). */
  attach(client: ClientWithStack): this {
    client.middlewareStack.addRelativeTo(
      (next: (args: any) => Promise<any>, context: { commandName?: string }) => async (args: { input: Record<string, unknown> }) => {
        const command = context.commandName ?? 'unknown';
        this.trips++;
        this.perCommand.set(command, (this.perCommand.get(command) ?? 0) + 1);
        try {
          const out = await next(args);
          this.notify({ command, input: args.input });
          return out;
        } catch (error) {
          const e = error as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
          this.notify({ command, input: args.input, error: e.name ?? 'Error', cancellationCodes: e.CancellationReasons?.map((r) => r.Code ?? 'None') });
          throw error;
        }
      },
      // Inside the retry loop, outside any fault injection added the same way earlier.
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'roundTripCounter', override: true },
    );
    return this;
  }

  private notify(trip: RoundTrip) {
    for (const observer of this.observers) observer(trip);
  }
}
