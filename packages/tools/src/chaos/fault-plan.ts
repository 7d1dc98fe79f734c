import { createDynamoDb } from '@rocketmq-lambda/runtime/aws/index.ts';
import { type ConsumerHandler, TransientFailureError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { interceptCommands } from '../instrumentation/command-interceptor.ts';
import { type FaultKind, injectFaults } from '../instrumentation/fault-injection.ts';
import type { CrashAfterCommit } from '../local/incident-scenario.ts';
import type { LocalConsumerDeps } from '../local/local-consumers.ts';
import { seededRandom } from '../local/seeded-random.ts';
import type { ChaosPlugin } from './chaos-plugin.ts';
import type { GroupUnderTest } from './groups-under-test.ts';
import { ProcessCrashes } from './process-crash.ts';

/** Probability per SDK attempt of each injected fault (inside the SDK's retry loop). */
export interface SdkFaultRates {
  throttle: number;
  /** `TransactWriteItems` only. */
  transactionConflict: number;
  /** Write calls only: applied by the emulator, then the answer is lost. */
  unknownOutcome: number;
  lostRequest: number;
}

/** One group's crash targets. */
export interface GroupCrashPlan {
  /** msgIds whose invocation dies after committing them, before the batch is deleted. */
  readonly afterCommit: readonly string[];
  /** Keys at which the group's plug-in's crash point kills the process (before commit, inside a lease …). */
  readonly atCrashPoint: readonly string[];
  /** Keys whose first attempt fails with a transient error before it reaches DynamoDB (absent: none). */
  readonly failFirstAttempt?: readonly string[];
}

/**
 * Which faults a run injects, chosen from the seed. The seed fixes the workload and the
 * targets; the exact SDK calls that get a fault depend on how the concurrent consumers
 * interleave, which no seed controls.
 */
export interface FaultPlan {
  /** group → its crash targets (a group without an entry crashes nowhere). */
  readonly crashes: Readonly<Record<string, GroupCrashPlan>>;
  readonly sdk: SdkFaultRates;
}

export const DEFAULT_SDK_FAULT_RATES: SdkFaultRates = {
  throttle: 0.03,
  transactionConflict: 0.03,
  unknownOutcome: 0.03,
  lostRequest: 0.02,
};
export const NO_SDK_FAULTS: SdkFaultRates = { throttle: 0, transactionConflict: 0, unknownOutcome: 0, lostRequest: 0 };

/**
 * Crash targets per group, from its plug-in's candidates: about 1 in 200 for each crash kind,
 * at least one, at most 40; transient failures about 1 in 50 of their candidates (each holds
 * back the rest of its message group for one retry interval only).
 */
export function planFaults(
  groups: readonly GroupUnderTest[],
  options: { seed: number; sdk?: SdkFaultRates; crashShare?: number },
): FaultPlan {
  const crashes = Object.fromEntries(
    groups.map(({ group, expectations }) => {
      const random = seededRandom(options.seed ^ 0x5eed ^ hash(group));
      const { msgIds, keys, failures = [] } = expectations.crashTargets;
      const share = (of: number, fraction: number) => Math.min(40, Math.max(1, Math.round(of * fraction)));
      const count = share(keys.length, options.crashShare ?? 0.005);
      const take = (candidates: readonly string[], n = count) => {
        const pool = [...candidates];
        return Array.from(
          { length: Math.min(pool.length, n, Math.floor(pool.length / 5) || 1) },
          () => pool.splice(Math.floor(random() * pool.length), 1)[0]!,
        );
      };
      return [
        group,
        {
          afterCommit: take(msgIds),
          atCrashPoint: take(keys),
          failFirstAttempt: take(failures, share(failures.length, 0.02)),
        },
      ];
    }),
  );
  return { crashes, sdk: options.sdk ?? DEFAULT_SDK_FAULT_RATES };
}

/** Every group's crash-after-commit targets, as the local pipeline injects them. */
export function crashesAfterCommit(plan: FaultPlan): CrashAfterCommit[] {
  return Object.entries(plan.crashes).flatMap(([group, c]) => c.afterCommit.map((msgId) => ({ group, msgId })));
}

const WRITE_COMMANDS = new Set([
  'TransactWriteItemsCommand',
  'UpdateItemCommand',
  'PutItemCommand',
  'DeleteItemCommand',
]);

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
  /** Transient failures injected on first attempts (`failFirstAttempt`). */
  injectedFailures = 0;
  /** SQS records handed to each group's handler: the poller's count of deliveries. */
  readonly deliveries: Record<string, number> = {};
}

/** A replacement factory for one group (tests use it to run a deliberately weakened consumer). */
export type ConsumerFactory = (
  deps: LocalConsumerDeps & { dynamoDb: ReturnType<typeof createDynamoDb> },
) => ConsumerHandler;

/**
 * The local pipeline's `buildConsumer` hook for a chaos run: each group's real factory gets
 * its own DynamoDB client with the plan's SDK faults and its plug-in's crash point, and the
 * handler is wrapped so an invocation can die and so its deliveries are counted.
 */
export function chaosConsumers(
  plan: FaultPlan,
  plugins: ReadonlyMap<string, ChaosPlugin>,
  tally: FaultTally,
  options: { seed: number; replace?: Partial<Record<string, ConsumerFactory>>; leaseMarginMs?: number },
) {
  return (
    group: string,
    deps: LocalConsumerDeps,
    create: (deps: LocalConsumerDeps) => ConsumerHandler,
  ): ConsumerHandler => {
    const dynamoDb = createDynamoDb(deps.aws);
    injectFaults(dynamoDb, sdkFaultDecider(plan.sdk, options.seed ^ hash(group)), (fault) => tally.sdk[fault.kind]++);
    tally.crashes.arm(dynamoDb, plugins.get(group)!.crashPoint(plan.crashes[group]?.atCrashPoint ?? []));
    failFirstAttempts(
      dynamoDb,
      plugins.get(group)!,
      plan.crashes[group]?.failFirstAttempt ?? [],
      () => tally.injectedFailures++,
    );
    const factory = options.replace?.[group] ?? (create as ConsumerFactory);
    // Lease mode: a crashed holder's lease ends `margin` after its deadline; keep that short so the run does not idle.
    const handler = factory({ ...deps, dynamoDb, leaseMarginMs: options.leaseMarginMs ?? 1000 } as LocalConsumerDeps & {
      dynamoDb: typeof dynamoDb;
    });
    const crashable = tally.crashes.wrap(handler);
    tally.deliveries[group] = 0;
    return (event, context) => {
      tally.deliveries[group]! += event.Records.length;
      return crashable(event, context);
    };
  };
}

/**
 * Fails the first call at each of `keys` (found by the plug-in's crash point predicate) with a
 * transient error, before it is sent: the record fails with no effect and is retried, and on an
 * orderly group the rest of its message group must wait for it.
 */
function failFirstAttempts(
  dynamoDb: ReturnType<typeof createDynamoDb>,
  plugin: ChaosPlugin,
  keys: readonly string[],
  onFailure: () => void,
): void {
  if (keys.length === 0) return;
  const failsHere = plugin.crashPoint(keys);
  interceptCommands(
    dynamoDb,
    'chaosTransientFailure',
    async ({ name, input }, send) => {
      const at = failsHere(name, input);
      if (!at) return send();
      onFailure();
      throw new TransientFailureError(
        `injected transient failure (${at.why.replace(/^crash /, '')})`,
        'INJECTED_FAILURE',
      );
    },
    // Outside the SDK's retry loop, so the SDK does not absorb it.
    { per: 'command', priority: 'high' },
  );
}

function hash(text: string): number {
  let h = 0;
  for (const c of text) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0;
  return h;
}
