import {
  GetSecretValueCommand,
  ListSecretVersionIdsCommand,
  type SecretsManagerClient,
  type SecretVersionsListEntry,
} from '@aws-sdk/client-secrets-manager';
import { DeliveryLifetimes, REVOKED_STAGE_PREFIX } from '../config/index.ts';
import {
  assertSigningKey,
  InvalidSigningKeyError,
  type ReloadCause,
  RetrySchedule,
  type SigningKeyRing,
  signingKeyId,
} from '../rocketmq/index.ts';
import { ExpiringRead } from './expiring-read.ts';

export { REVOKED_STAGE_PREFIX };
export const revokedStageOf = (versionId: string) => `${REVOKED_STAGE_PREFIX}${versionId}`;

/** The version ids the secret's labels revoke. */
export function revokedVersionIds(versions: ReadonlyArray<{ readonly VersionStages?: string[] }>): Set<string> {
  return new Set(
    versions.flatMap((v) =>
      (v.VersionStages ?? [])
        .filter((s) => s.startsWith(REVOKED_STAGE_PREFIX))
        .map((s) => s.slice(REVOKED_STAGE_PREFIX.length)),
    ),
  );
}

/**
 * How long a ring keeps the version list it read (bridges and consumers alike): `ops keys revoke`
 * returns once every ring has read the secret again since the revocation.
 */
export const SIGNING_KEYS_TTL_MS = 60_000;

/** Key ids a ring remembers as absent, so a forger cycling through ids costs one bounded reload each, never memory. */
const ABSENT_KEY_IDS = 1024;

/** One version of the signing key secret. */
export interface KeyVersion {
  readonly versionId: string;
  readonly key: Uint8Array;
  /** When the version was put: it signs once every reader has had time to load it. */
  readonly createdAt: number;
}

/** The secret's versions as a verifier sees them. */
interface Keys {
  /** The versions up to the current one (none put after it), oldest first, revoked ones marked. */
  readonly versions: ReadonlyArray<KeyVersion & { readonly revoked: boolean }>;
  readonly current: KeyVersion;
}

/**
 * How long a retired key verifies when the reader is not told: the copy lifetime of a concurrent
 * group on RocketMQ's own schedule (packages/runtime/src/config/delivery-lifetimes.ts). Consumers pass their group's.
 */
const DEFAULT_RETENTION_MS = DeliveryLifetimes.derive(new RetrySchedule()).signingKeyRetentionSeconds * 1000;

/**
 * The envelope signing key in Secrets Manager, every version of it. Publish before use: a signer
 * keeps signing with the version the current one replaced until the current one is
 * `activationDelayMs` old (default 2 minutes, one more than every reader's TTL), so no consumer
 * meets a signature made with a key it has not loaded. A verifier accepts the current version and
 * every earlier one retired less than `retentionMs` ago (a version retires when its successor
 * starts signing): a copy signed with it can come back that long (a dead letter redriven after
 * several rotations, an archive replay), and the group's redrive horizon refuses what is older
 * anyway. A version labelled `revoked-…` is neither accepted nor signed with, from the next read.
 *
 * The version list is read at start and once per `ttlMs` (one ListSecretVersionIds); each
 * version's value is read once (GetSecretValue by version id: a version never changes). A reload
 * asked for within `minReloadMs` of the last read is skipped, so a stream of forged envelopes
 * cannot turn into a stream of calls. An envelope that names a key the ring does not hold is
 * different: the bridge signs with a revocation's replacement at once, so the ring reads the list
 * again whatever `minReloadMs` says, after waiting out `minUnknownKeyReloadMs` since the last read
 * (one call a second at most), unless a read that started after the envelope arrived already
 * answered. An id still absent after that is forged (a key is put before anything is signed with
 * it) and is refused from then on without another read.
 */
export class SecretSigningKeys implements SigningKeyRing {
  private readonly keys: ExpiringRead<Keys>;
  private readonly values = new Map<string, Promise<KeyVersion | undefined>>();
  private readonly minReloadMs: number;
  private readonly minUnknownKeyReloadMs: number;
  private readonly activationDelayMs: number;
  private readonly retentionMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly absentKeyIds = new Set<string>();
  /** Reloads for unknown keys, one after another: each waits for the one before, then may find it enough. */
  private unknownKeyReloads: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: SecretsManagerClient,
    private readonly secretId: string,
    options: {
      ttlMs?: number;
      minReloadMs?: number;
      /** Between reloads for envelopes that name a key the ring lacks (default 1 s). */
      minUnknownKeyReloadMs?: number;
      activationDelayMs?: number;
      /** How long a retired version still verifies (default: RocketMQ's schedule's copy lifetime). */
      retentionMs?: number;
      now?: () => number;
      sleep?: (ms: number) => Promise<void>;
      /** Start reading at once (default true): in Lambda's init phase or the bridge's start. */
      prefetch?: boolean;
    } = {},
  ) {
    const ttlMs = options.ttlMs ?? SIGNING_KEYS_TTL_MS;
    this.minReloadMs = options.minReloadMs ?? 30_000;
    this.minUnknownKeyReloadMs = options.minUnknownKeyReloadMs ?? 1_000;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.activationDelayMs = options.activationDelayMs ?? ttlMs + 60_000;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.now = options.now ?? Date.now;
    this.keys = new ExpiringRead(() => this.load(), ttlMs, this.now);
    if (options.prefetch ?? true) void this.keys.get().catch(() => undefined);
  }

  async current(): Promise<Uint8Array> {
    const { versions, current } = await this.keys.get();
    const previous = versions.at(-2);
    const published = this.now() - current.createdAt >= this.activationDelayMs;
    // A revoked predecessor is not signed with even while the current version is new.
    return published || !previous || previous.revoked ? current.key : previous.key;
  }

  async accepted(): Promise<readonly Uint8Array[]> {
    const { versions } = await this.keys.get();
    const now = this.now();
    // Newest first: the current version, then each earlier one while it retired (its successor
    // started signing) less than the retention ago. A revoked version still dates its predecessor's retirement.
    const accepted = [versions.at(-1)!.key];
    for (let i = versions.length - 2; i >= 0; i--) {
      const retiredAt = versions[i + 1]!.createdAt + this.activationDelayMs;
      if (now - retiredAt > this.retentionMs) break;
      if (!versions[i]!.revoked) accepted.push(versions[i]!.key);
    }
    return accepted;
  }

  async reload(cause: ReloadCause = {}): Promise<boolean> {
    const unknown = (cause.unknownKeyIds ?? []).filter((id) => !this.absentKeyIds.has(id));
    if (unknown.length > 0) {
      const seenAt = this.now();
      const reload = this.unknownKeyReloads.then(() => this.reloadForKeys(unknown, seenAt));
      this.unknownKeyReloads = reload.catch(() => undefined);
      return reload;
    }
    const readAt = this.keys.readAt;
    if (readAt !== undefined && this.now() - readAt < this.minReloadMs) return false;
    return this.reread();
  }

  /**
   * Reads the list again unless a read started after `seenAt` (when the envelopes naming `keyIds`
   * were in hand), waiting out `minUnknownKeyReloadMs` since the last read first. True when the
   * ring changed or now holds one of the keys; the ids it still lacks are remembered as forged.
   */
  private async reloadForKeys(keyIds: readonly string[], seenAt: number): Promise<boolean> {
    const readAt = this.keys.readAt;
    let changed = false;
    if (readAt === undefined || readAt <= seenAt) {
      const wait = readAt === undefined ? 0 : readAt + this.minUnknownKeyReloadMs - this.now();
      if (wait > 0) await this.sleep(wait);
      changed = await this.reread();
    }
    const held = new Set((await this.accepted()).map(signingKeyId));
    for (const id of keyIds.filter((k) => !held.has(k))) {
      if (this.absentKeyIds.size >= ABSENT_KEY_IDS) this.absentKeyIds.delete(this.absentKeyIds.values().next().value!);
      this.absentKeyIds.add(id);
    }
    return changed || keyIds.some((id) => held.has(id));
  }

  private async reread(): Promise<boolean> {
    const { before, after } = await this.keys.reread();
    return before === undefined || !sameVersions(before, after);
  }

  private async load(): Promise<Keys> {
    const listed = await this.listVersions();
    const revoked = revokedVersionIds(listed);
    const currentId = listed.find((v) => v.VersionStages?.includes('AWSCURRENT'))?.VersionId;
    if (currentId === undefined)
      throw new InvalidSigningKeyError(`the envelope signing key secret ${this.secretId} has no current value`);
    if (revoked.has(currentId))
      throw new InvalidSigningKeyError(
        `the current envelope signing key of ${this.secretId} is revoked: put a new value (ops keys revoke does)`,
      );
    const read = await Promise.all(this.stillNeeded(listed, currentId).map((v) => this.version(v)));
    const byAge = read
      .filter((v): v is KeyVersion => v !== undefined)
      .map((v) => ({ ...v, revoked: revoked.has(v.versionId) }))
      .sort((a, b) => a.createdAt - b.createdAt);
    const current = byAge.find((v) => v.versionId === currentId)!;
    return { versions: byAge.filter((v) => v.createdAt <= current.createdAt), current };
  }

  /**
   * The versions whose value may still matter, by the list's dates: the current one and each one
   * whose successor signed for less than the retention. A version is read once, so this only
   * spares a cold start reading years of rotations.
   */
  private stillNeeded(listed: readonly SecretVersionsListEntry[], currentId: string): SecretVersionsListEntry[] {
    const at = (v: SecretVersionsListEntry | undefined) => v?.CreatedDate?.getTime() ?? Number.POSITIVE_INFINITY;
    const byAge = [...listed].sort((a, b) => at(a) - at(b));
    return byAge.filter(
      (v, i) => v.VersionId === currentId || at(byAge[i + 1]) + this.activationDelayMs + this.retentionMs >= this.now(),
    );
  }

  /** Every version of the secret, deprecated ones included (a version without labels may still verify). */
  private async listVersions(): Promise<SecretVersionsListEntry[]> {
    const versions: SecretVersionsListEntry[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await this.client.send(
          new ListSecretVersionIdsCommand({ SecretId: this.secretId, IncludeDeprecated: true, NextToken: token }),
        );
        versions.push(...(page.Versions ?? []));
        token = page.NextToken || undefined;
      } while (token);
    } catch (error) {
      throw new InvalidSigningKeyError(
        `the envelope signing key secret ${this.secretId} could not be read: ${(error as Error).name}`,
        { cause: error },
      );
    }
    return versions;
  }

  /** One version's key, read once; a version without a value (a rotation not finished) is left out. */
  private version(listed: SecretVersionsListEntry): Promise<KeyVersion | undefined> {
    const versionId = listed.VersionId!;
    let value = this.values.get(versionId);
    if (!value) {
      value = this.readVersion(versionId);
      value.catch(() => this.values.delete(versionId));
      this.values.set(versionId, value);
    }
    return value;
  }

  private async readVersion(versionId: string): Promise<KeyVersion | undefined> {
    try {
      const version = await this.client.send(
        new GetSecretValueCommand({ SecretId: this.secretId, VersionId: versionId }),
      );
      if (version.SecretString === undefined) return undefined;
      const key = assertSigningKey(
        Buffer.from(version.SecretString, 'utf8'),
        `${this.secretId} (version ${versionId})`,
      );
      return { versionId, key, createdAt: version.CreatedDate?.getTime() ?? 0 };
    } catch (error) {
      if (error instanceof InvalidSigningKeyError) throw error;
      throw new InvalidSigningKeyError(
        `the envelope signing key secret ${this.secretId} (version ${versionId}) could not be read: ${(error as Error).name}`,
        { cause: error },
      );
    }
  }
}

function sameVersions(a: Keys, b: Keys): boolean {
  const ids = (k: Keys) => k.versions.map((v) => `${v.versionId}${v.revoked ? '!' : ''}`).join(',');
  return ids(a) === ids(b) && a.current.versionId === b.current.versionId;
}
