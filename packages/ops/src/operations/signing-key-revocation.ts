import {
  GetSecretValueCommand,
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
  type SecretVersionsListEntry,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { revokedStageOf, revokedVersionIds, SIGNING_KEYS_TTL_MS } from '@rocketmq-lambda/runtime/aws/index.ts';
import { UnauthenticatedMessageError } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { resignBody, signingKeyIndex } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { DeadLetter } from './dead-letter-inspection.ts';
import { OperationsError } from './errors.ts';
import { letterSha256, type ResignPlan } from './resign-plan.ts';

/** A version of the signing key secret as `ops keys` lists it (never its value). */
export interface SigningKeyVersionInfo {
  readonly versionId: string;
  readonly createdAt: Date | undefined;
  readonly stages: readonly string[];
  readonly revoked: boolean;
}

export class SigningKeyRevocationError extends OperationsError {
  override readonly name = 'SigningKeyRevocationError';
}

/** Every version of the secret, newest first, with its labels. */
export async function signingKeyVersions(
  secrets: SecretsManagerClient,
  secretId: string,
): Promise<SigningKeyVersionInfo[]> {
  const listed: SecretVersionsListEntry[] = [];
  let token: string | undefined;
  do {
    const page = await secrets.send(
      new ListSecretVersionIdsCommand({ SecretId: secretId, IncludeDeprecated: true, NextToken: token }),
    );
    listed.push(...(page.Versions ?? []));
    token = page.NextToken || undefined;
  } while (token);
  const revoked = revokedVersionIds(listed);
  return listed
    .map((v) => ({
      versionId: v.VersionId!,
      createdAt: v.CreatedDate,
      stages: v.VersionStages ?? [],
      revoked: revoked.has(v.VersionId!),
    }))
    .sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0));
}

export interface RevocationResult {
  readonly revoked: string;
  /** The version put first because the revoked one was the current key (the bridge signs with it at once). */
  readonly replacedBy?: string;
}

/**
 * Takes a compromised key out of every ring at once, without waiting out its retention: the
 * version gets the label `revoked-<versionId>`, which verifiers and signers read on their next
 * refresh and then never accept or sign with again. A current version is replaced by `newKey` in
 * the same call that revokes it (the replacement is put holding the label, then the label moves to
 * the version it names), so a ring that reads the secret in between never signs with the revoked
 * key; the bridge signs with the replacement at once, and a consumer that has not read it yet
 * reads it on the first envelope that names it. Returns once every ring has refreshed
 * (`ringTtlMs` after the label): from then on nothing signs with or accepts the revoked key.
 * Genuine letters signed with it are refused (`UNAUTHENTICATED_MESSAGE`); `ops dlq resign`
 * re-signs the ones a reviewed plan proves.
 */
export async function revokeSigningKey(options: {
  secrets: SecretsManagerClient;
  secretId: string;
  versionId: string;
  /** The replacement, used only when the revoked version is the current one. */
  newKey: () => string;
  /** How long a ring keeps what it read (default: the rings' own). */
  ringTtlMs?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Told when the revocation is written and the wait for the rings begins. */
  onWaiting?: (ms: number) => void;
}): Promise<RevocationResult> {
  const { secrets, secretId, versionId } = options;
  const versions = await signingKeyVersions(secrets, secretId);
  const version = versions.find((v) => v.versionId === versionId);
  if (!version) throw new SigningKeyRevocationError(`the signing key secret ${secretId} has no version ${versionId}`);
  const label = revokedStageOf(versionId);
  let holder = versions.find((v) => v.stages.includes(label))?.versionId;
  let replacedBy: string | undefined;
  if (!version.revoked && version.stages.includes('AWSCURRENT')) {
    const put = await secrets.send(
      new PutSecretValueCommand({
        SecretId: secretId,
        SecretString: options.newKey(),
        VersionStages: ['AWSCURRENT', label],
      }),
    );
    replacedBy = put.VersionId;
    holder = replacedBy;
  }
  if (holder !== versionId) {
    await secrets.send(
      new UpdateSecretVersionStageCommand({
        SecretId: secretId,
        VersionStage: label,
        MoveToVersionId: versionId,
        ...(holder ? { RemoveFromVersionId: holder } : {}),
      }),
    );
  }
  // A ring that read the list just before the label keeps it for one TTL; a read in flight then adds its own latency.
  const wait = (options.ringTtlMs ?? SIGNING_KEYS_TTL_MS) + RING_READ_ALLOWANCE_MS;
  options.onWaiting?.(wait);
  await (options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))))(wait);
  return { revoked: versionId, ...(replacedBy ? { replacedBy } : {}) };
}

/** How long a ring's ListSecretVersionIds may take, beyond its TTL. */
const RING_READ_ALLOWANCE_MS = 5_000;

/** A version with its value: what `ops dlq resign` verifies letters against (an operator's role reads the secret). */
export interface SigningKeyMaterial extends SigningKeyVersionInfo {
  readonly key: Uint8Array;
  readonly current: boolean;
}

/** Every version of the secret with its value, newest first. */
export async function readSigningKeyVersions(
  secrets: SecretsManagerClient,
  secretId: string,
): Promise<SigningKeyMaterial[]> {
  const versions = await signingKeyVersions(secrets, secretId);
  return Promise.all(
    versions.map(async (v) => {
      const value = await secrets.send(new GetSecretValueCommand({ SecretId: secretId, VersionId: v.versionId }));
      return { ...v, key: Buffer.from(value.SecretString ?? '', 'utf8'), current: v.stages.includes('AWSCURRENT') };
    }),
  );
}

const UNAUTHENTICATED_CODE = new UnauthenticatedMessageError('').code;

/** Who re-signs letters, when, why, and on which reviewed plan: recorded in each re-signed envelope. */
export interface ResignDecision {
  /** The caller's identity as AWS gives it (STS GetCallerIdentity's ARN), never a name typed in. */
  readonly by: string;
  readonly note: string;
  readonly at: Date;
  readonly plan: ResignPlan;
}

/**
 * Whether a letter is one `ops dlq resign` may sign again: refused as UNAUTHENTICATED_MESSAGE and
 * signed with a revoked key (the version it verifies with), or why not. A letter signed with no key
 * this deployment ever had is forged or changed; one that verifies with a key still in force needs
 * no re-signing (`dlq redrive`).
 */
export function resignCandidate(
  versions: readonly SigningKeyMaterial[],
  letter: DeadLetter,
): { version: SigningKeyMaterial } | { refusal: string } {
  if (letter.failure?.code !== UNAUTHENTICATED_CODE)
    return { refusal: 'it was not refused as UNAUTHENTICATED_MESSAGE: dlq redrive sends it as it is' };
  const index = signingKeyIndex(
    letter.body,
    versions.map((v) => v.key),
  );
  if (index === undefined) {
    return {
      refusal:
        'its signature verifies with no key this deployment ever had: forged, or changed after signing. It stays; find its sender in CloudTrail',
    };
  }
  const version = versions[index]!;
  if (!version.revoked)
    return { refusal: `it verifies with key version ${version.versionId}, which is not revoked: dlq redrive sends it` };
  return { version };
}

/**
 * What `ops dlq resign --apply` does to one letter: a candidate (`resignCandidate`) that the
 * reviewed plan holds, with the same body, is signed again with the current key, the decision added
 * to the envelope as signed extension attributes (`resignedby`: the caller's ARN, `resignedat`,
 * `resignednote`, `resignedfrom`: the revoked version, `resignedproof`: the plan's proof,
 * `resignedplan`: its digest), so the consumer acts on it and every later reader sees who let it
 * through and on what evidence. Anything else stays in the DLQ with the reason.
 */
export function resignRewrite(
  versions: readonly SigningKeyMaterial[],
  decision: ResignDecision,
): (letter: DeadLetter) => { body: string } | { refusal: string } {
  const signer = versions.find((v) => v.current && !v.revoked);
  if (!signer) throw new SigningKeyRevocationError('the signing key secret has no current key that is not revoked');
  const planned = new Map(decision.plan.letters.map((l) => [l.letterSha256, l]));
  return (letter) => {
    const candidate = resignCandidate(versions, letter);
    if ('refusal' in candidate) return candidate;
    const entry = planned.get(letterSha256(letter));
    if (!entry || entry.msgId !== letter.envelope?.msgId)
      return {
        refusal: `it is not in the reviewed plan ${decision.plan.digest} (or its body changed since the review): run dlq resign --plan again`,
      };
    const body = resignBody(letter.body, signer.key, {
      resignedby: decision.by,
      resignedat: decision.at.toISOString(),
      resignednote: decision.note,
      resignedfrom: candidate.version.versionId,
      resignedproof: entry.proof.kind,
      resignedplan: decision.plan.digest,
    });
    return { body };
  };
}
