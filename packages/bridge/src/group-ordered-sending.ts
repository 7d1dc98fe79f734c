import { messageGroups } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { packBatches } from './forward-target.ts';
import type { ForwardResult, OutboundMessage } from './types.ts';

/**
 * Sends a FIFO route's messages so that nothing of a message group lands after an earlier message
 * of that group failed to land.
 *
 * SQS FIFO keeps the order of what it accepted, not of what the sender meant: a call that fails
 * whole (throttling after the SDK's retries, a network error) while a later call carrying the
 * group's next message succeeds, or an entry refused while a later entry of its group in the same
 * call is accepted, puts the successor in the queue first. The re-send of the failed message then
 * lands behind it, and SQS drops the re-sent successor by its deduplication id, which freezes the
 * wrong order in place. So messages go out in waves: a wave holds the next message of every group
 * still going (never two of one group), its calls run side by side (their groups are disjoint),
 * and the next wave waits for the wave's answers. A group whose message did not land sends
 * nothing more; its later messages are answered as failed without being sent, and RocketMQ hands
 * the group back from the failed message on.
 *
 * Cost: one round trip per message of the largest group in the receive. A receive spread over
 * many groups needs as many calls as before (ten groups a call, all calls of a wave at once); a
 * receive of one group becomes one call per message.
 */
export async function sendInGroupOrder(
  messages: readonly OutboundMessage[],
  send: (batch: OutboundMessage[]) => Promise<ForwardResult[]>,
  sizeOf: (message: OutboundMessage) => number,
  maxBatchBytes: number,
): Promise<ForwardResult[]> {
  const groups = messageGroups(messages, (m) => m.messageGroupId);
  const results = new Map<string, ForwardResult>();
  const stoppedBy = new Map<readonly OutboundMessage[], OutboundMessage>();
  for (let wave = 0; ; wave++) {
    const heads = groups.filter((g) => wave < g.length && !stoppedBy.has(g)).map((g) => g[wave]!);
    if (heads.length === 0) break;
    const answers = (await Promise.all(packBatches(heads, sizeOf, maxBatchBytes).map(send))).flat();
    for (const answer of answers) results.set(answer.id, answer);
    for (const group of groups) {
      const head = group[wave];
      if (head && !stoppedBy.has(group) && results.get(head.id)?.ok !== true) stoppedBy.set(group, head);
    }
  }
  return messages.map((m): ForwardResult => {
    const result = results.get(m.id);
    if (result) return result;
    return { id: m.id, ok: false, reason: 'not sent: an earlier message of its FIFO message group did not land' };
  });
}
