/**
 * One focused test per fault kind of the chaos plan. Each runs a tiny scenario through the
 * local path (bridge → queue → pollers → handler → emulator) twice: with the real
 * consumer, where the invariants must hold, and with a consumer that lacks exactly the
 * protection named in the title, where the invariants must FAIL. The second half is the
 * proof that the test would notice the protection going away.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { consumer as couponGroupConsumer } from '@rocketmq-lambda/consumers/functions/coupon-consumer/handler.ts';
import { consumer as orderStatusConsumer } from '@rocketmq-lambda/consumers/functions/order-status-consumer/handler.ts';
import { consumer as pointsConsumer } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { type ChaosMessage, MALFORMED_ENVELOPE } from '../../src/chaos/chaos-plugin.ts';
import { type ChaosResult, runChaos } from '../../src/chaos/chaos-run.ts';
import { type ConsumerFactory, type GroupCrashPlan, NO_SDK_FAULTS } from '../../src/chaos/fault-plan.ts';
import type { ConflictingPayment, InvalidBody, OrderFinished, OrderPaid } from '../../src/chaos/order-topic.ts';
import type { ChaosWorkload } from '../../src/chaos/workload.ts';
import { type FaultKind, faultsInOrder, injectFaults } from '../../src/instrumentation/fault-injection.ts';
import { trafficMessage } from '../../src/local/traffic.ts';
import {
  commitRendezvous,
  couponConsumer,
  type PointsWeakness,
  type StatusWeakness,
  statusWithoutHoldBack,
  weakPointsConsumer,
  weakStatusConsumer,
} from './weakened-consumers.ts';

process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const POINTS = 'point-consumer-group';
const COUPONS = 'coupon-consumer-group';
const STATUS = 'order-status-consumer-group';
const ids = new MsgIdGenerator('0A0C0A06', 0x0c4a);

/**
 * An ORDER_TOPIC envelope standing for `fact`, keyed by its order number as the chaos producers key theirs (one order,
 * one message group).
 */
function orderTopic<F extends ChaosMessage['fact']>(
  tags: string,
  body: Record<string, unknown>,
  fact: F,
  msgId = ids.next(),
): ChaosMessage<F> {
  const keys = typeof body.orderNo === 'string' ? [body.orderNo] : [];
  return {
    ...trafficMessage(writeEnvelope({ topic: 'ORDER_TOPIC', msgId, tags, keys, body: JSON.stringify(body) })),
    fact,
  };
}

/** An order: its PAID (the first copy's msgId unless another is given), its FINISHED, a conflicting PAID. */
function newOrder(orderNo: string, userId = 'u1', points = 100) {
  const paidMsgId = ids.next();
  const finishedMsgId = ids.next();
  return {
    paid: (msgId = paidMsgId) =>
      orderTopic<OrderPaid>(
        'PAID',
        { orderNo, userId, points },
        { kind: 'order-paid', orderNo, userId, points },
        msgId,
      ),
    finished: () =>
      orderTopic<OrderFinished>('FINISHED', { orderNo }, { kind: 'order-finished', orderNo }, finishedMsgId),
    conflicting: () =>
      orderTopic<ConflictingPayment>(
        'PAID',
        { orderNo, userId: 'u9', points: 999 },
        { kind: 'conflicting-payment', orderNo },
      ),
    paidMsgId,
  };
}

interface Scenario {
  groups: string[];
  phases: Array<{ messages: ChaosMessage[]; afterQuiet?: boolean }>;
  crashes?: Record<string, Partial<GroupCrashPlan>>;
  replace?: Partial<Record<string, ConsumerFactory>>;
  consumers?: number;
  batchSize?: number;
  visibilityTimeoutSeconds?: number;
  timeScale?: number;
  maxRunMs?: number;
}

/**
 * The scenario through the chaos run; what each copy must come to is its group's plug-in's to say, from the copies'
 * facts.
 */
function run(s: Scenario): Promise<ChaosResult> {
  const phases = s.phases.map((p, i) => ({ name: `phase ${i + 1}`, ...p }));
  const workload: ChaosWorkload = {
    seed: 1,
    messages: phases.reduce((n, p) => n + p.messages.length, 0),
    phases,
    compositions: {},
  };
  const crashes = Object.fromEntries(
    Object.entries(s.crashes ?? {}).map(([g, c]) => [g, { afterCommit: [], atCrashPoint: [], ...c }]),
  );
  return runChaos({
    seed: 1,
    messages: workload.messages,
    workload,
    plan: { crashes, sdk: NO_SDK_FAULTS },
    groups: s.groups,
    consumers: s.consumers ?? 1,
    batchSize: s.batchSize,
    replace: s.replace,
    endpoint: inject('emulatorEndpoint'),
    prefix: `cp${randomUUID().slice(0, 8)}`,
    visibilityTimeoutSeconds: s.visibilityTimeoutSeconds ?? 2,
    timeScale: s.timeScale,
    maxRunMs: s.maxRunMs ?? 60_000,
  });
}

/** The same scenario with the real consumer and with the weakened one, side by side. */
async function realAndWeakened(scenario: (weak: boolean) => Scenario) {
  const [real, weak] = await Promise.all([run(scenario(false)), run(scenario(true))]);
  return { real, weak };
}

/**
 * The real points consumer (packed, as deployed) or a weakened one, optionally with SDK faults on its first commits.
 */
function points(
  weakness: PointsWeakness,
  options: { faults?: FaultKind[]; raceCommits?: number } = {},
): ConsumerFactory {
  return (deps) => {
    if (options.faults) injectFaults(deps.dynamoDb, faultsInOrder('TransactWriteItemsCommand', options.faults));
    if (options.raceCommits) commitRendezvous(deps.dynamoDb, options.raceCommits);
    return weakness === 'none' ? pointsConsumer.create(deps) : weakPointsConsumer(weakness)(deps);
  };
}

/** The real order-status consumer or a weakened one. */
function status(weakness: StatusWeakness | 'none'): ConsumerFactory {
  return weakness === 'none' ? (deps) => orderStatusConsumer.create(deps) : weakStatusConsumer(weakness);
}

/**
 * The real order-status consumer, whose invocation that first receives `msgId` hands back its
 * answer only after `holdMs`: past the visibility timeout, so the message comes back to another
 * poller while this invocation still runs, and its reports come last.
 */
function statusReturningLate(msgId: string, holdMs: number): ConsumerFactory {
  return (deps) => {
    const handler = orderStatusConsumer.create(deps);
    return async (event, context) => {
      const response = await handler(event, context);
      if (event.Records.some((r) => r.attributes.ApproximateReceiveCount === '1' && r.body.includes(msgId)))
        await sleep(holdMs);
      return response;
    };
  };
}

const expectHolds = (r: ChaosResult) => {
  expect(r.invariants.violations).toEqual([]);
  expect(r.summary.invariantHolds).toBe(true);
};

// Concurrent: each scenario runs on its own resources and mostly waits (visibility
// timeouts, lease expiry, retry delays).
describe.concurrent('each fault kind of the chaos plan fails the invariants once its protection is removed', () => {
  it("redelivery of processed messages (lost ack, rebalance replay) — guarded by the dedup record's conditional put and the ledger entry's own condition", async () => {
    // Prepare: three orders, then once they are settled the same messages again (same msgIds).
    const orders = [newOrder('SORD1'), newOrder('SORD2', 'u2'), newOrder('SORD3')];
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: orders.map((o) => o.paid()) }, { messages: orders.map((o) => o.paid()), afterQuiet: true }],
      replace: { [POINTS]: points(weak ? 'unconditional-writes' : 'none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.outcomes.duplicatesSuppressed).toBe(3);
    expect(weak.summary.invariantHolds).toBe(false);
    expect(weak.summary.doubleAwards).toBeGreaterThan(0);
  }, 120_000);

  it('application re-send with a new msgId — guarded by keying the dedup record and the ledger entry by the order number, not the msgId', async () => {
    // Prepare: an order, then the application sends it again under a new msgId.
    const order = newOrder('SORS1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid()] }, { messages: [order.paid(ids.next())], afterQuiet: true }],
      replace: { [POINTS]: points(weak ? 'keyed-by-msg-id' : 'none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(weak.summary.doubleAwards).toBe(1);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('concurrent consumers on one group — guarded by committing the conditional dedup put and the effect in ONE transaction (no check-then-act)', async () => {
    // Prepare: two copies of one order, one per invocation; each commit waits until the other is ready to commit too.
    const order = newOrder('SOCC1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid(), order.paid()] }],
      consumers: 2,
      batchSize: 1,
      replace: { [POINTS]: points(weak ? 'check-then-act' : 'none', { raceCommits: 2 }) },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess: with the rendezvous both copies raced to commit; one transaction won.
    expectHolds(real);
    expect(real.outcomes.processed).toBe(1);
    expect(real.outcomes.duplicatesSuppressed).toBe(1);
    expect(weak.summary.doubleAwards).toBeGreaterThan(0);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('crash after commit, before the ack — guarded by the dedup record committed with the effect, so the returning batch settles as duplicates', async () => {
    // Prepare: the invocation that commits SOCA1 dies before Lambda deletes its batch.
    const orders = [newOrder('SOCA1'), newOrder('SOCA2')];
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: orders.map((o) => o.paid()) }],
      crashes: { [POINTS]: { afterCommit: [orders[0]!.paidMsgId] } },
      replace: { [POINTS]: points(weak ? 'unconditional-writes' : 'none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.faults.crashedAfterSettling).toBeGreaterThan(0);
    expect(real.outcomes.duplicatesSuppressed).toBeGreaterThan(0);
    expect(weak.summary.doubleAwards).toBeGreaterThan(0);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('crash before commit — guarded by recording nothing before the effect commits (record and effect in one transaction)', async () => {
    // Prepare: the process dies right before the transaction that would commit SOCB1.
    const order = newOrder('SOCB1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid()] }],
      crashes: { [POINTS]: { atCrashPoint: ['SOCB1'] } },
      replace: { [POINTS]: points(weak ? 'record-first' : 'none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess: the real consumer awards it on redelivery; the record-first one finds its own record and drops it.
    expectHolds(real);
    expect(real.faults.processCrashes).toBe(1);
    expect(weak.faults.processCrashes).toBe(1);
    expect(weak.summary.lostAwards).toBe(1);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it("crash inside a lease — guarded by the lease's expiry and fenced takeover (a lease that never ends strands the order)", async () => {
    // Prepare: the coupon consumer's holder dies after the coupon call, before completing the record.
    const order = newOrder('SOCL1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [COUPONS],
      phases: [{ messages: [order.paid()] }],
      crashes: { [COUPONS]: { atCrashPoint: ['SOCL1'] } },
      replace: {
        [COUPONS]: weak
          ? couponConsumer({ neverExpires: true })
          : (deps) => couponGroupConsumer.create({ ...deps, leaseMarginMs: 500 }),
      },
      visibilityTimeoutSeconds: 3,
      maxRunMs: weak ? 10_000 : 60_000,
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.faults.processCrashes).toBe(1);
    // The stranded order never settles: the run cannot complete, and says so (an order still
    // in flight is not judged lost; it is the run that failed to finish).
    expect(weak.summary).toMatchObject({
      completed: false,
      inFlight: 1,
      neverSent: 0,
      doubleAwards: 0,
      invariantHolds: false,
    });
  }, 120_000);

  it("unknown outcome (write applied, answer lost, SDK retries) — guarded by the dedup record's conditional put, which tells the retry it was done", async () => {
    // Prepare: the first commit reaches DynamoDB, then its answer times out; the SDK sends it again.
    const order = newOrder('SOUO1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid()] }],
      replace: { [POINTS]: points(weak ? 'unconditional-writes' : 'none', { faults: ['unknownOutcome'] }) },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.outcomes.duplicatesSuppressed + real.outcomes.processed).toBe(1);
    expect(weak.summary.doubleAwards).toBeGreaterThan(0);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it("throttling and lost requests — guarded by the SDK's retries and transient classification (the record is retried, never acknowledged)", async () => {
    // Prepare: the first delivery's commit is throttled on all three SDK attempts, the second loses all three requests.
    const order = newOrder('SOTH1');
    const faults: FaultKind[] = ['throttle', 'throttle', 'throttle', 'lostRequest', 'lostRequest', 'lostRequest'];
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid()] }],
      replace: { [POINTS]: points(weak ? 'ack-on-error' : 'none', { faults }) },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.outcomes.retried).toBeGreaterThanOrEqual(1);
    expect(weak.summary.lostAwards).toBe(1);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('TransactionConflict — guarded by reading the cancellation reasons (a conflict is retried, not taken for a duplicate)', async () => {
    // Prepare: four conflicts in a row: more than the in-invocation retries.
    const order = newOrder('SOTC1');
    const faults: FaultKind[] = [
      'transactionConflict',
      'transactionConflict',
      'transactionConflict',
      'transactionConflict',
    ];
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid()] }],
      replace: { [POINTS]: points(weak ? 'cancel-means-done' : 'none', { faults }) },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.outcomes.retried).toBe(1);
    expect(weak.summary.lostAwards).toBe(1);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('poison: a conflicting payload for one order — guarded by the payload fingerprint (dead-lettered as PAYLOAD_CONFLICT, not swallowed as a duplicate)', async () => {
    // Prepare: an order, then once settled the same order number for another user and amount.
    const order = newOrder('SOPC1');
    const conflicting = order.conflicting();
    const scenario = (weak: boolean): Scenario => ({
      groups: [POINTS],
      phases: [{ messages: [order.paid()] }, { messages: [conflicting], afterQuiet: true }],
      replace: { [POINTS]: points(weak ? 'order-only-fingerprint' : 'none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.summary.deadLettered).toBe(1);
    expect(weak.invariants.missingDeadLetters).toBe(1);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('poison: malformed envelopes and bad bodies — guarded by permanent classification: dead-lettered at once with code and reason (the real consumers, all three groups)', async () => {
    // Prepare: one body that is not an envelope, one envelope whose body breaks every schema, one valid order.
    const order = newOrder('SOPB1');
    const malformed: ChaosMessage = {
      ...trafficMessage('{"specversion":"1.0","data":'),
      fact: { kind: MALFORMED_ENVELOPE },
    };
    const badBody = orderTopic<InvalidBody>(
      'PAID',
      { orderNo: 'SOPB2', userId: 'u1', points: -1 },
      { kind: 'invalid-body' },
    );

    // Act
    const r = await run({
      groups: [POINTS, COUPONS, STATUS],
      phases: [{ messages: [malformed, order.paid(), badBody] }],
      visibilityTimeoutSeconds: 4,
    });

    // Assess: each poison copy reached each group's DLQ on the first delivery, none was retried.
    expectHolds(r);
    expect(r.summary.deadLettered).toBe(6);
    expect(r.outcomes.retried).toBe(0);
  }, 120_000);

  it("a PAID re-sent after its order finished (new msgId, or a replay past FIFO deduplication's five minutes) — guarded by the transition's precondition (status = from): the order never moves back", async () => {
    // Prepare: an order paid and finished, then its PAID once more under a new msgId (a copy
    // with the same msgId within five minutes would be absorbed by FIFO deduplication).
    const order = newOrder('SOLP1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [STATUS],
      phases: [
        { messages: [order.paid()] },
        { messages: [order.finished()], afterQuiet: true },
        { messages: [order.paid(ids.next())], afterQuiet: true },
      ],
      replace: { [STATUS]: status(weak ? 'unconditional-transition' : 'none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.summary.groups[STATUS]!.detail).toMatchObject({ finished: 1 });
    expect(real.outcomes.duplicatesSuppressed).toBe(1);
    expect(weak.summary.doubleAwards).toBe(1);
    expect(weak.invariants.violations).toEqual([`${STATUS}: order SOLP1: moved back from FINISHED to PAID`]);
  }, 120_000);

  it('a producer that sends FINISHED before its PAID — guarded by classifying it as not yet applicable: retried at the fixed interval, its PAID held back, then dead-lettered RETRIES_EXHAUSTED with a reason, neither dead-lettered as illegal at once nor dropped', async () => {
    // Prepare: in producer order the FINISHED comes first, so on the orderly group it can never apply.
    const order = newOrder('SOOT1');
    const scenario = (weakness: StatusWeakness | 'none'): Scenario => ({
      groups: [STATUS],
      phases: [{ messages: [order.finished(), order.paid()] }],
      replace: { [STATUS]: status(weakness) },
    });

    // Act
    const [real, illegal, dropped] = await Promise.all([
      run(scenario('none')),
      run(scenario('not-yet-is-illegal')),
      run(scenario('not-yet-is-done')),
    ]);

    // Assess: the real consumer spent the FINISHED's attempts while its PAID waited, then applied the PAID; the
    // weakened ones dead-letter or lose it.
    expectHolds(real);
    expect(real.summary.groups[STATUS]!.detail).toMatchObject({
      paid: 1,
      overtaken: 0,
      illegalTransitionDeadLetters: 0,
    });
    expect(real.summary.groups[STATUS]!.detail.heldBack).toBeGreaterThanOrEqual(1);
    expect(real.summary.deadLettered).toBe(1);
    expect(illegal.summary.groups[STATUS]!.detail.illegalTransitionDeadLetters).toBe(1);
    expect(illegal.invariants.violations.join('\n')).toContain('DLQ: unexpected ILLEGAL_TRANSITION');
    expect(illegal.summary.invariantHolds).toBe(false);
    expect(dropped.invariants.violations.join('\n')).toContain('DLQ: missing RETRIES_EXHAUSTED');
    expect(dropped.summary.invariantHolds).toBe(false);
  }, 120_000);

  it('a failure in the middle of a message group — guarded by holding back the rest of the group (the FINISHED waits until its failed PAID is applied)', async () => {
    // Prepare: the PAID's first attempt fails before it reaches DynamoDB; its FINISHED is in the same batch.
    const order = newOrder('SOHB1');
    const scenario = (weak: boolean): Scenario => ({
      groups: [STATUS],
      phases: [{ messages: [order.paid(), order.finished()] }],
      crashes: { [STATUS]: { failFirstAttempt: ['SOHB1#PAID'] } },
      replace: { [STATUS]: weak ? statusWithoutHoldBack() : status('none') },
    });

    // Act
    const { real, weak } = await realAndWeakened(scenario);

    // Assess
    expectHolds(real);
    expect(real.faults.injectedFailures).toBe(1);
    expect(real.summary.groups[STATUS]!.detail).toMatchObject({
      finished: 1,
      heldBack: 1,
      overtaken: 0,
      appliedOutOfOrder: 0,
    });
    expect(weak.faults.injectedFailures).toBe(1);
    expect(weak.summary.groups[STATUS]!.detail.overtaken).toBeGreaterThanOrEqual(1);
    expect(weak.invariants.violations).toContainEqual(
      expect.stringMatching(
        /order SOHB1: event 2 \(\w+\) was attempted on attempt 1 before an earlier event was applied/,
      ),
    );
    expect(weak.summary.invariantHolds).toBe(false);
  }, 120_000);

  it("an invocation that outlives its visibility timeout while the next one applies the order's FINISHED — not taken for disorder: the PAID it applied first is reported last; a consumer that does apply FINISHED first is still caught", async () => {
    // Prepare: the invocation that first receives SOSL1's PAID applies it, then returns only after
    // its visibility timeout (2 s) has passed, as a descheduled one does on a loaded machine. The
    // other poller meanwhile receives the PAID again (a duplicate) and applies the FINISHED, and
    // its invocation ends first. The weakened consumer (no precondition, no hold-back) applies the
    // FINISHED while the PAID's failed first attempt waits for its retry.
    const slow = newOrder('SOSL1');
    const early = newOrder('SOSL2');
    const [real, weak] = await Promise.all([
      run({
        groups: [STATUS],
        phases: [{ messages: [slow.paid(), slow.finished()] }],
        consumers: 2,
        batchSize: 1,
        replace: { [STATUS]: statusReturningLate(slow.paidMsgId, 4000) },
      }),
      run({
        groups: [STATUS],
        phases: [{ messages: [early.paid(), early.finished()] }],
        crashes: { [STATUS]: { failFirstAttempt: ['SOSL2#PAID'] } },
        replace: { [STATUS]: statusWithoutHoldBack(weakStatusConsumer('unconditional-transition')) },
      }),
    ]);

    // Assess: the late report is an outlived invocation's, not an event applied out of order; the
    // FINISHED applied before its PAID was even received again is.
    expect(real.faults.processCrashes + real.faults.injectedFailures).toBe(0);
    expect(real.summary.groups[STATUS]!.detail).toMatchObject({ finished: 1, appliedOutOfOrder: 0, overtaken: 0 });
    expectHolds(real);
    expect(weak.summary.groups[STATUS]!.detail.appliedOutOfOrder).toBe(1);
    expect(weak.invariants.violations).toContainEqual(
      expect.stringMatching(/order SOSL2: event 1 \(\w+\) was applied after event 2, a later one in producer order/),
    );
  }, 120_000);

  it('crash inside the conditional update (applied, answer lost, process dead) — guarded by the precondition: the returning PAID finds the order moved on and settles as a duplicate, ahead of its FINISHED, which the FIFO queue holds back meanwhile', async () => {
    // Prepare: the invocation applying SOCU1's PAID dies once its update reached DynamoDB. Its
    // FINISHED follows 1 s later but waits: the queue holds the group back while the PAID is in flight.
    const order = newOrder('SOCU1');
    const scenario: Scenario = {
      groups: [STATUS],
      phases: [{ messages: [order.paid(), { ...order.finished(), atMs: 1000 }] }],
      crashes: { [STATUS]: { atCrashPoint: ['SOCU1#PAID'] } },
      consumers: 2,
      batchSize: 1,
    };

    // Act
    const real = await run(scenario);

    // Assess: without the precondition the returning PAID would still find a PAID order (the
    // FIFO queue brings it back before its FINISHED), so the weakened consumer is the late-PAID test's.
    expectHolds(real);
    expect(real.faults.processCrashes).toBe(1);
    expect(real.outcomes.duplicatesSuppressed).toBe(1);
    expect(real.summary.groups[STATUS]!.detail).toMatchObject({ finished: 1, appliedOutOfOrder: 0, overtaken: 0 });
  }, 120_000);
});
