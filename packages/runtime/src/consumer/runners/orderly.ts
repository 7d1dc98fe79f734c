import type { SQSRecord } from 'aws-lambda';
import { HeldBackError } from '../failures/errors.ts';
import type { ConsumerMessage, Settlement } from '../settlement.ts';
import { messageGroupOf } from '../sqs-attributes.ts';
import type { BatchState } from '../steps/batch-state.ts';
import type { ConsumerSetup } from '../steps/consumer-setup.ts';
import { dispositionOf } from '../steps/disposition.ts';
import { judgeCopy, settleOne } from '../steps/settle.ts';
import { consumeInOrder, messageGroups, type Turn } from './message-groups.ts';

/**
 * RocketMQ's orderly listener on a FIFO queue: each message group in arrival order, one record
 * at a time (begin, business, commit), the groups concurrently. A record that fails and will be
 * retried stops its group: the group's later records are held back, returned unprocessed, never
 * run, never counted. A record that is dead-lettered (permanent, or at its maximum) does not
 * stop it: RocketMQ too dead-letters an orderly message at its maximum and consumes the next one.
 *
 *   group A:  A1 ✓ ─ A2 ✗ retried ─ A3 held back
 *   group B:  B1 ✓ ─ B2 ✓                          (at the same time)
 */
export async function consumeInGroups<P, R>(setup: ConsumerSetup<P, R>, batch: BatchState<P>): Promise<void> {
  const messages = new Map(batch.messages.map((m) => [m.record, m]));
  // An earlier copy of a key in the same group has settled when a later one's turn comes.
  const firstCopies = new Map<string, ConsumerMessage<P>>();
  await consumeInOrder(
    messageGroups(batch.records, messageGroupOf),
    setup.concurrency,
    async (record) => {
      const msg = messages.get(record);
      if (msg) batch.settleMessage(msg, await take(setup, batch, msg, firstCopies));
      return turnAfter(setup, batch, record);
    },
    (record, blockedBy) => holdBack(batch, record, blockedBy, messages.get(record)),
  );
}

/** One record's turn: judged against an earlier copy that committed, or settled on its own. */
async function take<P, R>(
  setup: ConsumerSetup<P, R>,
  batch: BatchState<P>,
  msg: ConsumerMessage<P>,
  firstCopies: Map<string, ConsumerMessage<P>>,
): Promise<Settlement> {
  const copyOf = `${messageGroupOf(msg.record)}\u0000${msg.key}`;
  const first = firstCopies.get(copyOf);
  if (first && batch.committed(first)) return judgeCopy(first, msg);
  if (!first) firstCopies.set(copyOf, msg);
  return settleOne(setup, msg, batch.invocation);
}

/** Whether the group goes on after this record: yes unless it failed and comes back (its fate is decided now). */
async function turnAfter<P, R>(setup: ConsumerSetup<P, R>, batch: BatchState<P>, record: SQSRecord): Promise<Turn> {
  if (batch.settledAs(record)!.settlement.outcome !== 'failed') return 'continue';
  return (await dispositionOf(setup, batch, record)).action === 'dead-letter' ? 'continue' : 'block';
}

function holdBack<P>(
  batch: BatchState<P>,
  record: SQSRecord,
  blockedBy: SQSRecord,
  msg: ConsumerMessage<P> | undefined,
) {
  const blocker = batch.settledAs(blockedBy)!;
  const error = new HeldBackError(messageGroupOf(record)!, blocker.msgId ?? blockedBy.messageId);
  const settlement: Settlement = { outcome: 'failed', error };
  if (msg) batch.settleMessage(msg, settlement);
  else batch.settleRecord(record, { ...batch.settledAs(record)!, settlement });
}
