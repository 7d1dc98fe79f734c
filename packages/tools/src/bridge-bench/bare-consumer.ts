import type { Drain, TimedSource } from './timed-source.ts';

/**
 * The source's own limit: the consumer the bridge uses for a route, driven by `lanes` loops that
 * each receive a batch and ack all of it, forwarding nothing. Resolves with the drain (see
 * TimedSource) and stops the consumer.
 */
export async function drainBare(source: TimedSource, lanes: number): Promise<Drain> {
  await source.start();
  let draining = true;
  const failed = Promise.withResolvers<never>();
  const lane = async () => {
    while (draining) {
      const batch = await source.receive();
      if (batch.length > 0) await source.ack(batch);
    }
  };
  // A lane still long-polling when the drain ends may fail once the consumer stops; that is expected.
  for (let i = 0; i < lanes; i++) lane().catch((err: unknown) => (draining ? failed.reject(err) : undefined));
  try {
    return await Promise.race([source.drained, failed.promise]);
  } finally {
    draining = false;
    await source.stop();
  }
}
