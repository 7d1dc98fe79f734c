import { Logger, type LogItem } from '@aws-lambda-powertools/logger';
import type { ConstructorOptions } from '@aws-lambda-powertools/logger/types';
import {
  type CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  type InputLogEvent,
  PutLogEventsCommand,
  ResourceAlreadyExistsException,
} from '@aws-sdk/client-cloudwatch-logs';

/**
 * A Powertools logger whose lines go to `sink` as well: the exact JSON line Lambda would write
 * to the function's log stream. `echo` also prints them, as `--log-level` asks.
 */
export class ShippingLogger extends Logger {
  private sink: ((line: string) => void) | undefined;
  private echo = false;

  static create(sink: (line: string) => void, options: ConstructorOptions & { echo: boolean }): ShippingLogger {
    const { echo, ...rest } = options;
    const logger = new ShippingLogger(rest);
    logger.sink = sink;
    logger.echo = echo;
    return logger;
  }

  protected override printLog(logLevel: number, log: LogItem): void {
    this.sink?.(JSON.stringify(log.getAttributes(), this.getJsonReplacer()));
    if (this.echo) super.printLog(logLevel, log);
  }
}

// PutLogEvents takes at most 10,000 events and 1,048,576 bytes (each event counting 26 bytes more).
const MAX_EVENTS = 10_000;
const MAX_BYTES = 1_048_576;
const EVENT_OVERHEAD = 26;

/** How much shipping cost: lines, calls and the time spent in PutLogEvents. */
export interface ShippingAccount {
  lines: number;
  calls: number;
  putMs: number;
}

/**
 * Ships one function's log lines to its log group on the emulator, as Lambda's log agent
 * would: a stream per function instance, batches a second apart, one last flush at the end.
 * Shipping runs beside the consumers and never blocks them; a failed batch is counted and
 * kept for the next flush, so a line is lost only if the emulator refuses it at the end.
 */
export class FunctionLogShipper {
  private pending: InputLogEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  readonly account: ShippingAccount = { lines: 0, calls: 0, putMs: 0 };
  failures = 0;

  constructor(
    private readonly logs: CloudWatchLogsClient,
    readonly logGroupName: string,
    private readonly logStreamName: string,
  ) {}

  async open(): Promise<void> {
    await this.logs.send(new CreateLogGroupCommand({ logGroupName: this.logGroupName })).catch((error: unknown) => {
      if (!(error instanceof ResourceAlreadyExistsException)) throw error;
    });
    await this.logs.send(
      new CreateLogStreamCommand({ logGroupName: this.logGroupName, logStreamName: this.logStreamName }),
    );
    this.timer = setInterval(() => void this.flush(), 1000);
    this.timer.unref();
  }

  readonly push = (line: string): void => {
    this.pending.push({ timestamp: Date.now(), message: line });
  };

  /** Sends what is pending; calls queue behind each other so the stream stays in time order. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.sendPending());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async sendPending(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.nextBatch();
      const started = performance.now();
      try {
        await this.logs.send(
          new PutLogEventsCommand({
            logGroupName: this.logGroupName,
            logStreamName: this.logStreamName,
            logEvents: batch,
          }),
        );
        this.account.lines += batch.length;
      } catch {
        this.failures++;
        this.pending.unshift(...batch);
        return;
      } finally {
        this.account.calls++;
        this.account.putMs += performance.now() - started;
      }
    }
  }

  private nextBatch(): InputLogEvent[] {
    let bytes = 0;
    let n = 0;
    while (n < this.pending.length && n < MAX_EVENTS) {
      const size = Buffer.byteLength(this.pending[n]!.message!) + EVENT_OVERHEAD;
      if (n > 0 && bytes + size > MAX_BYTES) break;
      bytes += size;
      n++;
    }
    return this.pending.splice(0, n);
  }
}

/** A stream name as Lambda makes one: `yyyy/mm/dd/[$LATEST]<32 hex>`. */
export function lambdaLogStreamName(now: Date, instance: string): string {
  const day = now.toISOString().slice(0, 10).replace(/-/g, '/');
  return `${day}/[$LATEST]${instance}`;
}
