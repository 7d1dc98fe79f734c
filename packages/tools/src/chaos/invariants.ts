import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DEAD_LETTER_ATTRIBUTES } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import type { RetrySchedule } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { Delivery } from '../local/delivery-account.ts';
import type { LocalResources } from '../local/provision.ts';
import { messagesInQueues, type PeekedMessage, peekAllMessages } from '../local/run-readout.ts';
import type { GroupVerdict } from './chaos-plugin.ts';
import type { GroupUnderTest } from './groups-under-test.ts';

/** What the DLQ and the source queue of one group hold, against what its copies must come to. */
export interface QueueFindings {
  /** Distinct messages in the DLQ carrying a failure code and reason. */
  deadLettered: number;
  /**
   * Further DLQ copies of a message already counted: dead-lettered, then its invocation died
   * before the ack and it was dead-lettered again (by the consumer, or by SQS's redrive
   * policy once its receives ran out, without a code). At least once into the DLQ; never lost.
   */
  repeatedDeadLetters: number;
  /** Poison copies that must be there, plus those that may be and are. */
  expectedDeadLettered: number;
  /** Expected poison copies not found with their code. */
  missingDeadLetters: number;
  /** DLQ messages that are no expected poison copy, carry another code, or lack a code or reason. */
  unexpectedDeadLetters: number;
  /** Messages still in the source queue (visible, in flight or delayed). */
  leftInSourceQueue: number;
}

/** One group's report: its plug-in's verdict and the run's own checks of its queues. */
export interface GroupInvariantReport extends GroupVerdict, QueueFindings {
  readonly holds: boolean;
}

/** What the database and the queues say about a finished run, summed over the groups. */
export interface InvariantReport {
  /** The plug-ins' double effects (awards, coupons, transitions applied again or without their event). */
  doubleAwards: number;
  /** The plug-ins' lost effects. */
  lostAwards: number;
  deadLettered: number;
  repeatedDeadLetters: number;
  expectedDeadLettered: number;
  missingDeadLetters: number;
  unexpectedDeadLetters: number;
  leftInSourceQueues: number;
  /**
   * Keys and poison copies not judged because the run stopped before one of their copies
   * was sent or had left its queue (an incomplete run): neither lost nor delivered.
   */
  notJudged: number;
  /** Human-readable lines, one per violation, each naming its group (capped). */
  violations: string[];
  holds: boolean;
  readonly groups: Record<string, GroupInvariantReport>;
}

const MAX_VIOLATION_LINES = 50;

/**
 * Checks exactly-once from the database and the queues alone, never the run's own counters:
 * each group's plug-in judges its tables, and the run checks every group's DLQ against the
 * poison its copies carried and its source queue for leftovers.
 */
export async function checkInvariants(input: {
  dynamoDb: DynamoDBDocumentClient;
  sqs: SQSClient;
  resources: LocalResources;
  groups: readonly GroupUnderTest[];
  /** Copies the run never sent or left in a queue when it stopped early (`LocalRunResult.unsettled`). */
  unsettled: ReadonlyArray<{ readonly group: string; readonly body: string }>;
  /** The retry schedule each group's handler ran with. */
  schedules: Readonly<Record<string, RetrySchedule>>;
  /** Every delivery of the run, in the order their invocations ended (`DeliveryAccount`). */
  deliveries: readonly Delivery[];
}): Promise<InvariantReport> {
  const { dynamoDb, sqs, resources } = input;
  const groups: Record<string, GroupInvariantReport> = {};
  const violations: string[] = [];
  for (const g of input.groups) {
    const unsettledBodies = new Set(input.unsettled.filter((u) => u.group === g.group).map((u) => u.body));
    const deadLetters = await peekAllMessages(sqs, resources.queues[g.group]!.deadLetter.url);
    const verdict = await g.expectations.judge({
      dynamoDb,
      tables: resources.tables,
      outboxTables: resources.outboxTables,
      cutShort: input.unsettled.length > 0,
      deadLetters,
      unsettled: g.received.filter((m) => unsettledBodies.has(m.body)),
      schedule: input.schedules[g.group]!,
      deliveries: input.deliveries.filter((d) => d.group === g.group),
    });
    const queues = await checkQueues(
      g,
      deadLetters,
      unsettledBodies,
      await messagesInQueues(sqs, resources, [g.group]),
      input.unsettled.length > 0,
    );
    const report = {
      ...verdict,
      ...queues.findings,
      notJudged: verdict.notJudged + queues.notJudged,
      violations: [...verdict.violations, ...queues.violations],
    };
    groups[g.group] = { ...report, holds: report.violations.length === 0 };
    violations.push(...report.violations.map((v) => `${g.group}: ${v}`));
  }
  const sum = (field: keyof QueueFindings | 'doubleEffects' | 'lostEffects' | 'notJudged') =>
    Object.values(groups).reduce((n, r) => n + r[field], 0);
  return {
    doubleAwards: sum('doubleEffects'),
    lostAwards: sum('lostEffects'),
    deadLettered: sum('deadLettered'),
    repeatedDeadLetters: sum('repeatedDeadLetters'),
    expectedDeadLettered: sum('expectedDeadLettered'),
    missingDeadLetters: sum('missingDeadLetters'),
    unexpectedDeadLetters: sum('unexpectedDeadLetters'),
    leftInSourceQueues: sum('leftInSourceQueue'),
    notJudged: sum('notJudged'),
    violations: violations.slice(0, MAX_VIOLATION_LINES),
    holds: Object.values(groups).every((r) => r.holds),
    groups,
  };
}

/**
 * The group's DLQ against its expected dead letters (each with a code and a reason), and its
 * source queue: empty, unless the run stopped early and says so.
 */
async function checkQueues(
  g: GroupUnderTest,
  letters: readonly PeekedMessage[],
  unsettledBodies: ReadonlySet<string>,
  leftInSourceQueue: number,
  stoppedEarly: boolean,
) {
  const violations: string[] = [];
  const findings: QueueFindings = {
    deadLettered: 0,
    repeatedDeadLetters: 0,
    expectedDeadLettered: 0,
    missingDeadLetters: 0,
    unexpectedDeadLetters: 0,
    leftInSourceQueue,
  };
  const coded = letters.filter((l) => l.attributes[DEAD_LETTER_ATTRIBUTES.code]);
  const found = new Set<string>();
  for (const letter of coded) {
    const code = letter.attributes[DEAD_LETTER_ATTRIBUTES.code]!;
    const reason = letter.attributes[DEAD_LETTER_ATTRIBUTES.reason];
    if (found.has(letter.body)) {
      findings.repeatedDeadLetters++;
      continue;
    }
    found.add(letter.body);
    findings.deadLettered++;
    const expected = g.deadLetters.get(letter.body);
    if (!reason || expected?.code !== code) {
      findings.unexpectedDeadLetters++;
      violations.push(
        `DLQ: unexpected ${code}${reason ? ` (${reason.slice(0, 100)})` : ' without a reason'}: ${letter.body.slice(0, 120)}`,
      );
    } else if (expected.optional) findings.expectedDeadLettered++;
  }
  for (const letter of letters.filter((l) => !l.attributes[DEAD_LETTER_ATTRIBUTES.code])) {
    // Moved by SQS's redrive policy: a repeat of a copy the consumer dead-lettered, or a message lost to the DLQ
    // without a reason.
    if (found.has(letter.body)) findings.repeatedDeadLetters++;
    else {
      findings.unexpectedDeadLetters++;
      violations.push(`DLQ: a message without failure code or reason: ${letter.body.slice(0, 120)}`);
    }
  }
  let notJudged = 0;
  for (const expected of g.deadLetters.values()) {
    if (expected.optional) continue;
    findings.expectedDeadLettered++;
    if (found.has(expected.body)) continue;
    if (unsettledBodies.has(expected.body)) notJudged++;
    else {
      findings.missingDeadLetters++;
      violations.push(`DLQ: missing ${expected.code} for ${expected.body.slice(0, 120)}`);
    }
  }
  // A run that stopped early leaves messages behind by definition; the summary reports them as in flight.
  if (leftInSourceQueue > 0 && !stoppedEarly)
    violations.push(`${leftInSourceQueue} message(s) still in the source queue`);
  return { findings, violations, notJudged };
}
