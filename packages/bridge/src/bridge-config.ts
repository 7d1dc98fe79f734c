import { readFileSync } from 'node:fs';
import { BRIDGE_EVENT_SOURCE_PREFIX } from '@rocketmq-lambda/runtime/config/index.ts';
import { z } from 'zod';

/**
 * What the bridge forwards where. One route = one RocketMQ consumer group subscribed to one topic
 * with a tag expression, forwarding into one SQS queue (or one EventBridge bus), with the group's
 * dead-letter queue for what cannot be forwarded at all.
 */
const sqsTarget = z.object({
  kind: z.literal('sqs'),
  queueUrl: z.string().min(1),
});

const eventBridgeTarget = z.object({
  kind: z.literal('eventbridge'),
  eventBusName: z.string().min(1),
  /** EventBridge `Source`; the groups' rules match its `rocketmq.` prefix. Defaults to `rocketmq.<clusterName>`. */
  source: z
    .string()
    .startsWith(
      BRIDGE_EVENT_SOURCE_PREFIX,
      `the groups' rules match only sources starting with ${BRIDGE_EVENT_SOURCE_PREFIX}`,
    )
    .optional(),
});

/** Where a route taking over a group starts a queue on which the group committed no offset (packages/bridge/src/group-takeover.ts). */
export const StartWithoutOffset = {
  /** Refuse to start while a queue of the topic has no committed offset of the group. */
  REFUSE: 'refuse',
  /** A queue without a committed offset starts at its first message (everything the broker still keeps). */
  FIRST: 'first',
} as const;

/**
 * A route's `takeOver`, also the stage setting's (packages/infra/src/deployment-settings.ts), so that the synth
 * and the bridge accept the same values. `startWithoutOffset` is `refuse` (the default), `first`, or
 * `{ "timestamp": "<ISO-8601 instant>" }`: such a queue then starts at its first message stored at
 * or after that instant, or at most one message earlier (packages/bridge/src/group-takeover.ts).
 */
export const takeOverSchema = z
  .object({
    startWithoutOffset: z
      .union([
        z.enum([StartWithoutOffset.REFUSE, StartWithoutOffset.FIRST]),
        z.object({ timestamp: z.iso.datetime({ offset: true }) }).strict(),
      ])
      .default(StartWithoutOffset.REFUSE),
  })
  .strict();
export type StartWithoutOffset = z.infer<typeof takeOverSchema>['startWithoutOffset'];

const routeSchema = z.object({
  /** The catalogue group: names the route's queues, records and metrics. */
  group: z.string().min(1),
  /**
   * The RocketMQ consumer group the route consumes as, when not `group`: the legacy group a cutover
   * takes over (its committed offsets and `%RETRY%` backlog), or a shadow stage's own group.
   */
  rocketmqGroup: z.string().min(1).optional(),
  /**
   * The route takes over a group other consumers ran (RocketMQ 4): it starts at the group's committed
   * offsets and refuses to start while a queue of the topic has none, unless `startWithoutOffset` says
   * where such a queue starts (packages/bridge/src/group-takeover.ts).
   */
  takeOver: takeOverSchema.optional(),
  topic: z.string().min(1),
  /** RocketMQ tag expression: `*`, `PAID`, `PAID || FINISHED`. */
  tagExpression: z.string().min(1).default('*'),
  /** A FIFO topic consumed by a FIFO group, forwarded to an SQS FIFO queue (message group = `MessageGroupId`). */
  fifo: z.boolean().default(false),
  /**
   * FIFO routes: where each message's `MessageGroupId` comes from (packages/runtime/src/rocketmq/message-group.ts):
   * the RocketMQ 5 message group (default), the first key, a user property, or the queue.
   */
  messageGroupFrom: z
    .discriminatedUnion('from', [
      z.object({ from: z.literal('messageGroup') }).strict(),
      z.object({ from: z.literal('key') }).strict(),
      z.object({ from: z.literal('property'), name: z.string().min(1) }).strict(),
      z.object({ from: z.literal('queue') }).strict(),
    ])
    .optional(),
  target: z.discriminatedUnion('kind', [sqsTarget, eventBridgeTarget]),
  /** The group's DLQ (an SQS queue URL; FIFO when the route is). */
  dlqUrl: z.string().min(1),
});

/**
 * The outbound route (packages/bridge/src/outbound-route.ts): the outbox relay's signed envelopes, read from the
 * stage's outbound queue (`outboundQueueName(prefix)`) and produced to this bridge's cluster. The queue's redrive
 * policy should point at `dlqUrl` too, so a message whose sends keep failing ends there after its receives.
 */
export const outboundSchema = z
  .object({
    /** The outbound SQS queue (standard): what the relay sends for topics whose target is `rocketmq`. */
    queueUrl: z.string().min(1),
    /** Where a message that is not an envelope signed with the stage's key goes, with its reason; never produced. */
    dlqUrl: z.string().min(1),
    /** Messages per receive: at most 10, SQS's limit. */
    receiveBatchSize: z.number().int().min(1).max(10).default(10),
    /** Long-polling wait of one receive, seconds (SQS allows 0 to 20). */
    waitTimeSeconds: z.number().int().min(0).max(20).default(20),
  })
  .strict();
export type OutboundRouteConfig = z.infer<typeof outboundSchema>;

/**
 * How the bridge talks to the cluster: RocketMQ 5's gRPC proxy, or RocketMQ 4's remoting protocol through the name
 * servers.
 */
export const RocketMQProtocol = {
  RocketMQ5: 'rocketmq5',
  RocketMQ4: 'rocketmq4',
} as const;
export type RocketMQProtocol = (typeof RocketMQProtocol)[keyof typeof RocketMQProtocol];

export const bridgeConfigSchema = z.object({
  protocol: z.enum([RocketMQProtocol.RocketMQ5, RocketMQProtocol.RocketMQ4]).default(RocketMQProtocol.RocketMQ5),
  /** `rocketmq5`: proxy gRPC endpoint(s), `host:8081` or `h1:8081;h2:8081`. */
  proxyEndpoint: z.string().min(1).optional(),
  /** `rocketmq4`: name server address(es), `host:9876` or `h1:9876;h2:9876`. */
  nameServer: z.string().min(1).optional(),
  /** Goes into each envelope's `source` as `rocketmq://<clusterName>`. */
  clusterName: z.string().min(1).default('DefaultCluster'),
  namespace: z.string().default(''),
  /**
   * TLS to the proxy (RocketMQ 5). On unless switched off explicitly, and the bridge logs a warning
   * when it is: with ACL on, the access key and a signature over the date travel in gRPC metadata,
   * and every message body in clear. The RocketMQ 4 client has no TLS, so `rocketmq4` needs an
   * explicit `false` (and a private network to the brokers).
   */
  sslEnabled: z.boolean().default(true),
  /**
   * Sign every envelope with the key in this Secrets Manager secret (its `AWSCURRENT` version),
   * for consumers that refuse unsigned envelopes (`ENVELOPE_SIGNING_SECRET`). Absent: unsigned.
   */
  signing: z
    .object({ secretId: z.string().min(1) })
    .strict()
    .optional(),
  /**
   * Messages per receive; the proxy caps a receive at 32, and so does the RocketMQ 4 client's pull.
   * A multiple of 10, the most SQS and EventBridge take per call, so no call goes out part-full:
   * at 16 a batch took 10 + 6, and the bridge spent about 30 % more CPU per message than at 20.
   */
  receiveBatchSize: z.number().int().min(1).max(32).default(20),
  /**
   * How long a received message stays hidden from other receivers; a forward must finish well within it.
   * On `rocketmq4` it is how soon the bridge hands an un-acked message out again (the broker does not: the offset
   * waits).
   */
  invisibleDurationMs: z.number().int().min(10_000).default(60_000),
  /** Long-polling wait of one receive. The proxy rejects waits it cannot fit in the request deadline, so keep ≥ 5 s. */
  awaitDurationMs: z.number().int().min(5_000).default(20_000),
  /**
   * Batches a route keeps in flight (received, not yet acked): that many receives and forwards
   * overlap, so the route waits on the network once per that many batches. FIFO routes always
   * keep one (see `batchesInFlightOf`).
   */
  maxBatchesInFlight: z.number().int().min(1).max(32).default(4),
  /**
   * Largest envelope forwarded, in bytes of UTF-8 JSON. SQS and EventBridge accepted 256 KiB per
   * message for years; SQS now takes up to 1 MiB, so raise it when every target queue allows it.
   */
  maxMessageBytes: z.number().int().min(1_024).default(262_144),
  health: z
    .object({
      host: z.string().default('127.0.0.1'),
      port: z.number().int().min(0).max(65_535).default(8080),
    })
    .default({ host: '127.0.0.1', port: 8080 }),
  /** How often the metrics buffer is flushed as CloudWatch EMF lines. */
  metricsIntervalMs: z.number().int().min(1_000).default(60_000),
  routes: z.array(routeSchema).min(1),
  /** The reverse route: outbound queue → this cluster's producer. Absent: the bridge produces nothing. */
  outbound: outboundSchema.optional(),
});

export type BridgeConfig = z.infer<typeof bridgeConfigSchema>;
export type BridgeRoute = BridgeConfig['routes'][number];
export type BridgeConfigInput = z.input<typeof bridgeConfigSchema>;

export class InvalidBridgeConfigError extends Error {
  override readonly name = 'InvalidBridgeConfigError';
}

export function parseBridgeConfig(input: unknown): BridgeConfig {
  const result = bridgeConfigSchema.safeParse(input);
  if (!result.success)
    throw new InvalidBridgeConfigError(`invalid bridge configuration: ${z.prettifyError(result.error)}`);
  const config = result.data;
  if (config.protocol === RocketMQProtocol.RocketMQ5 && !config.proxyEndpoint) {
    throw new InvalidBridgeConfigError("protocol rocketmq5 needs proxyEndpoint (the proxy's gRPC address)");
  }
  if (config.protocol === RocketMQProtocol.RocketMQ4 && !config.nameServer) {
    throw new InvalidBridgeConfigError('protocol rocketmq4 needs nameServer (the name server addresses)');
  }
  if (config.protocol === RocketMQProtocol.RocketMQ4 && config.sslEnabled) {
    throw new InvalidBridgeConfigError(
      'protocol rocketmq4 speaks the remoting protocol without TLS (its client has none), but sslEnabled is true (the default): ' +
        'set sslEnabled: false to accept a clear-text link, and keep the brokers on a private network',
    );
  }
  const outbound = outboundRefusal(config);
  if (outbound) throw new InvalidBridgeConfigError(outbound);
  const refusal = rocketmqGroupRefusal(config.protocol, config.routes);
  if (refusal) throw new InvalidBridgeConfigError(refusal);
  for (const route of config.routes) {
    const unordered = fifoTargetRefusal({ group: route.group, fifo: route.fifo, target: route.target.kind });
    if (unordered) throw new InvalidBridgeConfigError(unordered);
    if (route.fifo && route.target.kind === 'sqs' && !route.target.queueUrl.endsWith('.fifo')) {
      throw new InvalidBridgeConfigError(
        `route ${route.group}: a FIFO route needs an SQS FIFO queue (.fifo), got ${route.target.queueUrl}`,
      );
    }
    if (route.messageGroupFrom && !route.fifo) {
      throw new InvalidBridgeConfigError(
        `route ${route.group}: messageGroupFrom is set but the route is not FIFO: only FIFO routes forward message groups`,
      );
    }
    if (route.fifo !== route.dlqUrl.endsWith('.fifo')) {
      throw new InvalidBridgeConfigError(`route ${route.group}: the DLQ must be FIFO exactly when the route is`);
    }
  }
  return config;
}

/** Why the outbound route cannot run as configured, or `undefined` (no outbound route, or a sound one). */
function outboundRefusal(config: Pick<BridgeConfig, 'outbound' | 'signing'>): string | undefined {
  const { outbound } = config;
  if (!outbound) return undefined;
  if (!config.signing)
    return 'outbound is set but signing is not: the bridge produces only envelopes signed with the stage key, so it needs the key (signing.secretId)';
  if (outbound.queueUrl.endsWith('.fifo') !== outbound.dlqUrl.endsWith('.fifo'))
    return 'outbound: the DLQ must be FIFO exactly when the outbound queue is';
  return undefined;
}

/** The RocketMQ consumer group a route consumes as: its own, or the catalogue group's name. */
export function rocketmqGroupOf(route: {
  readonly group: string;
  readonly rocketmqGroup?: string | undefined;
}): string {
  return route.rocketmqGroup ?? route.group;
}

/**
 * Why routes cannot consume as the RocketMQ groups they name, or `undefined`. Shared by the
 * bridge's start and the CDK app's synth. Two routes of one bridge in one RocketMQ group would be
 * two consumers of one group in one process, each taking the other's queues and retries; a group
 * of several topics is not supported yet (docs/migration.md). Taking over a group is built for the
 * RocketMQ 4 remoting client, which reads the group's committed offsets before it subscribes.
 */
export function rocketmqGroupRefusal(
  protocol: RocketMQProtocol,
  routes: ReadonlyArray<{
    readonly group: string;
    readonly rocketmqGroup?: string | undefined;
    readonly takeOver?: unknown;
  }>,
): string | undefined {
  const seen = new Map<string, string>();
  for (const route of routes) {
    const name = rocketmqGroupOf(route);
    const other = seen.get(name);
    if (other !== undefined)
      return `routes ${other} and ${route.group} both consume as RocketMQ group ${name}: give each route its own group (rocketmqGroup)`;
    seen.set(name, route.group);
    if (route.takeOver && protocol !== RocketMQProtocol.RocketMQ4)
      return `route ${route.group}: takeOver is built for protocol rocketmq4 (a 4.x group moving to the bridge), but the protocol is ${protocol}`;
  }
  return undefined;
}

/**
 * Why a route cannot keep the order it promises, or `undefined`. A FIFO route promises each message
 * group in order, and only an SQS FIFO queue keeps it: EventBridge delivers events to its targets
 * in no particular order and retries them independently, so an order's FINISHED could reach its
 * consumer before its PAID. Shared by the bridge's start (`parseBridgeConfig`) and the CDK app's
 * synth (packages/infra/src/bridge/bridge-routes.ts), so both refuse the same routes with the same words.
 */
export function fifoTargetRefusal(route: {
  readonly group: string;
  readonly fifo: boolean | undefined;
  readonly target: 'sqs' | 'eventbridge';
}): string | undefined {
  if (!route.fifo || route.target === 'sqs') return undefined;
  return (
    `route ${route.group}: a FIFO route must forward to an SQS FIFO queue, but its target is EventBridge, ` +
    "which delivers events out of order (an order's FINISHED could reach the consumer before its PAID): " +
    'give the route an SQS FIFO queue, or make it a standard route (fifo: false) if its consumers do not need order'
  );
}

/**
 * How many batches a route keeps in flight. A FIFO route keeps one: a second batch could hold a
 * later message of a group whose earlier one is still being forwarded, and land first.
 */
export function batchesInFlightOf(config: BridgeConfig, route: BridgeRoute): number {
  return route.fifo ? 1 : config.maxBatchesInFlight;
}

/** `BRIDGE_CONFIG` holds the JSON itself (what ECS injects); `BRIDGE_CONFIG_FILE` points at a file. */
export function loadBridgeConfig(env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  const raw = env.BRIDGE_CONFIG ?? (env.BRIDGE_CONFIG_FILE ? readFileSync(env.BRIDGE_CONFIG_FILE, 'utf8') : undefined);
  if (raw === undefined) throw new InvalidBridgeConfigError('set BRIDGE_CONFIG (JSON) or BRIDGE_CONFIG_FILE');
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new InvalidBridgeConfigError(`bridge configuration is not JSON: ${(err as Error).message}`);
  }
  return parseBridgeConfig(json);
}
