/**
 * The event ids this relay instance sent and marked most recently, at most `capacity` of them. A batch
 * the stream hands back after a partial failure holds records of other groups that were relayed the
 * first time; with a stream's one-invocation-per-shard, the retry usually lands on the same instance,
 * which then skips them rather than send them twice. A miss (another instance, an id forgotten) only
 * sends the same envelope again, which downstream deduplicates: this saves work, it guards nothing.
 */
export class RecentEventIds {
  readonly #ids = new Set<string>();

  constructor(private readonly capacity: number) {}

  has(eventId: string): boolean {
    return this.#ids.has(eventId);
  }

  add(eventId: string): void {
    this.#ids.delete(eventId);
    this.#ids.add(eventId);
    if (this.#ids.size > this.capacity) this.#ids.delete(this.#ids.values().next().value!);
  }
}
