import { Logger } from '@aws-lambda-powertools/logger';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { BRIDGE_EVENT_SOURCE_PREFIX } from '@rocketmq-lambda/runtime/config/index.ts';
import type { SigningKeyRing } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type BridgeConfig, type BridgeRoute, batchesInFlightOf } from './bridge-config.ts';
import { RouteMetrics, type RouteStats } from './bridge-metrics.ts';
import type { BridgeTracing } from './bridge-tracing.ts';
import { DeadLetterQueue } from './dead-letter-queue.ts';
import { EventBridgeTarget } from './eventbridge-target.ts';
import { createOutboundProducer } from './outbound-producer.ts';
import { OUTBOUND_ROUTE_NAME, OutboundRoute } from './outbound-route.ts';
import { RouteForwarder } from './route-forwarder.ts';
import { PumpState, RoutePump } from './route-pump.ts';
import { clientLogger, createRouteSource } from './route-source.ts';
import { SqsTarget } from './sqs-target.ts';
import type { BeforeAckHook, ForwardTarget, MessageSource, RocketMQProducer } from './types.ts';

export interface BridgeDependencies {
  readonly sqs: SQSClient;
  readonly eventBridge?: EventBridgeClient;
  readonly logger?: Logger;
  /** RocketMQ ACL credentials, when the cluster enforces them. */
  readonly credentials?: { accessKey: string; accessSecret: string };
  /** Replaces the RocketMQ consumer of a route (tests of the pump without a broker). */
  readonly sourceFor?: (route: BridgeRoute) => MessageSource;
  readonly beforeAck?: BeforeAckHook;
  /** The envelope signing key (`signing` in the configuration). */
  readonly signingKeys?: SigningKeyRing;
  /** A span per forward (the stage's tracing backend); absent when it is `off`. */
  readonly tracing?: BridgeTracing;
  /** Replaces the outbound route's RocketMQ producer (tests of the route without a broker). */
  readonly producer?: RocketMQProducer;
}

export interface BridgeStatus {
  /** Every route's consumer has started and none is stopping. */
  readonly ready: boolean;
  readonly routes: Record<string, { state: PumpState; topic: string; stats: RouteStats }>;
  /** The outbound route (outbound queue → RocketMQ), when configured. */
  readonly outbound?: { state: PumpState; stats: RouteStats };
}

/** The RocketMQ → SQS/EventBridge bridge: one pump per configured route. */
export class Bridge {
  readonly #pumps: { route: BridgeRoute; pump: RoutePump; metrics: RouteMetrics }[];
  readonly #outbound: { route: OutboundRoute; metrics: RouteMetrics } | undefined;
  readonly #logger: Logger;
  #metricsTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: BridgeConfig,
    deps: BridgeDependencies,
  ) {
    this.#logger = deps.logger ?? new Logger({ serviceName: 'rocketmq-bridge' });
    this.#pumps = config.routes.map((route) => {
      const metrics = new RouteMetrics(route.group, route.topic);
      const source =
        deps.sourceFor?.(route) ??
        createRouteSource(config, route, { logger: this.#logger, credentials: deps.credentials });
      const forwarder = new RouteForwarder({
        route,
        clusterName: config.clusterName,
        target: this.#targetFor(route, deps),
        deadLetters: new DeadLetterQueue(deps.sqs, route.dlqUrl),
        maxMessageBytes: config.maxMessageBytes,
        metrics,
        logger: this.#logger,
        ack: (messages) => source.ack(messages),
        ...(deps.beforeAck ? { beforeAck: deps.beforeAck } : {}),
        ...(deps.signingKeys ? { signingKeys: deps.signingKeys } : {}),
        ...(deps.tracing ? { tracing: deps.tracing } : {}),
      });
      const pump = new RoutePump({
        group: route.group,
        source,
        forwarder,
        metrics,
        logger: this.#logger,
        batchesInFlight: batchesInFlightOf(config, route),
      });
      return { route, metrics, pump };
    });
    this.#outbound = this.#outboundRoute(deps);
  }

  async start(): Promise<void> {
    try {
      await Promise.all([...this.#pumps.map(({ pump }) => pump.start()), this.#outbound?.route.start()]);
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.#metricsTimer = setInterval(() => this.#flushMetrics(), this.config.metricsIntervalMs);
    this.#metricsTimer.unref();
    this.#logger.info('bridge started', {
      routes: this.config.routes.map((r) => `${r.topic}[${r.tagExpression}] → ${r.group}`),
      ...(this.config.outbound ? { outbound: `${this.config.outbound.queueUrl} → RocketMQ` } : {}),
    });
  }

  /** Stops receiving, lets in-flight forwards finish and ack, closes the consumers, flushes metrics. */
  async stop(): Promise<void> {
    clearInterval(this.#metricsTimer);
    await Promise.all([...this.#pumps.map(({ pump }) => pump.stop()), this.#outbound?.route.stop()]);
    this.#flushMetrics();
    this.#logger.info('bridge stopped');
  }

  status(): BridgeStatus {
    const routes = Object.fromEntries(
      this.#pumps.map(({ route, pump, metrics }) => [
        route.group,
        { state: pump.state, topic: route.topic, stats: { ...metrics.stats } },
      ]),
    );
    const outbound = this.#outbound;
    return {
      ready:
        this.#pumps.every(({ pump }) => pump.state === PumpState.Running) &&
        (outbound === undefined || outbound.route.state === PumpState.Running),
      routes,
      ...(outbound ? { outbound: { state: outbound.route.state, stats: { ...outbound.metrics.stats } } } : {}),
    };
  }

  #flushMetrics(): void {
    for (const { metrics } of this.#pumps) metrics.flush();
    this.#outbound?.metrics.flush();
  }

  /** The reverse route, when configured: it needs the key ring, since it produces only what the stage's key signed. */
  #outboundRoute(deps: BridgeDependencies): { route: OutboundRoute; metrics: RouteMetrics } | undefined {
    const config = this.config.outbound;
    if (!config) return undefined;
    if (!deps.signingKeys)
      throw new Error('the outbound route verifies envelopes with the signing keys, but no key ring was given');
    const metrics = new RouteMetrics(OUTBOUND_ROUTE_NAME, OUTBOUND_ROUTE_NAME);
    const logger = this.#logger.createChild({ persistentKeys: { route: OUTBOUND_ROUTE_NAME } });
    const producer =
      deps.producer ??
      createOutboundProducer(this.config, {
        logger: clientLogger(logger.createChild({ persistentKeys: { component: 'rocketmq-producer' } })),
        credentials: deps.credentials,
      });
    const route = new OutboundRoute({
      sqs: deps.sqs,
      config,
      producer,
      signingKeys: deps.signingKeys,
      metrics,
      logger,
    });
    return { route, metrics };
  }

  #targetFor(route: BridgeRoute, deps: BridgeDependencies): ForwardTarget {
    if (route.target.kind === 'sqs')
      return new SqsTarget(deps.sqs, route.target.queueUrl, this.config.maxMessageBytes, route.fifo);
    if (!deps.eventBridge)
      throw new Error(`route ${route.group} targets EventBridge but no EventBridge client was given`);
    const source = route.target.source ?? `${BRIDGE_EVENT_SOURCE_PREFIX}${this.config.clusterName}`;
    return new EventBridgeTarget(deps.eventBridge, route.target.eventBusName, source, this.config.maxMessageBytes);
  }
}
