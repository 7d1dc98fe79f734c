import {
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { REVOKED_STAGE_PREFIX, revokedStageOf } from '../aws/signing-key-secret.ts';
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
