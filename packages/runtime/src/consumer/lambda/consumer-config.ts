import { type Tracer, trace } from '@opentelemetry/api';
import { type AwsConfig, configFromEnv, createSecretsManager, SecretSigningKeys } from '../../aws/index.ts';
import {
  assertOrderingFits,
  CONSUMER_ENV,
  type ConsumerGroupDefinition,
  copyLifetimeSeconds,
  DeliveryLifetimes,
  OUTBOX_ENV,
  OUTSIDE_SERVICES,
  type OutsideServiceName,
  type QueueLifetimes,
  queueLifetimesFromEnvironment,
  type ServiceAuth,
  type ServiceEndpoint,
  serviceAuthSchema,
  TABLE_ENV,
  type TableKey,
  TRACER_NAMES,
  TracingBackend,
  tracingBackendOf,
} from '../../config/index.ts';
import { RetrySchedule, type SigningKeyRing } from '../../rocketmq/index.ts';
import { InvalidConsumerConfigError, refusedAsConfig } from '../failures/errors.ts';

/** The tables a catalogue entry names, as a type: `deps.tables.ledger` exists exactly when the entry lists it. */
export type TablesOf<D extends ConsumerGroupDefinition> = D['tables'][number];

/** What every consumer function needs from its deployment, read once at start-up. */
export interface ConsumerRuntimeConfig<T extends TableKey = TableKey> {
  aws: AwsConfig;
  tables: Record<T, string>;
  /**
   * A publishing group's outbox table (its entry's `publishes`): deployed, `OUTBOX_TABLE`; elsewhere
   * the table the local run or the test made. A publishing group is refused without it.
   */
  outboxTable?: string;
  deadLetterQueueUrl: string;
  schedule: RetrySchedule;
  ttlSeconds?: number;
  /** The source queue and DLQ as deployed; the middleware refuses a schedule or TTL they cannot carry. */
  queueLifetimes?: QueueLifetimes;
  /** The outside services the group calls, by name; a bare URL is one called without credentials (a local stand-in). */
  services?: Partial<Record<OutsideServiceName, string | ServiceEndpoint>>;
  /** Batch packing (transactional groups), from the catalogue's `tuning.packing`. */
  packing?: boolean;
  /**
   * The keys the bridge may have signed with: every envelope must carry its signature. Deployed, the
   * stage's secret (`ENVELOPE_SIGNING_SECRET`); elsewhere a key the local run or the test generated.
   */
  envelopeKeys: SigningKeyRing;
  /**
   * Makes the records' spans. Deployed: the global tracer when the stage's tracing backend
   * (`TRACING_BACKEND`) is not `off`, whose provider the ADOT layer registers; absent, no span is made.
   */
  tracer?: Tracer;
}

/**
 * The configuration of `definition`'s function from its environment, as the CDK app wrote it.
 * A function deployed for another group (its `CONSUMER_GROUP`) is refused: its metrics would
 * carry a dimension no alarm watches, and its tag filter would belong to another group. So is
 * one without the envelope signing key (`ENVELOPE_SIGNING_SECRET`): a consumer configured from
 * its environment always checks the bridge's signature. The local run and the tests build their
 * consumers directly, with a key they generate.
 */
export function consumerConfigFromEnv<D extends ConsumerGroupDefinition>(
  definition: D,
  env: NodeJS.ProcessEnv = process.env,
): ConsumerRuntimeConfig<TablesOf<D>> {
  const required = (name: string) => {
    const value = env[name];
    if (!value) throw new InvalidConsumerConfigError(`environment variable ${name} is not set`);
    return value;
  };
  const deployedAs = env[CONSUMER_ENV.group];
  if (deployedAs !== undefined && deployedAs !== definition.group) {
    throw new InvalidConsumerConfigError(
      `this function was deployed for consumer group ${deployedAs} (${CONSUMER_ENV.group}) but runs the handler of ${definition.group} (${definition.entry})`,
    );
  }
  const packing =
    env[CONSUMER_ENV.packing] === undefined ? definition.tuning?.packing : env[CONSUMER_ENV.packing] === 'on';
  refusedAsConfig(() => assertOrderingFits(definition.group, definition.ordering, { packing }));
  const ttl = env[CONSUMER_ENV.ttlSeconds];
  const tables = Object.fromEntries(definition.tables.map((t) => [t, required(TABLE_ENV[t])])) as Record<
    TablesOf<D>,
    string
  >;
  const aws = configFromEnv(env);
  const schedule = RetrySchedule.parse(env[CONSUMER_ENV.retryDelays]);
  const queueLifetimes = queueLifetimesFromEnvironment(env);
  const signingSecret = env[CONSUMER_ENV.envelopeSigningSecret];
  if (!signingSecret) {
    // A deployed function must never act on an envelope the bridge did not sign: without the key it
    // would accept anything put on its queue, or handed to it by a direct lambda:InvokeFunction.
    throw new InvalidConsumerConfigError(
      `environment variable ${CONSUMER_ENV.envelopeSigningSecret} is not set: a consumer started from its environment acts only on envelopes the bridge signed, so it needs the signing key secret`,
    );
  }
  return {
    aws,
    tables,
    ...(definition.publishes?.length ? { outboxTable: required(OUTBOX_ENV.table) } : {}),
    deadLetterQueueUrl: required(CONSUMER_ENV.deadLetterQueueUrl),
    schedule,
    ...(ttl ? { ttlSeconds: Number(ttl) } : {}),
    queueLifetimes,
    services: Object.fromEntries(
      (definition.services ?? []).map((name) => [
        name,
        { url: env[OUTSIDE_SERVICES[name].env] ?? '', auth: serviceAuth(name, env) },
      ]),
    ),
    packing,
    ...(tracingBackendOf(env) === TracingBackend.off ? {} : { tracer: trace.getTracer(TRACER_NAMES.consumer) }),
    envelopeKeys: new SecretSigningKeys(createSecretsManager(aws), signingSecret, {
      // A retired key verifies as long as a copy signed with it can come back to this group.
      retentionMs:
        copyLifetimeSeconds(
          queueLifetimes ?? DeliveryLifetimes.derive(schedule, definition.ordering).queues,
          definition.ordering ?? 'concurrent',
        ) * 1000,
      // Read during Lambda's init phase, so the first batch does not wait for it; elsewhere on first use.
      prefetch: env.AWS_LAMBDA_FUNCTION_NAME !== undefined,
    }),
  };
}

/** How the function authenticates to an outside service, as the CDK app wrote it (absent: no credentials). */
function serviceAuth(name: OutsideServiceName, env: NodeJS.ProcessEnv): ServiceAuth {
  const variable = OUTSIDE_SERVICES[name].authEnv;
  const text = env[variable];
  if (text === undefined || text === '') return { kind: 'none' };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidConsumerConfigError(`environment variable ${variable} is not JSON`);
  }
  const parsed = serviceAuthSchema.safeParse(json);
  if (!parsed.success)
    throw new InvalidConsumerConfigError(
      `environment variable ${variable} is not a service authentication (${parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ')})`,
    );
  return parsed.data;
}
