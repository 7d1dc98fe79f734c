/** Runs `fn` over `items` with at most `limit` calls in flight; resolves when all are done. */
export async function mapLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A backoff delay spread over [ms/2, 3ms/2): retries of contended writes should not meet again in step. */
export const jitter = (ms: number): number => ms / 2 + Math.random() * ms;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
