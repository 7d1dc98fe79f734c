import {
  GetSecretValueCommand,
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { REVOKED_STAGE_PREFIX, revokedStageOf } from '../aws/index.ts';
import { UnauthenticatedMessageError } from '../consumer/index.ts';
import { resignBody, signingKeyIndex } from '../rocketmq/index.ts';
import type { DeadLetter } from './dead-letter-inspection.ts';
import { OperationsError } from './errors.ts';

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
  const versions: SigningKeyVersionInfo[] = [];
  let token: string | undefined;
  do {
    const page = await secrets.send(
      new ListSecretVersionIdsCommand({ SecretId: secretId, IncludeDeprecated: true, NextToken: token }),
    );
    for (const v of page.Versions ?? []) {
      const stages = v.VersionStages ?? [];
      versions.push({
        versionId: v.VersionId!,
        createdAt: v.CreatedDate,
        stages,
        revoked: stages.some((s) => s.startsWith(REVOKED_STAGE_PREFIX)),
      });
    }
    token = page.NextToken || undefined;
  } while (token);
  return versions.sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0));
}

export interface RevocationResult {
  readonly revoked: string;
  /** The version put first because the revoked one was the current key (the bridge signs with it at once). */
  readonly replacedBy?: string;
}

/**
 * Takes a compromised key out of every ring at once, without waiting out its retention: the
 * version gets the label `revoked-<versionId>`, which verifiers and signers read on their next
 * refresh (a minute) and then never accept or sign with again. A current version is replaced
 * first by `newKey`, so the bridge keeps signing, with the new key and no publication delay (its
 * predecessor is revoked). Genuine letters signed with the revoked key are refused from then on
 * (`UNAUTHENTICATED_MESSAGE`); `ops dlq resign` re-signs the ones a person has reviewed.
 */
export async function revokeSigningKey(options: {
  secrets: SecretsManagerClient;
  secretId: string;
  versionId: string;
  /** The replacement, used only when the revoked version is the current one. */
  newKey: () => string;
}): Promise<RevocationResult> {
  const { secrets, secretId, versionId } = options;
  const version = (await signingKeyVersions(secrets, secretId)).find((v) => v.versionId === versionId);
  if (!version) throw new SigningKeyRevocationError(`the signing key secret ${secretId} has no version ${versionId}`);
  if (version.revoked) return { revoked: versionId };
  let replacedBy: string | undefined;
  if (version.stages.includes('AWSCURRENT')) {
    const put = await secrets.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: options.newKey() }));
    replacedBy = put.VersionId;
  }
  await secrets.send(
    new UpdateSecretVersionStageCommand({
      SecretId: secretId,
      VersionStage: revokedStageOf(versionId),
      MoveToVersionId: versionId,
    }),
  );
  return { revoked: versionId, ...(replacedBy ? { replacedBy } : {}) };
}

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

/** Who decided that letters signed with a revoked key are genuine, when, and why: recorded in each re-signed envelope. */
export interface ResignDecision {
  readonly reviewedBy: string;
  readonly note: string;
  readonly at: Date;
}

/**
 * What `ops dlq resign` does to one letter: a letter the consumer refused as
 * UNAUTHENTICATED_MESSAGE whose signature verifies with a revoked key is signed again with the
 * current key, the decision added to the envelope as signed extension attributes (`resignedby`,
 * `resignedat`, `resignednote`, `resignedfrom`: the revoked version), so the consumer acts on it
 * and every later reader sees who let it through. Anything else stays in the DLQ with the reason:
 * a letter signed with no key this deployment ever had is forged or changed, and one that verifies
 * with a key still in force needs no re-signing (`dlq redrive`).
 */
export function resignRewrite(
  versions: readonly SigningKeyMaterial[],
  decision: ResignDecision,
): (letter: DeadLetter) => { body: string } | { refusal: string } {
  const signer = versions.find((v) => v.current && !v.revoked);
  if (!signer) throw new SigningKeyRevocationError('the signing key secret has no current key that is not revoked');
  const keys = versions.map((v) => v.key);
  return (letter) => {
    if (letter.failure?.code !== UNAUTHENTICATED_CODE)
      return { refusal: 'it was not refused as UNAUTHENTICATED_MESSAGE: dlq redrive sends it as it is' };
    const index = signingKeyIndex(letter.body, keys);
    if (index === undefined) {
      return {
        refusal:
          'its signature verifies with no key this deployment ever had: forged, or changed after signing. It stays; find its sender in CloudTrail',
      };
    }
    const version = versions[index]!;
    if (!version.revoked)
      return {
        refusal: `it verifies with key version ${version.versionId}, which is not revoked: dlq redrive sends it`,
      };
    const body = resignBody(letter.body, signer.key, {
      resignedby: decision.reviewedBy,
      resignedat: decision.at.toISOString(),
      resignednote: decision.note,
      resignedfrom: version.versionId,
    });
    return { body };
  };
}
