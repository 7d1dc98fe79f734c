import { createDynamoDb, createSqs } from '@rocketmq-lambda/runtime/aws/index.ts';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import type { DeliveryCounts } from '../local/delivery-account.ts';
import { type LocalPipelineOptions, type LocalRunResult, runLocalPipeline } from '../local/local-pipeline.ts';
import { LocalSigningKey } from '../local/local-signing-key.ts';
import { selectGroups } from '../local/run-settings.ts';
import { compressedScheduleOf } from '../local/time-scale.ts';
import type { ChaosPlugin } from './chaos-plugin.ts';
import {
  type ConsumerFactory,
  chaosConsumers,
  crashesAfterCommit,
  type FaultPlan,
  FaultTally,
  planFaults,
  type SdkFaultRates,
} from './fault-plan.ts';
import { type GroupUnderTest, groupsUnderTest } from './groups-under-test.ts';
import { checkInvariants, type InvariantReport } from './invariants.ts';
import { type OutboxSummary, outboxVerdict } from './outbox-verdict.ts';
import { loadChaosPlugins } from './plugin-discovery.ts';
import { DEFAULT_RELAY_FAULT_RATES, type RelayFaultRates, type RelayFaultTally, relayFaults } from './relay-faults.ts';
import { type ChaosWorkload, composeWorkload } from './workload.ts';

export interface ChaosOptions {
  seed: number;
  messages: number;
  /** Concurrent pollers per group. */
  consumers: number;
  sdk?: SdkFaultRates;
  /** The outbox relay's faults (default `DEFAULT_RELAY_FAULT_RATES`). */
  relay?: RelayFaultRates;
  /** The consumer groups that exist (default `CONSUMER_GROUPS`); a test adds one here as it does for the CDK app. */
  catalogue?: readonly ConsumerGroupDefinition[];
  /** Plug-ins for groups whose plug-in is not in `packages/tools/src/chaos/groups/` (a test's fixture group). */
  plugins?: readonly ChaosPlugin[];
  /** Groups to run; default every group of the catalogue. */
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
  /** A hand-made workload instead of the plug-ins' seeded one (focused fault tests). */
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
  /** Each group: its deliveries and its plug-in's verdict, with the plug-in's own figures. */
  groups: Record<string, GroupSummary>;
  /** With a group that publishes: its outbox events, paired with its effects, and what the notifications came to. */
  outbox?: Omit<OutboxSummary, 'violations'>;
}

export interface GroupSummary {
  deliveries: number;
  doubleEffects: number;
  lostEffects: number;
  deadLettered: number;
  expectedDeadLettered: number;
  notJudged: number;
  invariantHolds: boolean;
  detail: Readonly<Record<string, number>>;
}

export interface ChaosResult {
  readonly summary: ChaosSummary;
  readonly workload: ChaosWorkload;
  readonly plan: FaultPlan;
  /** group → where its plug-in's crash point kills the process ("before commit"). */
  readonly crashPointNames: Readonly<Record<string, string>>;
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
    /** First attempts failed on purpose (a failure in the middle of a message group). */
    injectedFailures: number;
    /** The outbox relay's: killed between send and mark, throttled by a target, a batch handed again. */
    relay: RelayFaultTally;
  };
  /** The outbox's violations (an effect without its event, an event left PENDING, a user told twice). */
  readonly outboxViolations: readonly string[];
  readonly run: Pick<LocalRunResult, 'completed' | 'wallMs' | 'pollErrors' | 'untrackedDepartures' | 'settings'>;
  readonly wallMs: number;
}

/**
 * One chaos run: each selected group's plug-in (`packages/tools/src/chaos/groups/<group>.ts`) generates
 * its share of the workload, names its crash points and judges its group; the workload goes
 * through the local path (bridge → queues → pollers → the real handlers, each with its own
 * fault-injected client → emulator), then the invariants are read from the tables and
 * queues. Deliveries are counted where the poller hands records to a handler; the
 * consumers' per-record reports only account for them.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const catalogue = options.catalogue ?? CONSUMER_GROUPS;
  const definitions = selectGroups(catalogue, options.groups);
  const groups = definitions.map((d) => d.group);
  const plugins = await loadChaosPlugins(definitions, options.plugins);
  // The run's signing key, made at its start; the workload is judged as the bridge puts it on the queues: signed.
  const signing = new LocalSigningKey();
  const unsigned =
    options.workload ?? composeWorkload([...plugins.values()], { seed: options.seed, messages: options.messages });
  const workload = { ...unsigned, phases: signing.signed(unsigned.phases) };
  const underTest = groupsUnderTest(workload, definitions, plugins);
  const plan = options.plan ?? planFaults(underTest, { seed: options.seed, sdk: options.sdk });
  const timeScale = options.timeScale ?? 600;
  const tally = new FaultTally();
  const relayTally: RelayFaultTally = { kills: 0, throttles: 0, redeliveries: 0 };
  const run = await runLocalPipeline({
    ...pipelineOptions(options, { workload, signing, catalogue, groups, timeScale, plan, plugins, underTest, tally }),
    relayFaults: relayFaults(options.seed, options.relay ?? DEFAULT_RELAY_FAULT_RATES, relayTally),
  });
  try {
    const { result } = run;
    const invariants = await judgeRun(result, underTest, definitions, timeScale);
    const outbox = await judgeOutbox(result, plugins);
    const outcomes = result.account.total();
    const perGroup = Object.fromEntries(
      groups.map((g) => [g, { ...result.account.countsOf(g), countedAtPoller: tally.deliveries[g] ?? 0 }]),
    );
    return {
      summary: summarise(
        { seed: options.seed, messages: workload.messages, groups, outcomes },
        result,
        invariants,
        tally,
        outbox,
      ),
      workload,
      plan,
      crashPointNames: Object.fromEntries([...plugins.values()].map((p) => [p.group, p.crashPointName])),
      invariants,
      outcomes,
      perGroup,
      faults: {
        sdk: { ...tally.sdk },
        processCrashes: tally.crashes.crashes.length,
        injectedFailures: tally.injectedFailures,
        crashedAfterSettling: result.account.deliveries.filter((d) => d.unacknowledged).length,
        relay: relayTally,
      },
      outboxViolations: outbox?.violations ?? [],
      run: {
        completed: result.completed,
        wallMs: result.wallMs,
        pollErrors: result.pollErrors,
        untrackedDepartures: result.untrackedDepartures,
        settings: result.settings,
      },
      wallMs: Date.now() - started,
    };
  } finally {
    await run.close();
  }
}

/** The local run the chaos run drives: its signed workload, its plug-ins' seeds, its fault plan's consumers and crashes. */
function pipelineOptions(
  options: ChaosOptions,
  run: {
    workload: ChaosWorkload;
    signing: LocalSigningKey;
    catalogue: readonly ConsumerGroupDefinition[];
    groups: readonly string[];
    timeScale: number;
    plan: FaultPlan;
    plugins: ReadonlyMap<string, ChaosPlugin>;
    underTest: readonly GroupUnderTest[];
    tally: FaultTally;
  },
): LocalPipelineOptions {
  return {
    phases: run.workload.phases,
    signing: run.signing,
    catalogue: run.catalogue,
    groups: run.groups,
    consumers: options.consumers,
    batchSize: options.batchSize,
    seed: options.seed,
    endpoint: options.endpoint,
    prefix: options.prefix,
    timeScale: run.timeScale,
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 5,
    maxRunMs: options.maxRunMs,
    crashes: crashesAfterCommit(run.plan),
    seedTables: async (dynamoDb, tables) => {
      let seeded = 0;
      for (const g of run.underTest) seeded += (await g.expectations.seedTables?.(dynamoDb, tables)) ?? 0;
      return seeded;
    },
    buildConsumer: chaosConsumers(run.plan, run.plugins, run.tally, { seed: options.seed, replace: options.replace }),
    onProgress: options.onProgress,
  };
}

/** The invariants, read from the run's tables and queues. */
async function judgeRun(
  result: LocalRunResult,
  underTest: readonly GroupUnderTest[],
  definitions: readonly ConsumerGroupDefinition[],
  timeScale: number,
): Promise<InvariantReport> {
  const aws = result.resources.aws;
  const dynamoDb = createDynamoDb(aws);
  const sqs = createSqs(aws);
  const invariants = await checkInvariants({
    dynamoDb,
    sqs,
    resources: result.resources,
    groups: underTest,
    unsettled: result.unsettled,
    schedules: Object.fromEntries(definitions.map((d) => [d.group, compressedScheduleOf(d, timeScale)])),
    deliveries: result.account.deliveries,
  });
  sqs.destroy();
  dynamoDb.destroy();
  return invariants;
}

/** The outbox's pairing of effects and events, read from the run's tables. */
async function judgeOutbox(
  result: LocalRunResult,
  plugins: ReadonlyMap<string, ChaosPlugin>,
): Promise<OutboxSummary | undefined> {
  const dynamoDb = createDynamoDb(result.resources.aws);
  try {
    return await outboxVerdict(result, plugins, dynamoDb);
  } finally {
    dynamoDb.destroy();
  }
}

/** The run's verdict: every delivery counted at the pollers accounted for by an outcome, and the invariants. */
function summarise(
  run: { seed: number; messages: number; groups: readonly string[]; outcomes: DeliveryCounts },
  result: LocalRunResult,
  invariants: InvariantReport,
  tally: FaultTally,
  outbox: OutboxSummary | undefined,
): ChaosSummary {
  const { outcomes } = run;
  const deliveries = Object.values(tally.deliveries).reduce((n, d) => n + d, 0);
  const unaccounted =
    deliveries -
    (outcomes.processed + outcomes.duplicatesSuppressed + outcomes.filtered + outcomes.deadLettered + outcomes.retried);
  return {
    seed: run.seed,
    messages: run.messages,
    completed: result.completed,
    neverSent: result.neverSent,
    inFlight: result.leftInQueues,
    deliveries,
    doubleAwards: invariants.doubleAwards,
    lostAwards: invariants.lostAwards,
    unaccounted,
    deadLettered: invariants.deadLettered,
    expectedDeadLettered: invariants.expectedDeadLettered,
    invariantHolds: invariants.holds && unaccounted === 0 && result.completed && (outbox?.holds ?? true),
    groups: Object.fromEntries(
      run.groups.map((g) => [g, groupSummary(invariants.groups[g]!, tally.deliveries[g] ?? 0)]),
    ),
    ...(outbox ? { outbox: withoutViolations(outbox) } : {}),
  };
}

function withoutViolations({ violations: _, ...figures }: OutboxSummary): Omit<OutboxSummary, 'violations'> {
  return figures;
}

function groupSummary(r: InvariantReport['groups'][string], deliveries: number): GroupSummary {
  return {
    deliveries,
    doubleEffects: r.doubleEffects,
    lostEffects: r.lostEffects,
    deadLettered: r.deadLettered,
    expectedDeadLettered: r.expectedDeadLettered,
    notJudged: r.notJudged,
    invariantHolds: r.holds,
    detail: r.detail,
  };
}
