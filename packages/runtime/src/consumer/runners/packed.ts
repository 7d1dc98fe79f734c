import { mapLimit } from '../concurrency.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import type { BatchState } from '../steps/batch-state.ts';
import type { ConsumerSetup } from '../steps/consumer-setup.ts';
import { commitRetryingContention } from '../steps/contention.ts';
import { abort, begin, crashed, failedAs, leadersAndFollowers, runBusiness, settleFollowers } from '../steps/settle.ts';

/**
 * A packing strategy's batch (`commitBatch`): every key begun and run, then the successful
 * ones committed together in as few transactions as DynamoDB allows, contention retried
 * round by round; later copies of a key are judged against the first, as in concurrent mode.
 *
 *   SO1 ─ begin ─ business ─┐
 *   SO2 ─ begin ─ business ─┼─ commitBatch [SO1 SO2 …] ─ copies judged ─ route
 *   SO3 ─ begin ─ business ─┘
 */
export async function consumePacked<P, R>(setup: ConsumerSetup<P, R>, batch: BatchState<P>): Promise<void> {
  const { leaders, followers, leaderOf } = leadersAndFollowers(batch.messages);
  const proceeding = await beginEach(setup, batch, leaders);
  try {
    await commitTogether(setup, batch, await runEach(setup, batch, proceeding));
  } catch (error) {
    for (const msg of proceeding.filter((m) => batch.settledAs(m.record) === undefined))
      batch.settleMessage(msg, await crashed(setup, msg, error));
  }
  settleFollowers(batch, followers, leaderOf);
}

interface Ready<P, R> {
  readonly msg: ConsumerMessage<P>;
  readonly value: R;
}

/** Begins each leader; settles those the strategy settles at once, returns the others (with their lease tokens). */
async function beginEach<P, R>(
  setup: ConsumerSetup<P, R>,
  batch: BatchState<P>,
  leaders: readonly ConsumerMessage<P>[],
): Promise<ConsumerMessage<P>[]> {
  const proceeding: ConsumerMessage<P>[] = [];
  await mapLimit(leaders, setup.concurrency, async (msg) => {
    const begun = await begin(setup, msg, batch.invocation.deadline);
    if ('settlement' in begun) batch.settleMessage(msg, begun.settlement);
    else proceeding.push(begun.proceed);
  });
  return proceeding;
}

/** Runs the business of each begun message; settles those whose business failed, returns the others' results. */
async function runEach<P, R>(
  setup: ConsumerSetup<P, R>,
  batch: BatchState<P>,
  proceeding: readonly ConsumerMessage<P>[],
): Promise<Ready<P, R>[]> {
  const outcomes = await Promise.all(proceeding.map((msg) => runBusiness(setup, msg, batch.invocation)));
  const ready: Ready<P, R>[] = [];
  for (const [i, outcome] of outcomes.entries()) {
    if (outcome.ok) ready.push({ msg: proceeding[i]!, value: outcome.value });
    else batch.settleMessage(proceeding[i]!, outcome.settlement);
  }
  return ready;
}

/** One batch commit of the ready messages (never called empty); each failure aborted, each message settled. */
async function commitTogether<P, R>(setup: ConsumerSetup<P, R>, batch: BatchState<P>, ready: Ready<P, R>[]) {
  if (ready.length === 0) return;
  // One transaction commits them all: each traced record gets its own commit span over it.
  const commitSpans = ready.map((r) => r.msg.span?.startChild('commit'));
  const settlements = await commitRetryingContention(
    ready,
    (items) =>
      setup.strategy.commitBatch!(
        items.map((r) => r.msg),
        items.map((r) => r.value),
      ).catch((error): Settlement[] => items.map(() => failedAs(error))),
    setup.contention,
  );
  for (const span of commitSpans) span?.end();
  for (const [i, { msg }] of ready.entries()) {
    const settlement = settlements[i]!;
    batch.settleMessage(msg, settlement.outcome === 'failed' ? await abort(setup, msg, settlement.error) : settlement);
  }
}
