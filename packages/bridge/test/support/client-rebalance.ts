/**
 * What the RocketMQ 4 client (ali-ons) of a bridge task logged about its rebalances: its own info
 * lines, which the bridge logs at debug (`POWERTOOLS_LOG_LEVEL=DEBUG`) as formatted messages.
 */
type LogLine = Record<string, unknown>;

/** A line of the client's periodic rebalance of the topic (every 10 s, and when it starts). */
export function isRebalanceOf(topic: string): (line: LogLine) => boolean {
  return (line) =>
    typeof line.message === 'string' && line.message.startsWith(`[mq:consumer] rebalanceByTopic: ${topic},`);
}

/** The queue ids of the topic the client logged as its allocation, the last time it did. */
export function allocationOf(lines: readonly LogLine[], topic: string): number[] | undefined {
  for (const line of [...lines].reverse()) {
    const match =
      typeof line.message === 'string' && /allocate queue for group: .*, result: (\[.*\])$/.exec(line.message);
    if (!match) continue;
    const queues = JSON.parse(match[1]!) as { topic: string; queueId: number }[];
    if (queues.some((q) => q.topic === topic)) return queues.map((q) => q.queueId).sort();
  }
  return undefined;
}

/**
 * Every consume offset the client read back from the broker for a queue of the topic it took over
 * (at its start or in a rebalance), and when.
 */
export function offsetReads(
  lines: readonly LogLine[],
  topic: string,
): { queueId: number; offset: number; at: number }[] {
  const pattern = new RegExp(
    `^\\[mq:consumer\\] read lastOffset => (-?\\d+) from store, topic="${topic}", .*queueId="(\\d+)"`,
  );
  return lines.flatMap((line) => {
    const match = typeof line.message === 'string' && pattern.exec(line.message);
    return match
      ? [{ queueId: Number(match[2]), offset: Number(match[1]), at: Date.parse(String(line.timestamp)) }]
      : [];
  });
}
