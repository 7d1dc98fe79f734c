import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RetrySchedule } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { Delivery } from '../local/delivery-account.ts';
import type { LocalResources } from '../local/provision.ts';
import type { PeekedMessage } from '../local/run-readout.ts';
import type { TrafficMessage } from '../local/traffic.ts';
import type { CrashPoint } from './process-crash.ts';

/**
 * What a workload message stands for, as its producer meant it (`order-paid` of this order
 * for this user). Plug-ins judge every copy they receive by its fact, never by what their
 * own consumer made of the bytes. The kinds of a topic are shared by the groups that
 * subscribe to it (ORDER_TOPIC's: `order-topic.ts`).
 */
export interface ChaosFact {
  readonly kind: string;
}

/**
 * The order a fact is about, if it names one (`orderNo`): a plug-in leaves it unjudged when one of its copies is
 * unsettled.
 */
export function orderNoOf(fact: ChaosFact): string | undefined {
  return 'orderNo' in fact && typeof fact.orderNo === 'string' ? fact.orderNo : undefined;
}

/** Every group gets it, since no bridge can read its topic, and every consumer dead-letters it as INVALID_ENVELOPE. */
export const MALFORMED_ENVELOPE = 'malformed-envelope';

export interface ChaosMessage<F extends ChaosFact = ChaosFact> extends TrafficMessage {
  readonly fact: F;
}

export interface WorkloadPhase {
  readonly name: string;
  readonly messages: readonly ChaosMessage[];
}

/** One plug-in's share of the workload. */
export interface GroupWorkload {
  /**
   * In order. Phase k of every plug-in is sent together (their messages interleaved at random,
   * each plug-in's own order kept); phase k > 0 starts once every queue is quiet.
   */
  readonly phases: readonly WorkloadPhase[];
  /** What it generated, for the report (`{ orders: 800, redeliveries: 60 }`). */
  readonly composition: Readonly<Record<string, number>>;
}

/** A copy the group's DLQ must hold, with the `failure-code` it must carry. */
export interface ExpectedDeadLetter {
  readonly body: string;
  readonly code: string;
  /** It may also settle without a dead letter (which outcome depends on timing the seed does not fix). */
  readonly optional?: boolean;
}

/** What a group's plug-in reads at the end: the tables and queues, never the run's counters. */
export interface GroupReadout {
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly tables: LocalResources['tables'];
  /** The outbox table of each running group that publishes (a subscriber reads what its publisher committed). */
  readonly outboxTables: LocalResources['outboxTables'];
  /**
   * The run stopped before everything was sent and consumed: what a publisher's relay had not yet
   * brought to the group is not judged, as the copies in `unsettled` are not.
   */
  readonly cutShort: boolean;
  /** Everything in the group's DLQ, left in place. */
  readonly deadLetters: readonly PeekedMessage[];
  /**
   * Copies the run never sent to the group or left in its queue when it stopped early: not judged, neither lost nor
   * delivered.
   */
  readonly unsettled: readonly ChaosMessage[];
  /** The retry schedule the group's handler ran with. */
  readonly schedule: RetrySchedule;
  /**
   * The group's deliveries in the order their invocations ended, with what each came to (the
   * consumer's reports) and its invocation's span. The tables keep only the last transition of
   * an order; an orderly group's plug-in reads from these the order its events were attempted
   * and applied in, where the spans tell it: invocations can overlap (`Delivery.receivedAt`).
   */
  readonly deliveries: readonly Delivery[];
}

/** A plug-in's verdict on its group. Every double or lost effect also has a line in `violations`. */
export interface GroupVerdict {
  /** Effects applied more than once, or applied without the event that calls for them (summed into `doubleAwards`). */
  readonly doubleEffects: number;
  /** Effects an event called for that never happened and were not dead-lettered (summed into `lostAwards`). */
  readonly lostEffects: number;
  readonly violations: readonly string[];
  /** Business keys not judged because one of their copies is unsettled. */
  readonly notJudged: number;
  /** The plug-in's own figures, for the report and the JSON summary (`{ orders: 1200, balanceMismatches: 0 }`). */
  readonly detail: Readonly<Record<string, number>>;
}

/** What a group must come to, derived before the run from every copy the bridge will send it. */
export interface GroupExpectations {
  /** The poison copies among them, each with its code (malformed envelopes are added by the run). */
  readonly deadLetters: readonly ExpectedDeadLetter[];
  /**
   * What the crash plan may pick: msgIds that commit (crash after commit), keys the plug-in's
   * crash point fires on, and keys whose first attempt may fail with a transient error before
   * it reaches DynamoDB (`failures`: on an orderly group, a failure in the middle of a message group).
   */
  readonly crashTargets: {
    readonly msgIds: readonly string[];
    readonly keys: readonly string[];
    readonly failures?: readonly string[];
  };
  /**
   * Writes, before the traffic, what another service would have created for the group to act on; returns how many
   * items.
   */
  seedTables?(dynamoDb: DynamoDBDocumentClient, tables: LocalResources['tables']): Promise<number>;
  judge(readout: GroupReadout): Promise<GroupVerdict>;
}

/**
 * One consumer group's part in the chaos run, in `packages/tools/src/chaos/groups/<group>.ts` as
 * `chaosPlugin` (a test may hand the run one from elsewhere). Groups that share a topic
 * see each other's messages, so a plug-in judges its group against every copy the bridge
 * sent to it, not only those it generated.
 */
export interface ChaosPlugin {
  readonly group: string;
  /** Where its crash point kills the process, for the report ("before commit"). */
  readonly crashPointName: string;
  /** `messages` messages of its own on its topic, all derived from `seed` (same seed, same bytes). */
  workload(options: { seed: number; messages: number }): GroupWorkload;
  /**
   * From the copies whose tag the group subscribes to, in the order the bridge sends them.
   * Throws `UnexpectedFactError` for a kind it has no expectation for, before anything runs.
   */
  expect(received: readonly ChaosMessage[]): GroupExpectations;
  /**
   * The SDK interceptor predicate of `ProcessCrashes`: dies once at each of `keys` (the plan's transient failures use
   * it too, to find their call).
   */
  crashPoint(keys: readonly string[]): CrashPoint;
  /**
   * A group that publishes (its entry's `publishes`): the business keys whose committed effect calls for
   * one outbox event each, read from its tables. The run pairs them with the outbox's events.
   */
  announcedEffects?(readout: Pick<GroupReadout, 'dynamoDb' | 'tables'>): Promise<readonly string[]>;
}

/** A plug-in was handed a message it cannot judge: another plug-in on its topic sends a kind it does not know. */
export class UnexpectedFactError extends Error {
  override readonly name = 'UnexpectedFactError';
  constructor(group: string, message: ChaosMessage) {
    super(
      `the chaos plug-in of ${group} has no expectation for ${message.topic ?? 'unreadable'} messages of kind "${message.fact.kind}" (${message.label ?? message.body.slice(0, 80)})`,
    );
  }
}
