import { DEFAULT_RECORD_TTL_SECONDS } from '../../../src/config/index.ts';
import { PayloadConflictError } from '../../../src/consumer/failures/errors.ts';
import type { BeginResult, ConsumptionStrategy } from '../../../src/consumer/idempotency/strategy.ts';
import type { ConsumerMessage, Settlement } from '../../../src/consumer/settlement.ts';

/** What the in-memory store holds per business key once its effect is committed. */
export interface CommittedEffect<R> {
  readonly msgId: string;
  readonly fingerprint: string;
  readonly value: R;
}

/** One call the middleware made on the strategy, in order. */
export type StrategyCall =
  | { readonly op: 'begin'; readonly key: string; readonly deadline: number }
  | { readonly op: 'commit'; readonly key: string; readonly leaseToken: number | undefined }
  | { readonly op: 'commitBatch'; readonly keys: readonly string[] }
  | { readonly op: 'abort'; readonly key: string; readonly error: unknown };

/**
 * A test's say over one step: a result to return, an error to throw, or `undefined` to
 * let the store decide (committed key: duplicate or conflict; new key: processed).
 */
export interface StrategyScript<R> {
  recordTtlSeconds?: number;
  begin?: (msg: ConsumerMessage<unknown>) => BeginResult | Error | undefined;
  /** `call` counts this key's commits from 1: a conflict can be scripted for the first ones only. */
  commit?: (msg: ConsumerMessage<unknown>, value: R, call: number) => Settlement | Error | undefined;
  /** `call` counts this key's aborts from 1. */
  abort?: (msg: ConsumerMessage<unknown>, error: unknown, call: number) => Error | undefined;
  /** Present: the strategy packs (the middleware calls `commitBatch` instead of `commit`). */
  commitBatch?: (msgs: readonly ConsumerMessage<unknown>[], values: readonly R[]) => Settlement[] | Error | undefined;
}

/**
 * A `ConsumptionStrategy` over a Map: the dedup table and the business writes in one
 * place, committed atomically per key, as the transactional strategy does in DynamoDB.
 * The middleware's own decisions (what to commit, abort, retry, route) are what unit tests
 * look at; the store only has to answer the way a real strategy would.
 */
export function inMemoryStrategy<R>(script: StrategyScript<R> = {}) {
  const committed = new Map<string, CommittedEffect<R>>();
  const calls: StrategyCall[] = [];
  const commitsPerKey = new Map<string, number>();

  const storeCommit = <P>(msg: ConsumerMessage<P>, value: R): Settlement => {
    const existing = committed.get(msg.key);
    if (!existing) {
      committed.set(msg.key, { msgId: msg.message.msgId, fingerprint: msg.fingerprint, value });
      return { outcome: 'processed' };
    }
    if (existing.fingerprint !== msg.fingerprint)
      throw new PayloadConflictError(msg.key, existing.fingerprint, msg.fingerprint, existing.msgId);
    return { outcome: 'duplicate', reason: 'dedup-record-exists', winnerMsgId: existing.msgId };
  };

  const strategy: ConsumptionStrategy<R> = {
    recordTtlSeconds: script.recordTtlSeconds ?? DEFAULT_RECORD_TTL_SECONDS,
    async begin<P>(msg: ConsumerMessage<P>, deadline: number): Promise<BeginResult> {
      calls.push({ op: 'begin', key: msg.key, deadline });
      const scripted = script.begin?.(msg);
      if (scripted instanceof Error) throw scripted;
      if (scripted) return scripted;
      const existing = committed.get(msg.key);
      if (existing?.fingerprint === msg.fingerprint) {
        return {
          proceed: false,
          settlement: { outcome: 'duplicate', reason: 'dedup-record-exists', winnerMsgId: existing.msgId },
        };
      }
      return { proceed: true };
    },
    async commit<P>(msg: ConsumerMessage<P>, value: R): Promise<Settlement> {
      calls.push({ op: 'commit', key: msg.key, leaseToken: msg.leaseToken });
      const call = (commitsPerKey.get(msg.key) ?? 0) + 1;
      commitsPerKey.set(msg.key, call);
      const scripted = script.commit?.(msg, value, call);
      if (scripted instanceof Error) throw scripted;
      return scripted ?? storeCommit(msg, value);
    },
    async abort<P>(msg: ConsumerMessage<P>, error: unknown): Promise<void> {
      calls.push({ op: 'abort', key: msg.key, error });
      const call = calls.filter((c) => c.op === 'abort' && c.key === msg.key).length;
      const scripted = script.abort?.(msg, error, call);
      if (scripted) throw scripted;
    },
  };
  if (script.commitBatch) {
    const packs = script.commitBatch;
    strategy.commitBatch = async <P>(
      msgs: readonly ConsumerMessage<P>[],
      values: readonly R[],
    ): Promise<Settlement[]> => {
      calls.push({ op: 'commitBatch', keys: msgs.map((m) => m.key) });
      const scripted = packs(msgs, values);
      if (scripted instanceof Error) throw scripted;
      return scripted ?? msgs.map((msg, i) => storeCommit(msg, values[i]!));
    };
  }

  return {
    strategy,
    /** Effects by business key. */
    committed,
    calls,
    /** The keys of the calls of one kind, in order. */
    keysOf: (op: StrategyCall['op']) =>
      calls.filter((c) => c.op === op).flatMap((c) => ('keys' in c ? c.keys : [c.key])),
  };
}
