import { createDynamoDb, createSqs, emulatorConfig } from '../../lib/aws/clients.ts';
import type { DeliveryCounts } from '../local/delivery-account.ts';
import { runLocalPipeline, type LocalRunResult } from '../local/local-pipeline.ts';
import { chaosConsumers, FaultTally, planFaults, type ConsumerFactory, type FaultPlan, type SdkFaultRates } from './fault-plan.ts';
import { checkInvariants, type InvariantReport } from './invariants.ts';
import { CHAOS_GROUPS, generateWorkload, type ChaosWorkload } from './workload.ts';

export interface ChaosOptions {
  seed: number;
  messages: number;
  /** Concurrent pollers per group. */
  consumers: number;
  sdk?: SdkFaultRates;
  /** Groups to run; default points and coupons. */
  groups?: readonly string[];
  /** Use a running emulator (tests share one) instead of starting one. */
  endpoint?: string;
  prefix?: string;
  timeScale?: number;
  visibilityTimeoutSeconds?: number;
  /** Give up after this long. Default: `defaultMaxRunMs` of the workload (10 min + 50 ms per copy). */
  maxRunMs?: number;
  /** Records per invocation (default 10). */
  batchSize?: number;
  /** A hand-made workload instead of the seeded one (focused fault tests). */
  workload?: ChaosWorkload;
  /** A hand-made fault plan instead of the seeded one. */
  plan?: FaultPlan;
  /** Tests only: run a group with another factory (a deliberately weakened consumer). */
  replace?: Partial<Record<string, ConsumerFactory>>;
  onProgress?: Parameters<typeof runLocalPipeline>[0]['onProgress'];
}

/** The last line of `npm run chaos -- --json`. */
export interface ChaosSummary {
  seed: number;
  messages: number;
  /** Every message was sent and every source queue drained before the time limit. */
  completed: boolean;
  /** Workload messages never sent because the run stopped first (0 when completed). */
  neverSent: number;
  /** Messages still in the source queues when the run stopped (0 when completed). */
  inFlight: number;
  deliveries: number;
  doubleAwards: number;
  lostAwards: number;
  unaccounted: number;
  deadLettered: number;
  expectedDeadLettered: number;
  invariantHolds: boolean;
}

export interface ChaosResult {
  readonly summary: ChaosSummary;
  readonly workload: ChaosWorkload;
  readonly plan: FaultPlan;
  readonly invariants: InvariantReport;
  /** The delivery outcomes the consumers reported, summed over the groups. */
  readonly outcomes: DeliveryCounts;
  readonly perGroup: Record<string, DeliveryCounts & { countedAtPoller: number }>;
  readonly faults: {
    sdk: FaultTally['sdk'];
    /** Invocations killed mid-way (before commit, inside a lease). */
    processCrashes: number;
    /** Deliveries settled, then lost with their invocation (crash after commit, before the ack). */
    crashedAfterSettling: number;
  };
  readonly run: Pick<LocalRunResult, 'completed' | 'wallMs' | 'pollErrors' | 'untrackedDepartures' | 'settings'>;
  readonly wallMs: number;
}

/**
 * One chaos run: the seeded workload through the local path (bridge → queues → pollers →
 * the real handlers, each with its own fault-injected client → emulator), then the
 * invariants from the tables and queues. Deliveries are counted where the poller hands
 * records to a handler; the consumers' per-record reports only account for them.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const workload = options.workload ?? generateWorkload({ seed: options.seed, messages: options.messages });
  const plan = options.plan ?? planFaults(workload, { sdk: options.sdk });
  const groups = options.groups ?? CHAOS_GROUPS;
  const tally = new FaultTally();
  const run = await runLocalPipeline({
    phases: workload.phases,
    groups,
    consumers: options.consumers,
    batchSize: options.batchSize,
    seed: options.seed,
    endpoint: options.endpoint,
    prefix: options.prefix,
    timeScale: options.timeScale ?? 600,
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 5,
    maxRunMs: options.maxRunMs,
    crashes: plan.crashAfterCommit.filter((c) => groups.includes(c.group)),
    buildConsumer: chaosConsumers(plan, tally, { seed: options.seed, replace: options.replace }),
    onProgress: options.onProgress,
  });
  try {
    const { result } = run;
    const aws = emulatorConfig(result.endpoint);
    const dynamoDb = createDynamoDb(aws);
    const sqs = createSqs(aws);
    const invariants = await checkInvariants({ dynamoDb, sqs, resources: result.resources, workload, groups, unsettled: result.unsettled });
    sqs.destroy();
    dynamoDb.destroy();

    const outcomes = result.account.total();
    const perGroup = Object.fromEntries(groups.map((g) => [g, { ...result.account.countsOf(g), countedAtPoller: tally.deliveries[g] ?? 0 }]));
    const deliveries = Object.values(tally.deliveries).reduce((n, d) => n + d, 0);
    const unaccounted = deliveries - (outcomes.processed + outcomes.duplicatesSuppressed + outcomes.filtered + outcomes.deadLettered + outcomes.retried);
    const summary: ChaosSummary = {
      seed: options.seed,
      messages: workload.messages,
      completed: result.completed,
      neverSent: result.neverSent,
      inFlight: result.leftInQueues,
      deliveries,
      doubleAwards: invariants.doubleAwards,
      lostAwards: invariants.lostAwards,
      unaccounted,
      deadLettered: invariants.deadLettered,
      expectedDeadLettered: invariants.expectedDeadLettered,
      invariantHolds: invariants.holds && unaccounted === 0 && result.completed,
    };
    return {
      summary,
      workload,
      plan,
      invariants,
      outcomes,
      perGroup,
      faults: {
        sdk: { ...tally.sdk },
        processCrashes: tally.crashes.crashes.length,
        crashedAfterSettling: result.account.deliveries.filter((d) => d.unacknowledged).length,
      },
      run: { completed: result.completed, wallMs: result.wallMs, pollErrors: result.pollErrors, untrackedDepartures: result.untrackedDepartures, settings: result.settings },
      wallMs: Date.now() - started,
    };
  } finally {
    await run.close();
  }
}
