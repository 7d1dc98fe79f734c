/**
 * A value read on first use and again once `ttlMs` has passed since: a secret a warm function
 * reads once per TTL, not once per message. A failed read is not kept, so the next use reads again
 * instead of failing until the TTL ends.
 */
export class ExpiringRead<T> {
  private cached: { value: Promise<T>; readAt: number } | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get(): Promise<T> {
    const now = this.now();
    if (this.cached && now - this.cached.readAt < this.ttlMs) return this.cached.value;
    const cached = { value: this.read(), readAt: now };
    this.cached = cached;
    cached.value.catch(() => {
      if (this.cached === cached) this.cached = undefined;
    });
    return cached.value;
  }

  /** When the value in hand was read; `undefined` when there is none. */
  get readAt(): number | undefined {
    return this.cached?.readAt;
  }

  /** Reads again now: the value before (`undefined` if there was none or it failed) and the new one. */
  async reread(): Promise<{ before: T | undefined; after: T }> {
    const before = await this.cached?.value.catch(() => undefined);
    this.cached = undefined;
    return { before, after: await this.get() };
  }
}
