import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';

/** A local or chaos run asked for something it cannot do; the message says what. */
export class LocalRunConfigError extends Error {
  override readonly name = 'LocalRunConfigError';
}

/** The event source and bridge settings of a run, as the pollers and the bridge use them. */
export interface RunSettings {
  concurrency: number;
  batchSize: number;
  batchingWindowMs: number;
  timeoutMs: number;
  timeScale: number;
  visibilityTimeoutSeconds: number;
  redeliverProbability: number;
  seed: number;
}

/**
 * The default time limit of a run: 10 minutes, plus 50 ms for every copy the bridge will
 * put on a queue (a message times the groups it goes to): 15 min for a 3,000-message chaos
 * run, which drains in about 3 min on a shared 2-core machine. The margin is for slower
 * machines and heavier fault plans; a fixed limit cut large runs short while they were still
 * making progress, and then reported what they had not sent yet.
 */
export function defaultMaxRunMs(copies: number): number {
  return 600_000 + 50 * copies;
}

/** The catalogue entries a run drives: the ones asked for, checked against the catalogue, or all of them. */
export function selectGroups(
  catalogue: readonly ConsumerGroupDefinition[],
  requested: readonly string[] | undefined,
): ConsumerGroupDefinition[] {
  if (!requested) return [...catalogue];
  if (requested.length === 0) throw new LocalRunConfigError('no consumer group selected');
  return [...new Set(requested)].map((g) => {
    const definition = catalogue.find((d) => d.group === g);
    if (!definition)
      throw new LocalRunConfigError(
        `unknown consumer group "${g}"; the catalogue has: ${catalogue.map((d) => d.group).join(', ')}`,
      );
    return definition;
  });
}

/** Refuses settings Lambda would refuse, or that make no sense, before anything starts. */
export function validateSettings(s: RunSettings) {
  const check = (ok: boolean, what: string) => {
    if (!ok) throw new LocalRunConfigError(what);
  };
  check(
    Number.isInteger(s.concurrency) && s.concurrency >= 1 && s.concurrency <= 1000,
    `consumers must be an integer from 1 to 1000, got ${s.concurrency}`,
  );
  check(
    Number.isInteger(s.batchSize) && s.batchSize >= 1 && s.batchSize <= 10_000,
    `batch size must be an integer from 1 to 10000, got ${s.batchSize}`,
  );
  check(s.batchSize <= 10 || s.batchingWindowMs > 0, 'a batch size above 10 needs a batching window, as on Lambda');
  check(
    Number.isFinite(s.batchingWindowMs) && s.batchingWindowMs >= 0 && s.batchingWindowMs <= 300_000,
    `batching window must be 0 to 300000 ms, got ${s.batchingWindowMs}`,
  );
  check(
    Number.isInteger(s.visibilityTimeoutSeconds) &&
      s.visibilityTimeoutSeconds >= 1 &&
      s.visibilityTimeoutSeconds <= 43_200,
    `visibility timeout must be an integer from 1 to 43200 s, got ${s.visibilityTimeoutSeconds}`,
  );
  check(
    Number.isFinite(s.redeliverProbability) && s.redeliverProbability >= 0 && s.redeliverProbability <= 1,
    `redeliver probability must be between 0 and 1, got ${s.redeliverProbability}`,
  );
  check(Number.isInteger(s.seed), `seed must be an integer, got ${s.seed}`);
}
