import { TransactionCanceledException, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { MiddlewareStack } from '@smithy/types';
import { interceptCommands } from './command-interceptor.ts';

export interface ItemContentionOptions {
  /**
   * How long a transaction holds its items on the service side. Another transaction that
   * arrives for one of them meanwhile is cancelled with `TransactionConflict`. Default 10 ms
   * (a typical single-region `TransactWriteItems` latency).
   */
  transactionMs?: number;
  /** Write units one item absorbs per second: one item lives in one partition (about 1,000 WCU/s). */
  itemWriteUnitsPerSecond?: number;
  /** Unused capacity an item may bank for bursts, in seconds of its rate. Default 0.1 s. */
  burstSeconds?: number;
  now?: () => number;
}

export interface ContentionCounts {
  transactions: number;
  conflicts: number;
  throttles: number;
}

interface ItemState {
  busyUntil: number;
  tokens: number;
  refilledAt: number;
}

/**
 * A model of what DynamoDB does to one hot item, for the emulator, which serialises every
 * request and so never raises either effect:
 *
 *   1. Two transactions on one item at once: the later is cancelled with reason
 *      `TransactionConflict` on that item's action (the SDK does not retry it).
 *   2. One item takes about 1,000 write units a second (2 per transactional write): beyond
 *      that the transaction is cancelled with reason `ThrottlingError` on that action.
 *
 * One instance stands for one table's service side: share it between every client (every
 * concurrent Lambda invocation) of a scenario. It sits inside the SDK's retry loop, like
 * the real service. It is a model, not a measurement of DynamoDB: its numbers come from
 * the documented limits, and figures produced with it say so.
 */
export class ItemContentionModel {
  readonly counts: ContentionCounts = { transactions: 0, conflicts: 0, throttles: 0 };
  private readonly items = new Map<string, ItemState>();
  private readonly transactionMs: number;
  private readonly rate: number;
  private readonly burst: number;
  private readonly now: () => number;

  constructor(options: ItemContentionOptions = {}) {
    this.transactionMs = options.transactionMs ?? 10;
    this.rate = options.itemWriteUnitsPerSecond ?? 1000;
    this.burst = this.rate * (options.burstSeconds ?? 0.1);
    this.now = options.now ?? (() => performance.now());
  }

  attach<I extends object, O extends object>(client: { middlewareStack: MiddlewareStack<I, O> }): this {
    interceptCommands(client, 'itemContentionModel', async ({ name, input }, send) => {
      const actions = input.TransactItems as TransactWriteItem[] | undefined;
      if (name === 'TransactWriteItemsCommand' && actions) this.admit(actions);
      return send();
    });
    return this;
  }

  /** Decides the transaction's fate on arrival; throws the cancellation DynamoDB would send. */
  private admit(actions: readonly TransactWriteItem[]) {
    this.counts.transactions++;
    const at = this.now();
    const keys = actions.map(itemKey);
    const states = keys.map((key) => this.state(key, at));
    const conflicts = states.map((s) => s.busyUntil > at);
    if (conflicts.some(Boolean)) {
      this.counts.conflicts++;
      throw cancellation(
        conflicts.map((c) => (c ? 'TransactionConflict' : 'None')),
        'Transaction is ongoing for the item',
      );
    }
    const throttled = states.map((s) => s.tokens < 2);
    if (throttled.some(Boolean)) {
      this.counts.throttles++;
      throw cancellation(
        throttled.map((t) => (t ? 'ThrottlingError' : 'None')),
        'Throughput exceeds the current capacity for one or more items',
      );
    }
    for (const s of states) {
      s.tokens -= 2;
      s.busyUntil = at + this.transactionMs;
    }
  }

  private state(key: string, at: number): ItemState {
    let s = this.items.get(key);
    if (!s) {
      s = { busyUntil: 0, tokens: this.burst, refilledAt: at };
      this.items.set(key, s);
    }
    s.tokens = Math.min(this.burst, s.tokens + ((at - s.refilledAt) / 1000) * this.rate);
    s.refilledAt = at;
    return s;
  }
}

/**
 * Table plus key of an action (wire format). A `Put` is keyed by its whole item: distinct puts never collide in these
 * scenarios.
 */
function itemKey(action: TransactWriteItem): string {
  const op = action.Put ?? action.Update ?? action.Delete ?? action.ConditionCheck;
  return `${op?.TableName}|${JSON.stringify(op && 'Key' in op ? op.Key : op?.Item)}`;
}

function cancellation(codes: string[], message: string) {
  return new TransactionCanceledException({
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}] (modelled)`,
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: codes.map((Code) => (Code === 'None' ? { Code } : { Code, Message: message })),
  });
}
