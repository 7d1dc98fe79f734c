import { format } from 'node:util';
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  type BridgeConfig,
  type BridgeRoute,
  batchesInFlightOf,
  RocketMQProtocol,
  rocketmqGroupOf,
} from './bridge-config.ts';
import { GroupDeadLettersError } from './group-retry-policy.ts';
import { RemotingRouteConsumer } from './remoting-route-consumer.ts';
import { RouteConsumer } from './route-consumer.ts';
import type { MessageSource } from './types.ts';

export interface RouteSourceOptions {
  readonly logger: Logger;
  /** RocketMQ ACL credentials, when the cluster enforces them. */
  readonly credentials?: { accessKey: string; accessSecret: string } | undefined;
}

/** A route's RocketMQ consumer group as the configured protocol reaches it. */
export function createRouteSource(
  config: BridgeConfig,
  route: BridgeRoute,
  options: RouteSourceOptions,
): MessageSource {
  const { credentials } = options;
  const logger = clientLogger(
    options.logger.createChild({
      persistentKeys: { component: 'rocketmq-client', group: route.group, rocketmqGroup: rocketmqGroupOf(route) },
    }),
  );
  if (config.protocol === RocketMQProtocol.RocketMQ4) {
    return new RemotingRouteConsumer({
      nameServers: config
        .nameServer!.split(';')
        .map((a) => a.trim())
        .filter((a) => a.length > 0),
      consumerGroup: rocketmqGroupOf(route),
      topic: route.topic,
      tagExpression: route.tagExpression,
      batchSize: config.receiveBatchSize,
      batchesInFlight: batchesInFlightOf(config, route),
      awaitDurationMs: config.awaitDurationMs,
      redeliverAfterMs: config.invisibleDurationMs,
      logger,
      ...(credentials ? { credentials } : {}),
      ...(route.takeOver ? { takeOver: route.takeOver } : {}),
    });
  }
  const consumer = new RouteConsumer({
    endpoints: config.proxyEndpoint!,
    namespace: config.namespace,
    sslEnabled: config.sslEnabled,
    consumerGroup: rocketmqGroupOf(route),
    // One topic per client: a multi-topic client's startup can miss the settings reply it waits for
    // (see waitForRoutes in packages/tools/src/rocketmq/local-rocketmq.ts).
    subscriptions: new Map([[route.topic, route.tagExpression]]),
    awaitDuration: config.awaitDurationMs,
    invisibleDurationMs: config.invisibleDurationMs,
    batchSize: config.receiveBatchSize,
    logger,
    ...(credentials ? { sessionCredentials: credentials } : {}),
  });
  return {
    async start() {
      await consumer.startup();
      const refusal = consumer.retryPolicyRefusal();
      if (!refusal) return;
      await consumer.shutdown().catch(() => undefined);
      throw new GroupDeadLettersError(refusal);
    },
    receive: () => consumer.receiveMessages(),
    ack: (messages) => consumer.ackReceived(messages),
    stop: () => consumer.shutdown(),
  };
}

/** The RocketMQ client logs printf-style and chattily; its info goes to debug, the rest keeps its level. */
export function clientLogger(logger: Logger) {
  return {
    info: (...args: unknown[]) => logger.debug(format(...args)),
    debug: (...args: unknown[]) => logger.debug(format(...args)),
    warn: (...args: unknown[]) => logger.warn(format(...args)),
    error: (...args: unknown[]) => logger.error(format(...args)),
  };
}
