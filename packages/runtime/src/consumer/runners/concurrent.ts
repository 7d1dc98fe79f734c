import { mapLimit } from '../concurrency.ts';
import type { BatchState } from '../steps/batch-state.ts';
import type { ConsumerSetup } from '../steps/consumer-setup.ts';
import { leadersAndFollowers, settleFollowers, settleOne } from '../steps/settle.ts';

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
  await mapLimit(leaders, setup.concurrency, async (msg) => {
    batch.settleMessage(msg, await settleOne(setup, msg, batch.invocation));
  });
  settleFollowers(batch, followers, leaderOf);
}
