import { scanTable } from '../../lib/aws/table-scan.ts';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DEAD_LETTER_ATTRIBUTES } from '../../lib/idempotency/failure-router.ts';
import { RecordStatus, type DedupRecord } from '../../lib/idempotency/record.ts';
import type { LocalResources } from '../local/provision.ts';
import { messagesInQueues, peekAllMessages } from '../local/run-readout.ts';
import { orderNumbersIn, trafficMessage } from '../local/traffic.ts';
import { LedgerEntryKind } from '../../lib/points/ledger.ts';
import { CHAOS_COUPON_GROUP, CHAOS_POINTS_GROUP, type ChaosWorkload } from './workload.ts';

/** What the database and the queues say about a finished run, against what the workload expects. */
export interface InvariantReport {
  /** Award ledger entries beyond the one each valid order must have (another user, a non-order), plus accounts whose balance exceeds their ledger. */
  doubleAwards: number;
  /** Valid orders without their award (or without a completed coupon record), plus accounts whose balance falls short of their ledger. */
  lostAwards: number;
  /** Accounts whose balance differs from the sum of their ledger, or from the workload's total for the user. */
  balanceMismatches: number;
  /** Distinct messages (per group) in the DLQs carrying a failure code and reason. */
  deadLettered: number;
  /** Further DLQ copies of a message already counted (dead-lettered, then its invocation died before the ack). */
  repeatedDeadLetters: number;
  expectedDeadLettered: number;
  /** Expected poison copies not found in their group's DLQ with their code. */
  missingDeadLetters: number;
  /** DLQ messages that are not an expected poison copy, or lack a code or reason. */
  unexpectedDeadLetters: number;
  /** Messages still in the source queues (visible, in flight or delayed). */
  leftInSourceQueues: number;
  /**
   * Orders and poison copies not judged because the run stopped before one of their copies
   * was sent or had left its queue (an incomplete run): neither lost nor delivered.
   */
  notJudged: number;
  /** Human-readable lines, one per violation (capped). */
  violations: string[];
  holds: boolean;
}

const MAX_VIOLATION_LINES = 50;

/**
 * Checks exactly-once from the database and the queues alone: the ledger, the accounts,
 * the coupon records, the DLQs and the source queues, never the run's own counters.
 */
export async function checkInvariants(input: {
  dynamoDb: DynamoDBDocumentClient;
  sqs: SQSClient;
  resources: LocalResources;
  workload: ChaosWorkload;
  groups: readonly string[];
  /** Copies the run never sent or left in a queue when it stopped early (`LocalRunResult.unsettled`). */
  unsettled?: ReadonlyArray<{ readonly group: string; readonly body: string }>;
}): Promise<InvariantReport> {
  const { dynamoDb, sqs, resources, workload, groups } = input;
  const unsettled = input.unsettled ?? [];
  const unsettledOrders = (group: string) => new Set(orderNumbersIn([{ name: group, messages: unsettled.filter((u) => u.group === group).map((u) => trafficMessage(u.body)) }]));
  const unsettledCopies = new Set(unsettled.map((u) => `${u.group}\u0000${u.body}`));
  let notJudged = 0;
  const violations: string[] = [];
  const violate = (line: string) => {
    if (violations.length < MAX_VIOLATION_LINES) violations.push(line);
  };
  let doubleAwards = 0;
  let lostAwards = 0;
  let balanceMismatches = 0;

  if (groups.includes(CHAOS_POINTS_GROUP)) {
    const ledger = await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.ledger!);
    const awarded = new Map<string, number>();
    const ledgerSum = new Map<string, number>();
    for (const e of ledger) {
      const userId = String(e.userId);
      ledgerSum.set(userId, (ledgerSum.get(userId) ?? 0) + Number(e.points));
      if (e.kind !== LedgerEntryKind.AWARD) continue;
      const order = workload.orders.get(String(e.orderNo));
      if (!order || order.userId !== userId || order.points !== Number(e.points)) {
        doubleAwards++;
        violate(`award ${e.entryId} of ${e.points} to ${userId} matches no valid order of the workload`);
        continue;
      }
      awarded.set(order.orderNo, (awarded.get(order.orderNo) ?? 0) + 1);
    }
    const pendingPoints = unsettledOrders(CHAOS_POINTS_GROUP);
    const pendingUsers = new Set([...pendingPoints].map((o) => workload.orders.get(o)?.userId));
    for (const order of workload.orders.values()) {
      const times = awarded.get(order.orderNo) ?? 0;
      if (times > 1) {
        doubleAwards += times - 1;
        violate(`order ${order.orderNo} was awarded ${times} times`);
      }
      if (times === 0 && pendingPoints.has(order.orderNo)) notJudged++;
      else if (times === 0) {
        lostAwards++;
        violate(`order ${order.orderNo} (${order.points} points to ${order.userId}) was never awarded`);
      }
    }
    const accounts = new Map((await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.accounts!)).map((a) => [String(a.userId), Number(a.balance ?? 0)]));
    for (const userId of new Set([...accounts.keys(), ...ledgerSum.keys(), ...Object.keys(workload.balances)])) {
      const balance = accounts.get(userId) ?? 0;
      const sum = ledgerSum.get(userId) ?? 0;
      const expected = workload.balances[userId] ?? 0;
      if (balance !== sum) {
        balanceMismatches++;
        // An increment without its entry is an award applied twice; an entry without its increment, one lost.
        if (balance > sum) doubleAwards++;
        else lostAwards++;
        violate(`account ${userId}: balance ${balance} but its ledger sums to ${sum}`);
      } else if (balance !== expected && !pendingUsers.has(userId)) {
        balanceMismatches++;
        violate(`account ${userId}: balance ${balance} but the workload's valid orders add up to ${expected}`);
      }
    }
  }

  if (groups.includes(CHAOS_COUPON_GROUP)) {
    const records = new Map<string, Partial<DedupRecord>>();
    for (const r of await scanTable<Record<string, unknown>>(dynamoDb, resources.tables.idempotency!)) if (r.group === CHAOS_COUPON_GROUP) records.set(String(r.key), r as Partial<DedupRecord>);
    const pendingCoupons = unsettledOrders(CHAOS_COUPON_GROUP);
    for (const order of workload.orders.values()) {
      const r = records.get(order.orderNo);
      if (r?.status !== RecordStatus.COMPLETED || r.result === undefined || r.result === null) {
        if (pendingCoupons.has(order.orderNo)) {
          notJudged++;
          continue;
        }
        lostAwards++;
        violate(`order ${order.orderNo}: coupon record is ${r ? `${r.status} without a completed grant` : 'missing'}`);
      }
    }
  }

  const expected = new Map<string, string>();
  for (const d of workload.deadLetters) {
    for (const [group, code] of Object.entries(d.codes)) if (groups.includes(group)) expected.set(`${group}\u0000${d.body}`, code);
  }
  const found = new Set<string>();
  let deadLettered = 0;
  let unexpectedDeadLetters = 0;
  let repeatedDeadLetters = 0;
  for (const group of groups) {
    for (const letter of await peekAllMessages(sqs, resources.queues[group]!.deadLetter.url)) {
      const code = letter.attributes[DEAD_LETTER_ATTRIBUTES.code];
      const reason = letter.attributes[DEAD_LETTER_ATTRIBUTES.reason];
      if (!code || !reason) {
        unexpectedDeadLetters++;
        violate(`${group} DLQ: a message without failure code or reason: ${letter.body.slice(0, 120)}`);
        continue;
      }
      const id = `${group}\u0000${letter.body}`;
      if (found.has(id)) {
        // Dead-lettered, then its invocation died before the ack: the copy came back and
        // was dead-lettered again. At-least-once into the DLQ; never lost.
        repeatedDeadLetters++;
        continue;
      }
      found.add(id);
      deadLettered++;
      if (expected.get(id) !== code) {
        unexpectedDeadLetters++;
        violate(`${group} DLQ: unexpected ${code} (${reason.slice(0, 100)}): ${letter.body.slice(0, 120)}`);
      }
    }
  }
  let missingDeadLetters = 0;
  for (const [id, code] of expected) {
    if (found.has(id)) continue;
    if (unsettledCopies.has(id)) {
      notJudged++;
      continue;
    }
    missingDeadLetters++;
    const [group, body] = id.split('\u0000');
    violate(`${group} DLQ: missing ${code} for ${body!.slice(0, 120)}`);
  }
  const expectedDeadLettered = expected.size;

  let leftInSourceQueues = 0;
  for (const group of groups) {
    const left = await messagesInQueues(sqs, resources, [group]);
    // A run that stopped early leaves messages behind by definition; the summary reports them as in flight.
    if (left > 0 && unsettled.length === 0) violate(`${group}: ${left} message(s) still in the source queue`);
    leftInSourceQueues += left;
  }

  const holds = doubleAwards === 0 && lostAwards === 0 && balanceMismatches === 0 && missingDeadLetters === 0 && unexpectedDeadLetters === 0 && (leftInSourceQueues === 0 || unsettled.length > 0);
  return { doubleAwards, lostAwards, balanceMismatches, deadLettered, repeatedDeadLetters, expectedDeadLettered, missingDeadLetters, unexpectedDeadLetters, leftInSourceQueues, notJudged, violations, holds };
}
