import { type DeadLetterNotice, refetchCommands } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { OutboxLetter } from './outbox-letters.ts';

/**
 * Which of the three writers put a letter in a group's DLQ. Each says so differently, and `ops dlq`
 * must tell them apart before it words a reason or sends anything back:
 * - `failure-router`: the consumer's failure router, with its attributes (failure-code, …);
 * - `redrive-policy`: SQS itself, after maxReceiveCount receives, with no attribute at all (the
 *   function crashed or timed out before the router ran);
 * - `bridge-notice`: the bridge, for a message it could not forward (packages/runtime/src/rocketmq/dead-letter-notice.ts):
 *   no body, so nothing a consumer can apply; the body is still in RocketMQ.
 * And the outbox's queues (./outbox-letters.ts):
 * - `outbox-notice`: the relay, in its DLQ, for an item it could not send (the item stays FAILED);
 * - `stream-failure`: the relay's event source mapping, in the same DLQ, for stream records it gave up on;
 * - `outbound-refusal`: the bridge, in its outbound DLQ, for a relayed body it would not produce.
 */
export const LetterKind = {
  FailureRouter: 'failure-router',
  RedrivePolicy: 'redrive-policy',
  BridgeNotice: 'bridge-notice',
  OutboxNotice: 'outbox-notice',
  StreamFailure: 'stream-failure',
  OutboundRefusal: 'outbound-refusal',
} as const;
export type LetterKind = (typeof LetterKind)[keyof typeof LetterKind];

/** A notice is a notice even after a consumer failed it (the router's attributes then sit on a notice body). */
export function letterKindOf(
  hasRouterAttributes: boolean,
  notice: DeadLetterNotice | undefined,
  outbox?: OutboxLetter,
): LetterKind {
  if (notice) return LetterKind.BridgeNotice;
  if (outbox) return outbox.kind;
  return hasRouterAttributes ? LetterKind.FailureRouter : LetterKind.RedrivePolicy;
}

/** One line: the notice's own reason and detail, and the consumer's failure when someone sent it there anyway. */
export function noticeReasonText(notice: DeadLetterNotice, consumerFailure: string | undefined): string {
  const own = [notice.reason, notice.detail].filter((p) => p !== undefined).join(': ');
  return consumerFailure
    ? `${own} (bridge notice; later sent to the consumer, which failed it: ${consumerFailure})`
    : own;
}

/** Where the body still is, in words: `topic T, msgId M, broker B queue Q offset O, stored at …`. */
export function bodyLocationText(notice: DeadLetterNotice): string {
  const b = notice.body;
  return [
    b.topic && `topic ${b.topic}`,
    b.msgId && `msgId ${b.msgId}`,
    b.offsetMsgId && `offsetMsgId ${b.offsetMsgId}`,
    b.brokerName !== undefined && `broker ${b.brokerName}`,
    b.queueId !== undefined && `queue ${b.queueId}`,
    b.queueOffset !== undefined && `offset ${b.queueOffset}`,
    b.storeTimestamp !== undefined && `stored at ${new Date(b.storeTimestamp).toISOString()}`,
  ]
    .filter((p): p is string => typeof p === 'string' && p !== '')
    .join(', ');
}

/**
 * Why a notice is never sent back to the consumer: it has no body, so the consumer would fail it
 * again (and its failure would overwrite the notice's reason). Says where the body is and how to
 * fetch it; what to do with it then is a person's decision (it did not fit the queue).
 */
export function noticeRedriveRefusal(notice: DeadLetterNotice): string {
  const commands = refetchCommands(notice.body);
  return (
    `a bridge notice (${notice.reason}), not a message: it has no body, and the consumer would only fail it again. ` +
    `The body is still in RocketMQ (${bodyLocationText(notice) || 'no position recorded'}) for the broker's ` +
    'commit-log retention; fetch it with ' +
    (commands.length > 0 ? commands.join(' or ') : 'mqadmin queryMsgByUniqueKey by its msgId') +
    ' (the body is written to /tmp/rocketmq/msgbodys/), and handle it outside the queue, which it does not fit'
  );
}
