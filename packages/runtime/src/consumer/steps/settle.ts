import { classify, PayloadConflictError, TransientFailureError } from '../failures/errors.ts';
import type { ConsumerMessage, Invocation, Settlement } from '../settlement.ts';
import type { BatchState } from './batch-state.ts';
import type { ConsumerSetup } from './consumer-setup.ts';
import { commitRetryingContention } from './contention.ts';

/**
 * The steps a runner takes for one message: begin (the strategy may settle it at once), the
 * business, commit (contention retried), abort on failure; and the rules for copies of one key.
 * A step returns the message's settlement; the runner records it on the batch.
 */

/** A message the strategy let through, with the lease token it holds (lease mode). */
export type Begun<P> = { proceed: ConsumerMessage<P> } | { settlement: Settlement };

export async function begin<P, R>(
  setup: ConsumerSetup<P, R>,
  msg: ConsumerMessage<P>,
  deadline: number,
): Promise<Begun<P>> {
  try {
    const start = () => setup.strategy.begin(msg, deadline);
    const begun = await (msg.span ? msg.span.child('dedup', start) : start());
    if (!begun.proceed) return { settlement: begun.settlement };
    return { proceed: { ...msg, leaseToken: begun.leaseToken } };
  } catch (error) {
    return { settlement: { outcome: 'failed', error: classify(error) } };
  }
}

/**
 * One message through begin, the business and its commit: the one path every runner settles a
 * message alone by. Whatever throws on the way (an abort that failed) is `crashed`, the one
 * catch-all, for this message only.
 */
export async function settleOne<P, R>(
  setup: ConsumerSetup<P, R>,
  msg: ConsumerMessage<P>,
  invocation: Invocation,
): Promise<Settlement> {
  const begun = await begin(setup, msg, invocation.deadline);
  if ('settlement' in begun) return begun.settlement;
  const held = begun.proceed;
  try {
    const outcome = await runBusiness(setup, held, invocation);
    return outcome.ok ? await commit(setup, held, outcome.value) : outcome.settlement;
  } catch (error) {
    return crashed(setup, held, error);
  }
}

/** What the business made of one message: its result for the strategy, or the settlement of its failure. */
export type BusinessOutcome<R> = { ok: true; value: R } | { ok: false; settlement: Settlement };

/** Runs the business for one message; what it throws fails that message alone, classified and aborted. */
export async function runBusiness<P, R>(
  setup: ConsumerSetup<P, R>,
  msg: ConsumerMessage<P>,
  invocation: Invocation,
): Promise<BusinessOutcome<R>> {
  try {
    return { ok: true, value: await setup.business(msg, invocation) };
  } catch (error) {
    return { ok: false, settlement: await abort(setup, msg, error) };
  }
}

/** Commits one message's result: contention is retried (`commitRetryingContention`), a failure aborted. */
export async function commit<P, R>(setup: ConsumerSetup<P, R>, msg: ConsumerMessage<P>, value: R): Promise<Settlement> {
  const write = () =>
    commitRetryingContention(
      [msg],
      async () => [await setup.strategy.commit(msg, value).catch(failedAs)],
      setup.contention,
    );
  const [settlement] = await (msg.span ? msg.span.child('commit', write) : write());
  if (settlement!.outcome !== 'failed') return settlement!;
  return abort(setup, msg, settlement!.error);
}

/** Gives the strategy back what it holds for a failed message (lease mode releases its lease) and fails it. */
export async function abort<P, R>(
  setup: ConsumerSetup<P, R>,
  msg: ConsumerMessage<P>,
  error: unknown,
): Promise<Settlement> {
  const failure = classify(error);
  await setup.strategy.abort(msg, failure);
  return { outcome: 'failed', error: failure };
}

/** Anything thrown where a settlement was due, as the failed settlement of every record it was for. */
export const failedAs = (error: unknown): Settlement => ({ outcome: 'failed', error: classify(error) });

/**
 * The runtime itself failed for a message after the business ran (an abort that threw): the
 * message is aborted once more and retried as `HANDLER_CRASHED`; its batch-mates keep their own fate.
 */
export async function crashed<P, R>(
  setup: ConsumerSetup<P, R>,
  msg: ConsumerMessage<P>,
  error: unknown,
): Promise<Settlement> {
  const reason = error instanceof Error ? error.message : 'unknown error';
  const failure = new TransientFailureError(`handler failed: ${reason}`, 'HANDLER_CRASHED', { cause: error });
  // A lease that cannot be released either expires at its deadline and is taken over then.
  await setup.strategy.abort(msg, failure).catch(() => undefined);
  return { outcome: 'failed', error: failure };
}

/**
 * Copies of one key in one batch: the first is the leader, the later ones follow it. Two writes
 * to one item in a transaction are rejected, and two leases on one key would block each other,
 * so a follower waits for its leader's result (`settleFollowers`).
 */
export function leadersAndFollowers<P>(messages: readonly ConsumerMessage<P>[]) {
  const leaders = new Map<string, ConsumerMessage<P>>();
  const followers: ConsumerMessage<P>[] = [];
  for (const msg of messages) {
    if (leaders.has(msg.key)) followers.push(msg);
    else leaders.set(msg.key, msg);
  }
  return { leaders: [...leaders.values()], followers, leaderOf: (msg: ConsumerMessage<P>) => leaders.get(msg.key)! };
}

/** Settles each follower after its leader: judged against it when the leader committed, sent back when it did not. */
export function settleFollowers<P>(
  batch: BatchState<P>,
  followers: readonly ConsumerMessage<P>[],
  leaderOf: (msg: ConsumerMessage<P>) => ConsumerMessage<P>,
): void {
  for (const follower of followers) {
    const leader = leaderOf(follower);
    if (batch.committed(leader)) {
      batch.settleMessage(follower, judgeCopy(leader, follower));
      continue;
    }
    // The leader did not commit: this copy comes back and is judged on its own then.
    const error = new TransientFailureError(
      `an earlier copy of key ${follower.key} in the same batch did not commit`,
      'IN_BATCH_LEADER_FAILED',
    );
    batch.settleMessage(follower, { outcome: 'failed', error });
  }
}

/**
 * A later copy of a key whose earlier copy committed (or was already done): same content is a duplicate, different
 * content a conflict.
 */
export function judgeCopy<P>(leader: ConsumerMessage<P>, copy: ConsumerMessage<P>): Settlement {
  if (copy.fingerprint === leader.fingerprint)
    return { outcome: 'duplicate', reason: 'in-batch-duplicate', winnerMsgId: leader.message.msgId };
  const conflict = new PayloadConflictError(copy.key, leader.fingerprint, copy.fingerprint, leader.message.msgId);
  return { outcome: 'failed', error: conflict };
}
