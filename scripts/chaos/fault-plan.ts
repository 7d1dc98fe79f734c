import type { ConsumerHandler } from '../../lib/consumer/consumer-handler.ts';
import { createDynamoDb } from '../../lib/aws/clients.ts';
import { injectFaults, type FaultKind } from '../instrumentation/fault-injection.ts';
import type { CrashAfterCommit } from '../local/incident-scenario.ts';
import type { LocalConsumerDeps } from '../local/local-consumers.ts';
import { seededRandom } from '../local/seeded-random.ts';
import { recordId } from '../../lib/idempotency/record.ts';
import { ProcessCrashes } from './process-crash.ts';
import { CHAOS_COUPON_GROUP, CHAOS_POINTS_GROUP, type ChaosWorkload } from './workload.ts';

/** Probability per SDK attempt of each injected fault (inside the SDK's retry loop). */
export interface SdkFaultRates {
  throttle: number;
  /** `TransactWriteItems` only. */
  transactionConflict: number;
  /** Write calls only: applied by the emulator, then the answer is lost. */
  unknownOutcome: number;
  lostRequest: number;
}

/**
 * Which faults a run injects, chosen from the seed. The seed fixes the workload and the
 * targets; the exact SDK calls that get a fault depend on how the concurrent consumers
 * interleave, which no seed controls.
 */
export interface FaultPlan {
  /** The process dies after committing this msgId, before the batch is deleted. */
  readonly crashAfterCommit: readonly CrashAfterCommit[];
  /** Points orders whose commit transaction is never sent: the process dies just before it. */
  readonly crashBeforeCommit: readonly string[];
  /** Coupon orders whose lease holder dies after the coupon call, before completing the record. */
  readonly crashInLease: readonly string[];
  readonly sdk: SdkFaultRates;
}

export const DEFAULT_SDK_FAULT_RATES: SdkFaultRates = { throttle: 0.03, transactionConflict: 0.03, unknownOutcome: 0.03, lostRequest: 0.02 };
export const NO_SDK_FAULTS: SdkFaultRates = { throttle: 0, transactionConflict: 0, unknownOutcome: 0, lostRequest: 0 };

/** Crash targets: about 1 in 200 orders for each crash kind, at least one, at most 40. */
export function planFaults(workload: ChaosWorkload, options: { sdk?: SdkFaultRates; crashShare?: number } = {}): FaultPlan {
  const random = seededRandom(workload.seed ^ 0x5eed);
  const orders = [...workload.orders.values()];
  const count = Math.min(40, Math.max(1, Math.round(orders.length * (options.crashShare ?? 0.005))));
  const chosen = new Set<number>();
  const take = () => {
    for (;;) {
      const i = Math.floor(random() * orders.length);
      if (chosen.size >= orders.length || !chosen.has(i)) {
        chosen.add(i);
        return orders[i]!;
      }
    }
  };
  const targets = (n: number) => Array.from({ length: Math.min(n, Math.floor(orders.length / 5)) || 1 }, take);
  return {
    crashAfterCommit: [
      ...targets(count).map((o) => ({ group: CHAOS_POINTS_GROUP, msgId: o.msgId })),
      ...targets(count).map((o) => ({ group: CHAOS_COUPON_GROUP, msgId: o.msgId })),
    ],
    crashBeforeCommit: targets(count).map((o) => o.orderNo),
    crashInLease: targets(count).map((o) => o.orderNo),
    sdk: options.sdk ?? DEFAULT_SDK_FAULT_RATES,
  };
}

const WRITE_COMMANDS = new Set(['TransactWriteItemsCommand', 'UpdateItemCommand', 'PutItemCommand', 'DeleteItemCommand']);

/** A seeded per-attempt decider for `injectFaults`. */
export function sdkFaultDecider(rates: SdkFaultRates, seed: number): (command: string) => FaultKind | undefined {
  const random = seededRandom(seed);
  return (command) => {
    const roll = random();
    // Each kind owns the next slice of [0, 1), counted only for the commands it applies to.
    let edge = rates.throttle;
    if (roll < edge) return 'throttle';
    if (command === 'TransactWriteItemsCommand') {
      edge += rates.transactionConflict;
      if (roll < edge) return 'transactionConflict';
    }
    if (WRITE_COMMANDS.has(command)) {
      edge += rates.unknownOutcome;
      if (roll < edge) return 'unknownOutcome';
    }
    edge += rates.lostRequest;
    return roll < edge ? 'lostRequest' : undefined;
  };
}

/** What the run's consumers went through, counted where it was injected. */
export class FaultTally {
  readonly sdk: Record<FaultKind, number> = { throttle: 0, transactionConflict: 0, unknownOutcome: 0, lostRequest: 0 };
  readonly crashes = new ProcessCrashes();
  /** SQS records handed to each group's handler: the poller's count of deliveries. */
  readonly deliveries: Record<string, number> = {};
}

/** A replacement factory for one group (tests use it to run a deliberately weakened consumer). */
export type ConsumerFactory = (deps: LocalConsumerDeps & { dynamoDb: ReturnType<typeof createDynamoDb> }) => ConsumerHandler;

/**
 * The local pipeline's `buildConsumer` hook for a chaos run: each group's real factory gets
 * its own DynamoDB client with the plan's SDK faults and crash points, and the handler is
 * wrapped so an invocation can die and so its deliveries are counted.
 */
export function chaosConsumers(plan: FaultPlan, tally: FaultTally, options: { seed: number; replace?: Partial<Record<string, ConsumerFactory>>; leaseMarginMs?: number }) {
  return (group: string, deps: LocalConsumerDeps, create: (deps: LocalConsumerDeps) => ConsumerHandler): ConsumerHandler => {
    const dynamoDb = createDynamoDb(deps.aws);
    injectFaults(dynamoDb, sdkFaultDecider(plan.sdk, options.seed ^ hash(group)), (fault) => tally.sdk[fault.kind]++);
    tally.crashes.arm(dynamoDb, crashPointOf(group, plan));
    const factory = options.replace?.[group] ?? (create as ConsumerFactory);
    // Lease mode: a crashed holder's lease ends `margin` after its deadline; keep that short so the run does not idle.
    const handler = factory({ ...deps, dynamoDb, leaseMarginMs: options.leaseMarginMs ?? 1000 } as LocalConsumerDeps & { dynamoDb: typeof dynamoDb });
    const crashable = tally.crashes.wrap(handler);
    tally.deliveries[group] = 0;
    return (event, context) => {
      tally.deliveries[group]! += event.Records.length;
      return crashable(event, context);
    };
  };
}

function crashPointOf(group: string, plan: FaultPlan) {
  if (group === CHAOS_POINTS_GROUP) {
    const pending = new Set(plan.crashBeforeCommit);
    return (command: string, input: Record<string, unknown>) => {
      if (command !== 'TransactWriteItemsCommand' || pending.size === 0) return undefined;
      // The transaction that would commit the order: its dedup record (`key`) or its ledger entry (`orderNo`).
      for (const action of (input.TransactItems as Array<{ Put?: { Item?: Record<string, unknown> } }>) ?? []) {
        for (const key of [plain(action.Put?.Item?.key), plain(action.Put?.Item?.orderNo)]) {
          if (typeof key === 'string' && pending.delete(key)) return `crash before commit of ${key}`;
        }
      }
      return undefined;
    };
  }
  if (group === CHAOS_COUPON_GROUP) {
    const pending = new Map(plan.crashInLease.map((k) => [recordId(CHAOS_COUPON_GROUP, k), k]));
    return (command: string, input: Record<string, unknown>) => {
      if (command !== 'UpdateItemCommand' || pending.size === 0) return undefined;
      const id = plain((input.Key as Record<string, unknown> | undefined)?.id);
      const completing = String(input.UpdateExpression ?? '').includes(':completed');
      if (!completing || typeof id !== 'string' || !pending.has(id)) return undefined;
      const key = pending.get(id)!;
      pending.delete(id);
      return `crash inside the lease on ${key}, after the coupon call`;
    };
  }
  return () => undefined;
}

/** An attribute as the document client has it, or as the base client marshalled it (`{S: …}`). */
function plain(value: unknown): unknown {
  if (value && typeof value === 'object' && 'S' in (value as object)) return (value as { S: unknown }).S;
  return value;
}

function hash(text: string): number {
  let h = 0;
  for (const c of text) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0;
  return h;
}
