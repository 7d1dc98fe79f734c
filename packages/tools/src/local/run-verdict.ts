import { createDynamoDb, createSqs } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import { type ChaosMessage, orderNoOf, UnexpectedFactError } from '../chaos/chaos-plugin.ts';
import { groupsUnderTest } from '../chaos/groups-under-test.ts';
import { checkInvariants, type InvariantReport } from '../chaos/invariants.ts';
import { loadChaosPlugins, MissingChaosPluginError } from '../chaos/plugin-discovery.ts';
import type { ChaosPhase } from '../chaos/workload.ts';
import type { Delivery } from './delivery-account.ts';
import type { CrashAfterCommit } from './incident-scenario.ts';
import type { LocalRunResult } from './local-pipeline.ts';
import { compressedScheduleOf } from './time-scale.ts';
import type { TrafficPhase } from './traffic.ts';

/** What the report says first: each group's invariant over the whole run, the followed order, the faults put in on purpose. */
export interface RunVerdict {
  /** Each group's chaos plug-in judging its tables and queues; absent when it could not (`notJudged` says why). */
  readonly invariants?: InvariantReport;
  readonly notJudged?: string;
  readonly focus?: FocusVerdict;
  readonly injected: readonly InjectedCrash[];
}

/** The followed order (the incident's) in every group that received it. */
export interface FocusVerdict {
  readonly orderNo: string;
  /** The scenario's label of each distinct copy, in the order sent ("original delivery", "application re-send …"). */
  readonly copies: readonly string[];
  readonly groups: ReadonlyArray<{
    readonly group: string;
    /** Deliveries that applied the effect (expected: one). */
    readonly applied: number;
    readonly suppressed: number;
    /** Deliveries ending otherwise (retried, dead-lettered). */
    readonly other: number;
    /** Copies a consumer keyed by msgId would have let through: one per distinct msgId it received. */
    readonly distinctMsgIds: number;
  }>;
  /** The points ledger's entries for the order, when the points group ran. */
  readonly ledger?: { readonly entries: number; readonly points: number; readonly userIds: readonly string[] };
  /** What the order's effects announced through the outbox, when a group that publishes ran. */
  readonly announced?: ReadonlyArray<{
    readonly group: string;
    readonly eventId: string;
    readonly status: string;
    /** Notifications the local notification service sent under the event id (undefined: that group did not run). */
    readonly notifications?: number;
  }>;
}

/** A crash after commit the scenario injected, and what became of its batch. */
export interface InjectedCrash {
  readonly group: string;
  readonly msgId: string;
  readonly fired: boolean;
  /** Records of the crashed invocation: settled, never acknowledged, so delivered again. */
  readonly records: number;
  /** Of their next deliveries, how many were suppressed as duplicates. */
  readonly suppressedAfter: number;
}

const PLUG_INS_NEED_FACTS =
  'a replayed file says what its messages are, not what their producers meant, and the chaos plug-ins judge against that (the built-in scenario and npm run chaos carry it)';

/**
 * Judges a finished run: through each group's chaos plug-in (`packages/tools/src/chaos/groups/<group>.ts`)
 * when every message carries the fact it stands for, as the built-in scenario's do; the phases
 * must be the bodies as the bridge put them on the queues (signed), since the dead letters are
 * matched by body.
 */
export async function judgeRun(
  result: LocalRunResult,
  run: {
    phases: readonly TrafficPhase[];
    definitions: readonly ConsumerGroupDefinition[];
    crashes?: readonly CrashAfterCommit[];
    focusOrderNo?: string;
  },
): Promise<RunVerdict> {
  const phases = factualPhases(run.phases);
  return {
    ...(phases ? await judgedGroups(result, phases, run.definitions) : { notJudged: PLUG_INS_NEED_FACTS }),
    ...(run.focusOrderNo && phases
      ? {
          focus: focusVerdict(
            result,
            phases.flatMap((p) => p.messages),
            run.focusOrderNo,
          ),
        }
      : {}),
    injected: (run.crashes ?? []).map((crash) => injectedCrash(result.account.deliveries, crash)),
  };
}

/** The phases as the chaos plug-ins take them, when every message says what it stands for. */
function factualPhases(phases: readonly TrafficPhase[]): ChaosPhase[] | undefined {
  const factual: ChaosPhase[] = [];
  for (const phase of phases) {
    const messages = phase.messages.filter((m): m is ChaosMessage => 'fact' in m);
    if (messages.length < phase.messages.length) return undefined;
    factual.push({ ...phase, messages });
  }
  return factual.some((p) => p.messages.length > 0) ? factual : undefined;
}

/** The plug-ins' verdict, or why there is none: a plug-in that refuses the run (a fact it has no expectation for) says so. */
async function judgedGroups(
  result: LocalRunResult,
  phases: readonly ChaosPhase[],
  catalogue: readonly ConsumerGroupDefinition[],
): Promise<Pick<RunVerdict, 'invariants' | 'notJudged'>> {
  try {
    return { invariants: await judgeGroups(result, phases, catalogue) };
  } catch (error) {
    if (!(error instanceof UnexpectedFactError || error instanceof MissingChaosPluginError)) throw error;
    return { notJudged: `the chaos plug-ins could not judge this run: ${error.message}` };
  }
}

async function judgeGroups(
  result: LocalRunResult,
  phases: readonly ChaosPhase[],
  catalogue: readonly ConsumerGroupDefinition[],
): Promise<InvariantReport> {
  const definitions = catalogue.filter((d) => result.groups.includes(d.group));
  const plugins = await loadChaosPlugins(definitions);
  const workload = { seed: result.settings.seed, messages: 0, phases, compositions: {} };
  const dynamoDb = createDynamoDb(result.resources.aws);
  const sqs = createSqs(result.resources.aws);
  try {
    return await checkInvariants({
      dynamoDb,
      sqs,
      resources: result.resources,
      groups: groupsUnderTest(workload, definitions, plugins),
      unsettled: result.unsettled,
      schedules: Object.fromEntries(
        definitions.map((d) => [d.group, compressedScheduleOf(d, result.settings.timeScale)]),
      ),
      deliveries: result.account.deliveries,
    });
  } finally {
    sqs.destroy();
    dynamoDb.destroy();
  }
}

function focusVerdict(result: LocalRunResult, messages: readonly ChaosMessage[], orderNo: string): FocusVerdict {
  const ofOrder = messages.filter((m) => orderNoOf(m.fact) === orderNo && m.fact.kind !== 'order-finished');
  const msgIds = new Set(ofOrder.flatMap((m) => m.msgId ?? []));
  const groups = result.groups.flatMap((group) => {
    const deliveries = result.account.deliveries.filter(
      (d) => d.group === group && msgIds.has(d.msgId ?? '') && d.outcome.kind !== 'filtered',
    );
    if (deliveries.length === 0) return [];
    const applied = deliveries.filter((d) => d.outcome.kind === 'processed').length;
    const suppressed = deliveries.filter((d) => d.outcome.kind === 'duplicate').length;
    const distinctMsgIds = new Set(deliveries.map((d) => d.msgId)).size;
    return [{ group, applied, suppressed, other: deliveries.length - applied - suppressed, distinctMsgIds }];
  });
  const entries = result.ledger.filter((e) => e.orderNo === orderNo);
  return {
    orderNo,
    copies: ofOrder.flatMap((m) => m.label ?? []).filter((label, i, all) => all.indexOf(label) === i),
    groups,
    ...(result.groups.includes('point-consumer-group')
      ? {
          ledger: {
            entries: entries.length,
            points: entries.reduce((n, e) => n + e.points, 0),
            userIds: [...new Set(entries.map((e) => e.userId))],
          },
        }
      : {}),
    ...(result.outbox ? { announced: announcementsOf(result, orderNo) } : {}),
  };
}

/** The order's outbox events, each with the notifications sent under its id. */
function announcementsOf(result: LocalRunResult, orderNo: string): NonNullable<FocusVerdict['announced']> {
  const notified = result.notifications && new Set(result.notifications.eventIds);
  return (result.outbox?.items ?? [])
    .filter((item) => item.businessKey === orderNo)
    .map(({ group, eventId, status }) => ({
      group,
      eventId,
      status,
      ...(notified ? { notifications: notified.has(eventId) ? 1 : 0 } : {}),
    }));
}

function injectedCrash(deliveries: readonly Delivery[], crash: CrashAfterCommit): InjectedCrash {
  const own = deliveries.filter((d) => d.group === crash.group);
  const crashed = own.find((d) => d.msgId === crash.msgId && d.unacknowledged && d.outcome.kind === 'processed');
  if (!crashed) return { ...crash, fired: false, records: 0, suppressedAfter: 0 };
  const batch = own.filter((d) => d.unacknowledged && d.receivedAt === crashed.receivedAt);
  const ids = new Set(batch.map((d) => d.sqsMessageId));
  const after = own.filter((d) => ids.has(d.sqsMessageId) && d.receivedAt > crashed.receivedAt);
  return {
    ...crash,
    fired: true,
    records: batch.length,
    suppressedAfter: after.filter((d) => d.outcome.kind === 'duplicate').length,
  };
}
