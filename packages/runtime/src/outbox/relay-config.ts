import { z } from 'zod';
import { type AwsConfig, configFromEnv } from '../aws/index.ts';
import {
  CONSUMER_ENV,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  OUTBOX_ENV,
  type RelayTargets,
} from '../config/index.ts';
import { InvalidRelayConfigError } from './relay-errors.ts';

/** What a relay function needs from its deployment, read once at its cold start. */
export interface RelayDeployment {
  readonly definition: ConsumerGroupDefinition;
  readonly aws: AwsConfig;
  readonly tableName: string;
  readonly targets: RelayTargets;
  readonly deadLetterQueueUrl: string;
  /** The secret holding the stage's envelope signing key (`ENVELOPE_SIGNING_SECRET`). */
  readonly signingSecret: string;
}

const nonEmpty = z.string().min(1);
const targetsSchema = z.record(
  nonEmpty,
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('eventbridge'), eventBusName: nonEmpty }),
    z.object({
      kind: z.literal('sqs'),
      queues: z.array(z.object({ group: nonEmpty, url: nonEmpty, tagExpression: nonEmpty })),
    }),
    z.object({ kind: z.literal('rocketmq'), queueUrl: nonEmpty }),
  ]),
);

/** `OUTBOX_TARGETS` read and checked against what the group declares it publishes. */
export function parseRelayTargets(text: string, definition: ConsumerGroupDefinition): RelayTargets {
  const refuse = (why: string): never => {
    throw new InvalidRelayConfigError(`environment variable ${OUTBOX_ENV.targets} ${why}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    refuse('is not JSON');
  }
  const parsed = targetsSchema.safeParse(json);
  if (!parsed.success) refuse(`is not a topic → target map: ${parsed.error?.issues[0]?.message ?? ''}`);
  const targets = parsed.data as RelayTargets;
  for (const { topic, target } of definition.publishes ?? []) {
    const place = targets[topic];
    if (place === undefined)
      refuse(`has no target for topic ${topic}, which ${definition.group} declares it publishes`);
    else if (place.kind !== target)
      refuse(`sends topic ${topic} to ${place.kind}, but ${definition.group} declares target ${target}`);
  }
  return targets;
}

/**
 * The relay's configuration from its environment, as the CDK app wrote it; refused at the cold start,
 * naming the variable, when one is missing, names no publishing group of the catalogue, or leaves a
 * declared topic without a target. The local run and the tests build their relay directly.
 */
export function relayConfigFromEnv(env: NodeJS.ProcessEnv = process.env): RelayDeployment {
  const required = (name: string) => {
    const value = env[name];
    if (!value) throw new InvalidRelayConfigError(`environment variable ${name} is not set`);
    return value;
  };
  const group = required(CONSUMER_ENV.group);
  const definition = CONSUMER_GROUPS.find((g) => g.group === group) as ConsumerGroupDefinition | undefined;
  if (definition === undefined)
    throw new InvalidRelayConfigError(
      `environment variable ${CONSUMER_ENV.group} names ${group}, which is not in the catalogue`,
    );
  if (!definition.publishes?.length)
    throw new InvalidRelayConfigError(
      `environment variable ${CONSUMER_ENV.group} names ${group}, which publishes nothing: it has no outbox to relay`,
    );
  return {
    definition,
    aws: configFromEnv(env),
    tableName: required(OUTBOX_ENV.table),
    targets: parseRelayTargets(required(OUTBOX_ENV.targets), definition),
    deadLetterQueueUrl: required(OUTBOX_ENV.deadLetterQueueUrl),
    signingSecret: required(CONSUMER_ENV.envelopeSigningSecret),
  };
}
