import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import type { TrafficMessage } from './traffic.ts';

/**
 * Which groups get a copy of a message, RocketMQ's clustering model: every group subscribed to
 * its topic gets one. A body that is not an envelope has no topic a bridge could read, so
 * every group gets it (and its real consumer dead-letters it). The local bridge sends by
 * these routes; the chaos run judges each group against the copies they give it.
 */
export class TopicRoutes {
  private readonly subscribers = new Map<string, string[]>();
  private readonly groups: readonly string[];

  constructor(definitions: readonly ConsumerGroupDefinition[]) {
    this.groups = definitions.map((d) => d.group);
    for (const d of definitions) this.subscribers.set(d.topic, [...(this.subscribers.get(d.topic) ?? []), d.group]);
  }

  targetsOf(message: TrafficMessage): string[] {
    const subscribed = message.topic === undefined ? [...this.groups] : (this.subscribers.get(message.topic) ?? []);
    return message.groups ? subscribed.filter((g) => message.groups!.includes(g)) : subscribed;
  }
}
