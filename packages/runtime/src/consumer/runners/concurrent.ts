import { mapLimit } from '../concurrency.ts';
import type { ConsumerMessage } from '../settlement.ts';
import type { BatchState } from '../steps/batch-state.ts';
import type { ConsumerSetup } from '../steps/consumer-setup.ts';
import { begin, commit, crashed, leadersAndFollowers, runBusiness, settleFollowers } from '../steps/settle.ts';

/**
 * RocketMQ's concurrent listener on a standard queue: every key of the batch at once (at most
 * `concurrency`), each message begun, run and committed on its own; later copies of a key wait
 * for the first and are judged against it.
 *
 *   SO1 ─ begin ─ business ─ commit ─┐
 *   SO2 ─ begin ─ business ─ commit ─┼─ copies of SO1 judged ─ route
 *   SO3 ─ begin (duplicate) ─────────┘
 */
export async function consumeConcurrently<P, R>(setup: ConsumerSetup<P, R>, batch: BatchState<P>): Promise<void> {
  const { leaders, followers, leaderOf } = leadersAndFollowers(batch.messages);
  await mapLimit(leaders, setup.concurrency, (msg) => consumeOne(setup, batch, msg));
  settleFollowers(batch, followers, leaderOf);
}

/** One message through begin, the business and its commit; settled whatever happens. */
export async function consumeOne<P, R>(
  setup: ConsumerSetup<P, R>,
  batch: BatchState<P>,
  msg: ConsumerMessage<P>,
): Promise<void> {
  const begun = await begin(setup, msg, batch.invocation.deadline);
  if ('settlement' in begun) return batch.settleMessage(msg, begun.settlement);
  const held = begun.proceed;
  try {
    const outcome = await runBusiness(setup, held, batch.invocation);
    batch.settleMessage(held, outcome.ok ? await commit(setup, held, outcome.value) : outcome.settlement);
  } catch (error) {
    batch.settleMessage(held, await crashed(setup, held, error));
  }
}
