import { excerpt, type RocketMQMessage } from './envelope.ts';

/**
 * What a consumer group admits of an envelope whose signature it has checked: the bridge's key
 * signs every topic and every age alike, so the signature says who wrote an envelope, not that
 * this group should act on it now. Each check says why not, or `undefined` when the envelope may
 * go on; the consumer dead-letters a refusal as a permanent failure with its own code.
 */

/**
 * Why `message` is not for a group that subscribes to `subscribedTopic`, or `undefined`. A
 * genuine envelope of another topic reached this queue only through a route (or a sender) that
 * should not exist; acting on it would apply another topic's body as this group's business.
 */
export function topicRefusal(message: Pick<RocketMQMessage, 'topic'>, subscribedTopic: string): string | undefined {
  if (message.topic === subscribedTopic) return undefined;
  return `the envelope's topic ${excerpt(message.topic)} is not ${subscribedTopic}, the topic this consumer group subscribes to`;
}

/**
 * Why a message stored at `storeTimestamp` is too old for the group to act on, or `undefined`.
 * `horizonSeconds` is the group's redrive horizon (packages/runtime/src/config/delivery-lifetimes.ts): past it, the
 * dedup record a first delivery wrote may have expired, so a copy acting now could apply the
 * effect a second time. The store time is the broker's and is covered by the signature, so a
 * genuine old envelope (kept, replayed, redriven) cannot be made to look new. An envelope without
 * a store time is not judged here (the bridge writes one for every message it receives from a broker).
 */
export function storeTimeRefusal(
  message: Pick<RocketMQMessage, 'storeTimestamp'>,
  horizonSeconds: number,
  now: number,
): string | undefined {
  const stored = message.storeTimestamp;
  if (stored === undefined || now - stored <= horizonSeconds * 1000) return undefined;
  return (
    `the message was stored ${duration(now - stored)} ago (${new Date(stored).toISOString()}), past this group's ` +
    `redrive horizon of ${duration(horizonSeconds * 1000)}: its dedup record may have expired, so acting on it could apply its effect twice`
  );
}

/** `29d 19h 14m`: days, hours and minutes, the largest first, zeros left out. */
function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  const parts = [
    [Math.floor(minutes / 1440), 'd'],
    [Math.floor(minutes / 60) % 24, 'h'],
    [minutes % 60, 'm'],
  ] as const;
  return (
    parts
      .filter(([n]) => n > 0)
      .map(([n, unit]) => `${n}${unit}`)
      .join(' ') || '0m'
  );
}
