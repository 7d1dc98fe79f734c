/**
 * The environment a consumer function is deployed with: the names the CDK app writes and
 * the function reads, in one place (no SDK imports, so synth loads none).
 */
import type { DeliveryLifetimes, QueueLifetimes } from './delivery-lifetimes.ts';

export const CONSUMER_ENV = {
  /** The catalogue group the function was deployed for; the handler refuses to start as another. */
  group: 'CONSUMER_GROUP',
  packing: 'CONSUMER_PACKING',
  deadLetterQueueUrl: 'DEAD_LETTER_QUEUE_URL',
  retryDelays: 'RETRY_DELAYS_SECONDS',
  ttlSeconds: 'IDEMPOTENCY_TTL_SECONDS',
  maxReceiveCount: 'SOURCE_MAX_RECEIVE_COUNT',
  sourceRetention: 'SOURCE_RETENTION_SECONDS',
  deadLetterRetention: 'DEAD_LETTER_RETENTION_SECONDS',
  /** The secret holding the bridge's envelope signing key; set, every envelope must be signed with it. */
  envelopeSigningSecret: 'ENVELOPE_SIGNING_SECRET',
} as const;

/** What the function must know to check its schedule, its queues and its record TTL against each other. */
export function lifetimeEnvironment(lifetimes: DeliveryLifetimes, recordTtlSeconds: number): Record<string, string> {
  return {
    [CONSUMER_ENV.retryDelays]: lifetimes.schedule.delaysSeconds.join(','),
    [CONSUMER_ENV.ttlSeconds]: String(recordTtlSeconds),
    [CONSUMER_ENV.maxReceiveCount]: String(lifetimes.queues.maxReceiveCount),
    [CONSUMER_ENV.sourceRetention]: String(lifetimes.queues.sourceRetentionSeconds),
    [CONSUMER_ENV.deadLetterRetention]: String(lifetimes.queues.deadLetterRetentionSeconds),
  };
}

/** The queue settings as deployed, when the environment states them (a function deployed by this app always does). */
export function queueLifetimesFromEnvironment(env: NodeJS.ProcessEnv): QueueLifetimes | undefined {
  const values = [
    env[CONSUMER_ENV.maxReceiveCount],
    env[CONSUMER_ENV.sourceRetention],
    env[CONSUMER_ENV.deadLetterRetention],
  ];
  if (values.every((v) => v === undefined || v === '')) return undefined;
  const [maxReceiveCount, sourceRetentionSeconds, deadLetterRetentionSeconds] = values.map((v) => Number(v));
  return {
    maxReceiveCount: maxReceiveCount!,
    sourceRetentionSeconds: sourceRetentionSeconds!,
    deadLetterRetentionSeconds: deadLetterRetentionSeconds!,
  };
}
