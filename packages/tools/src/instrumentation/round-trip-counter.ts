import type { MiddlewareStack } from '@smithy/types';
import { interceptCommands } from './command-interceptor.ts';

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
  attach<I extends object, O extends object>(client: { middlewareStack: MiddlewareStack<I, O> }): this {
    // Inside the retry loop, outside any fault injection added the same way earlier.
    interceptCommands(client, 'roundTripCounter', async ({ name: command, input }, send) => {
      this.trips++;
      this.perCommand.set(command, (this.perCommand.get(command) ?? 0) + 1);
      try {
        const out = await send();
        this.notify({ command, input });
        return out;
      } catch (error) {
        const e = error as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
        this.notify({
          command,
          input,
          error: e.name ?? 'Error',
          cancellationCodes: e.CancellationReasons?.map((r) => r.Code ?? 'None'),
        });
        throw error;
      }
    });
    return this;
  }

  private notify(trip: RoundTrip) {
    for (const observer of this.observers) observer(trip);
  }
}
