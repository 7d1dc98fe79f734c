import { fifoTargetRefusal } from '@rocketmq-lambda/bridge/index.ts';
import type { RocketMQConsumerGroup } from '../consumer-group.ts';
import type { RocketMQBridgeRoute } from './bridge-service.ts';

/**
 * The bridge's routes, derived from the groups the stage deploys, never restated: each catalogue
 * group is a RocketMQ consumer group of the same name subscribed to its topic with its tag
 * expression, forwarded to its own source queue, with its own DLQ for what cannot be forwarded.
 * One RocketMQ consumer group per catalogue group keeps RocketMQ's clustering semantics: every
 * group gets every message of its topic once, whatever the number of bridge tasks. A stage may
 * name the RocketMQ group a route consumes as (`bridge.routes`): the legacy group it takes over.
 */
export function bridgeRoutes(
  groups: readonly RocketMQConsumerGroup[],
  routeGroups: Readonly<Record<string, Pick<RocketMQBridgeRoute, 'rocketmqGroup' | 'takeOver'>>> = {},
): RocketMQBridgeRoute[] {
  return groups.map((g) =>
    checkedRoute({
      ...routeGroups[g.definition.group],
      group: g.definition.group,
      topic: g.definition.topic,
      tagExpression: g.definition.tagExpression,
      queue: g.queue,
      dlq: g.deadLetterQueue,
      fifo: g.queue.fifo,
      ...(g.definition.messageGroupFrom ? { messageGroupFrom: g.definition.messageGroupFrom } : {}),
    }),
  );
}

/**
 * A route as the app builds it, or an error at synth for one the bridge would refuse at start: a
 * FIFO route onto an EventBridge bus, which loses the order it promises (`fifoTargetRefusal`).
 */
export function checkedRoute(route: RocketMQBridgeRoute): RocketMQBridgeRoute {
  const refusal = fifoTargetRefusal({
    group: route.group,
    fifo: route.fifo,
    target: route.eventBus && !route.queue ? 'eventbridge' : 'sqs',
  });
  if (refusal) throw new Error(refusal);
  return route;
}
