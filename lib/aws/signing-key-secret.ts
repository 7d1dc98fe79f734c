import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { assertSigningKey, InvalidSigningKeyError, type SigningKeyRing } from '../rocketmq/index.ts';
import { ExpiringRead } from './expiring-read.ts';

interface Keys {
  readonly current: Uint8Array;
  /** When the current version was put: a key is signed with only once every reader has had time to load it. */
  readonly currentSince: number;
  readonly previous?: Uint8Array;
}

/**
 * The envelope signing key in Secrets Manager. Verifiers accept the `AWSCURRENT` and the
 * `AWSPREVIOUS` version, so a rotation (`put-secret-value`, or a rotation function) never
 * refuses what was signed before it. Publish before use: a signer keeps signing with the
 * previous version until the current one is `activationDelayMs` old (default 6 minutes, one
 * more than every reader's TTL), so no consumer ever meets a signature made with a key it has not
 * loaded yet. Read at start and kept for `ttlMs`: one pair of GetSecretValue calls per TTL, not
 * per message. A reload asked for within `minReloadMs` of the last read is skipped, so a stream
 * of forged envelopes cannot turn into a stream of calls.
 */
export class SecretSigningKeys implements SigningKeyRing {
  private readonly keys: ExpiringRead<Keys>;
  private readonly minReloadMs: number;
  private readonly activationDelayMs: number;
  private readonly now: () => number;

  constructor(
    private readonly client: SecretsManagerClient,
    private readonly secretId: string,
    options: {
      ttlMs?: number;
      minReloadMs?: number;
      activationDelayMs?: number;
      now?: () => number;
      /** Start reading at once (default true): in Lambda's init phase or the bridge's start, so the first batch does not wait. */
      prefetch?: boolean;
    } = {},
  ) {
    const ttlMs = options.ttlMs ?? 5 * 60_000;
    this.minReloadMs = options.minReloadMs ?? 30_000;
    this.activationDelayMs = options.activationDelayMs ?? ttlMs + 60_000;
    this.now = options.now ?? Date.now;
    this.keys = new ExpiringRead(() => this.load(), ttlMs, this.now);
    if (options.prefetch ?? true) void this.keys.get().catch(() => undefined);
  }

  async current(): Promise<Uint8Array> {
    const { current, currentSince, previous } = await this.keys.get();
    return previous && this.now() - currentSince < this.activationDelayMs ? previous : current;
  }

  async accepted(): Promise<readonly Uint8Array[]> {
    const { current, previous } = await this.keys.get();
    return previous ? [current, previous] : [current];
  }

  async reload(): Promise<boolean> {
    const readAt = this.keys.readAt;
    if (readAt !== undefined && this.now() - readAt < this.minReloadMs) return false;
    const { before, after } = await this.keys.reread();
    return before === undefined || !sameKeys(before, after);
  }

  private async load(): Promise<Keys> {
    const [current, previous] = await Promise.all([this.version('AWSCURRENT'), this.version('AWSPREVIOUS')]);
    if (current === undefined)
      throw new InvalidSigningKeyError(`the envelope signing key secret ${this.secretId} has no current value`);
    return { current: current.key, currentSince: current.since, ...(previous ? { previous: previous.key } : {}) };
  }

  private async version(stage: 'AWSCURRENT' | 'AWSPREVIOUS'): Promise<{ key: Uint8Array; since: number } | undefined> {
    let secret: string | undefined;
    let since: number;
    try {
      const version = await this.client.send(
        new GetSecretValueCommand({ SecretId: this.secretId, VersionStage: stage }),
      );
      secret = version.SecretString;
      since = version.CreatedDate?.getTime() ?? 0;
    } catch (error) {
      // A secret never rotated has no AWSPREVIOUS version.
      if (stage === 'AWSPREVIOUS' && (error as Error).name === 'ResourceNotFoundException') return undefined;
      throw new InvalidSigningKeyError(
        `the envelope signing key secret ${this.secretId} could not be read: ${(error as Error).name}`,
        { cause: error },
      );
    }
    if (secret === undefined) return undefined;
    return { key: assertSigningKey(Buffer.from(secret, 'utf8'), `${this.secretId} (${stage})`), since };
  }
}

function sameKeys(a: Keys, b: Keys): boolean {
  const same = (x?: Uint8Array, y?: Uint8Array) =>
    x === undefined || y === undefined ? x === y : Buffer.from(x).equals(y);
  return same(a.current, b.current) && same(a.previous, b.previous);
}
