import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { createDynamoDb, createSqs } from '../../aws/index.ts';
import { assertCatalogueEntry, type ConsumerGroupDefinition, recordIdPrefix } from '../../config/index.ts';
import type { RocketMQMessage } from '../../rocketmq/index.ts';
import { ConsumerEngine, type ConsumerEngineOptions } from '../consumer-engine.ts';
import { FailureRouter } from '../failures/failure-router.ts';
import type { Business, RecordReport } from '../settlement.ts';
import { type ConsumerRuntimeConfig, consumerConfigFromEnv, type TablesOf } from './consumer-config.ts';
import { type ConsumerHandler, consumerHandler } from './middleware.ts';
import { type ResultOf, type StrategyFactory, wiredStrategy } from './strategy-wiring.ts';

/**
 * What `create` builds a group's handler from: the deployment (from the environment in Lambda,
 * from the local run or a test elsewhere), plus what a caller may put between the consumer and
 * the world: observers, a clock, instrumented clients.
 */
export interface ConsumerConfig<D extends ConsumerGroupDefinition = ConsumerGroupDefinition>
  extends ConsumerRuntimeConfig<TablesOf<D>> {
  /** Every record's report (the local run's account, tests), beside the logs and metrics. */
  onReport?: (report: RecordReport) => void;
  /** Where the structured log lines go (the local run ships them to the emulator's CloudWatch Logs). */
  logger?: Logger;
  now?: () => number;
  /** Fault injection and command recording between the consumer and AWS. */
  dynamoDb?: DynamoDBDocumentClient;
  sqs?: SQSClient;
  /** Credentials that sign calls to a SigV4 outside service (default: the SDK's default provider chain). */
  awsCredentials?: AwsCredentialIdentityProvider;
  /** Lease mode: added to the invocation's deadline to make the lease (default 5 s). */
  leaseMarginMs?: number;
  /** Lease mode: the time an outside call leaves the invocation for completing its record (default 2 s). */
  outsideCallReserveMs?: number;
}

/** What a group's business is built from, once per function instance: its config with clients and clock in place. */
export type ConsumerWiring<D extends ConsumerGroupDefinition = ConsumerGroupDefinition> = ConsumerConfig<D> & {
  readonly definition: D;
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly now: () => number;
};

/**
 * A consumer group's own part: how to read a message, its key, its business. The strategy is the
 * catalogue entry's (`strategy`), stated there once: the business returns what it commits.
 */
export interface ConsumerSpec<D extends ConsumerGroupDefinition, P, R> {
  /** A strategy the module builds itself instead of the entry's: for tests that weaken one. */
  strategy?: StrategyFactory<R>;
  /** Parses and validates the business body; throws `InvalidPayloadError` for bad content. */
  parsePayload: (body: string, message: RocketMQMessage) => P;
  /** The business idempotency key (an order number). Never the msgId: an application re-send has a new one. */
  keyOf: (payload: P) => string;
  /** The fields whose hash tells a duplicate from a conflict. Default: the whole payload. */
  fingerprintFields?: (payload: P) => unknown;
  /** Given the group's wiring once, returns what one message means. */
  business: (wiring: ConsumerWiring<D>) => Business<P, NoInfer<R>>;
}

/**
 * What a handler module (`packages/consumers/functions/<name>/handler.ts`) exports as `consumer`: its catalogue
 * entry, the factory that builds its handler from a configuration (the deployed environment's,
 * the local run's, a test's), and the Lambda entry point. The local run and the checks that
 * every catalogue entry is wired find a group's consumer through this export alone.
 */
export interface ConsumerModule<D extends ConsumerGroupDefinition = ConsumerGroupDefinition> {
  readonly definition: D;
  readonly create: (config: ConsumerConfig<D>) => ConsumerHandler;
  /** Built during init in Lambda, so a refused configuration fails the cold start. */
  readonly handler: ConsumerHandler;
}

/**
 * A consumer group's function, from its catalogue entry and its own part. Everything else is
 * wired here, the same way for every group: the AWS clients, the strategy from the entry (its
 * table, record-id prefix, TTL, packing), the failure router on the entry's DLQ and schedule,
 * an orderly group's failure counts, the deployed queue lifetimes, the envelope keys, the logs,
 * metrics and observers.
 */
export function defineConsumer<D extends ConsumerGroupDefinition, P, R = ResultOf<D>>(
  definition: D,
  spec: ConsumerSpec<D, P, R>,
): ConsumerModule<D> {
  // At the module's import: in Lambda the init phase, so an entry its function cannot run with fails the cold start.
  assertCatalogueEntry(definition);
  const create = (config: ConsumerConfig<D>) => createConsumer(definition, spec, config);
  return { definition, create, handler: lazyHandler(() => create(consumerConfigFromEnv(definition))) };
}

/** The group's engine, from its entry, its own part and its wiring, behind the Lambda handler's logs and metrics. */
function createConsumer<D extends ConsumerGroupDefinition, P, R>(
  definition: D,
  spec: ConsumerSpec<D, P, R>,
  config: ConsumerConfig<D>,
): ConsumerHandler {
  const wiring: ConsumerWiring<D> = {
    ...config,
    definition,
    dynamoDb: config.dynamoDb ?? createDynamoDb(config.aws),
    sqs: config.sqs ?? createSqs(config.aws),
    now: config.now ?? Date.now,
  };
  return consumerHandler(new ConsumerEngine(engineOptions(spec, wiring)), config);
}

/** What the engine is built from: the entry's group, topic, tags and ordering, the spec, the wired strategy and DLQ. */
function engineOptions<D extends ConsumerGroupDefinition, P, R>(
  spec: ConsumerSpec<D, P, R>,
  wiring: ConsumerWiring<D>,
): ConsumerEngineOptions<P, R> {
  const { group, topic, tagExpression, ordering } = wiring.definition;
  const tables: Partial<Record<string, string>> = wiring.tables;
  return {
    group,
    topic,
    tagExpression,
    ordering,
    parsePayload: spec.parsePayload,
    keyOf: spec.keyOf,
    fingerprintFields: spec.fingerprintFields,
    strategy: wiredStrategy(wiring, spec.strategy),
    business: spec.business(wiring),
    failures: new FailureRouter({
      sqs: wiring.sqs,
      group,
      deadLetterQueueUrl: wiring.deadLetterQueueUrl,
      schedule: wiring.schedule,
    }),
    ...(ordering === 'orderly' && tables.idempotency
      ? {
          failureCounts: {
            client: wiring.dynamoDb,
            tableName: tables.idempotency,
            recordIdPrefix: recordIdPrefix(group),
          },
        }
      : {}),
    queues: wiring.queueLifetimes,
    envelopeKeys: wiring.envelopeKeys,
    tracer: wiring.tracer,
    now: wiring.now,
  };
}

/**
 * Builds the handler on first use, so importing a handler module (tests, tools) never needs
 * its environment. In Lambda it is built during init instead: a configuration the consumer
 * refuses (a missing table, a TTL shorter than the retry window) fails the cold start,
 * before any message is received.
 */
export function lazyHandler<H extends (...args: never[]) => unknown>(
  build: () => H,
  env: NodeJS.ProcessEnv = process.env,
): H {
  let built: H | undefined = env.AWS_LAMBDA_FUNCTION_NAME ? build() : undefined;
  return ((...args: Parameters<H>) => {
    built ??= build();
    return built(...args);
  }) as H;
}
