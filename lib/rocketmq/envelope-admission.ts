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
