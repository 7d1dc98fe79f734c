import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import {
  accountRootArn,
  denyStatement,
  deploymentPrincipals,
  principalOtherThan,
  restrictKeyManagement,
} from './deployment-guards.ts';

export interface ProtectedSecretProps {
  readonly secretName: string;
  readonly description: string;
  /**
   * How the stack creates the secret (its value is generated; an operator puts the real one where
   * it comes from outside). Absent: a secret of that name that already exists, which the stack
   * does not own: it gets the resource policy, but keeps the KMS key it was created with.
   */
  readonly generate?: secretsmanager.SecretStringGenerator;
}

/** What each statement's Deny leaves out, by `aws:PrincipalArn`. */
const SECRET_VALUE_CHANGES = [
  'secretsmanager:PutSecretValue',
  'secretsmanager:UpdateSecretVersionStage',
  'secretsmanager:RotateSecret',
  'secretsmanager:CancelRotateSecret',
];
const SECRET_MANAGEMENT = [
  'secretsmanager:UpdateSecret',
  'secretsmanager:PutResourcePolicy',
  'secretsmanager:DeleteResourcePolicy',
  'secretsmanager:DeleteSecret',
  'secretsmanager:RestoreSecret',
  'secretsmanager:TagResource',
  'secretsmanager:UntagResource',
  'secretsmanager:ReplicateSecretToRegions',
  'secretsmanager:RemoveRegionsFromReplication',
  'secretsmanager:StopReplicationToReplica',
];
const KEY_ENCRYPTION = ['kms:Encrypt', 'kms:GenerateDataKey*', 'kms:ReEncrypt*'];

/**
 * A secret only its readers can read, under a customer-managed key with the same scope. In one
 * account an identity policy with broad Secrets Manager or KMS read (PowerUser, many CI roles)
 * reaches any secret whose own policies do not say otherwise, so every restriction is an explicit
 * Deny for every principal but those named (packages/infra/src/deployment-guards.ts):
 *
 * - reading the value (`GetSecretValue`, and `kms:Decrypt` on the key): its readers;
 * - putting a value or moving a label (rotation, revocation): its keepers, the operators; its
 *   revokers (break-glass) may only put a value and add a `revoked-` label;
 * - changing the secret, its policy or the key (`UpdateSecret`, `PutResourcePolicy`, every key
 *   management action, deletion, grants): the deployment principals alone (the CloudFormation
 *   execution role and the account's root user).
 *
 * The key is used only through Secrets Manager (`kms:ViaService`), rotates yearly and is retained
 * with the secret.
 */
export class ProtectedSecret extends Construct {
  readonly secret: secretsmanager.ISecret;
  readonly key: kms.Key;
  /** The stack created the secret, so the key encrypts it; an existing secret keeps its own until re-encrypted. */
  readonly owned: boolean;
  private readonly readers: string[] = [];
  private readonly keepers: string[] = [];
  private readonly policy: secretsmanager.ResourcePolicy;

  constructor(scope: Construct, id: string, props: ProtectedSecretProps) {
    super(scope, id);
    this.key = new kms.Key(this, 'Key', {
      description: `Encrypts the secret ${props.secretName}; only its readers may decrypt`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
      pendingWindow: Duration.days(30),
    });
    this.owned = props.generate !== undefined;
    this.secret = props.generate
      ? new secretsmanager.Secret(this, 'Secret', {
          secretName: props.secretName,
          description: props.description,
          encryptionKey: this.key,
          generateSecretString: props.generate,
          removalPolicy: RemovalPolicy.RETAIN,
        })
      : secretsmanager.Secret.fromSecretNameV2(this, 'Secret', props.secretName);
    this.policy = new secretsmanager.ResourcePolicy(this, 'Policy', { secret: this.secret });
    this.restrict(props.secretName);
  }

  /** `role` reads the value (and, with `versions`, lists the versions: the signing key ring does). */
  grantRead(role: iam.IRole, options: { versions?: boolean } = {}): void {
    this.secret.grantRead(role);
    if (options.versions)
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['secretsmanager:ListSecretVersionIds'],
          resources: [this.secret.secretArn],
        }),
      );
    // An existing secret's grant does not know the key it may be re-encrypted with.
    if (!this.owned) this.key.grantDecrypt(role);
    this.readers.push(role.roleArn);
  }

  /** Roles outside the stack that read the value (ARN patterns); their own identity policies grant it. */
  allowReaders(roleArns: readonly string[]): void {
    this.readers.push(...roleArns);
  }

  /** Roles that put new values and move labels (rotation, revocation): the operators. */
  allowKeepers(roleArns: readonly string[]): void {
    this.keepers.push(...roleArns);
  }

  /**
   * Roles that may revoke and do nothing else (break-glass): add a `<revokedStagePrefix>…` label
   * and put the new value that replaces a revoked current version, never read the value, move
   * another label or rotate.
   */
  allowRevokers(roleArns: readonly string[], revokedStagePrefix: string): void {
    if (roleArns.length === 0) return;
    this.keepers.push(...roleArns);
    const revoker = { ArnLike: { 'aws:PrincipalArn': [...roleArns] } };
    this.policy.document.addStatements(
      denyStatement('ItsRevokersOnlyAddRevokedLabels', ['secretsmanager:UpdateSecretVersionStage'], {
        ...revoker,
        StringNotLike: { 'secretsmanager:VersionStage': `${revokedStagePrefix}*` },
      }),
      denyStatement(
        'ItsRevokersDoNotRotate',
        ['secretsmanager:RotateSecret', 'secretsmanager:CancelRotateSecret'],
        revoker,
      ),
    );
  }

  private restrict(secretName: string): void {
    const stack = Stack.of(this);
    const deployment = deploymentPrincipals(stack);
    const readers = () => [...this.readers, ...deployment];
    const keepers = () => [...this.keepers, ...deployment];
    this.policy.document.addStatements(
      // Reading is no part of managing: no deployment reads the value.
      denyStatement(
        'OnlyItsReadersReadIt',
        ['secretsmanager:GetSecretValue'],
        principalOtherThan(() => [...this.readers, accountRootArn(stack)]),
      ),
      denyStatement('OnlyItsKeepersChangeItsValue', SECRET_VALUE_CHANGES, principalOtherThan(keepers)),
      denyStatement(
        'OnlyTheDeploymentManagesIt',
        SECRET_MANAGEMENT,
        principalOtherThan(() => deployment),
      ),
    );
    const viaSecretsManager = `secretsmanager.${stack.region}.amazonaws.com`;
    for (const statement of [
      // CloudFormation decrypts when it re-encrypts the secret under another key (UpdateSecret).
      denyStatement('OnlyTheSecretsReadersDecrypt', ['kms:Decrypt'], principalOtherThan(readers)),
      denyStatement('OnlyItsKeepersEncrypt', KEY_ENCRYPTION, principalOtherThan(keepers)),
      denyStatement('OnlyThroughSecretsManager', ['kms:Decrypt', ...KEY_ENCRYPTION], {
        StringNotEquals: { 'kms:ViaService': viaSecretsManager },
      }),
    ])
      this.key.addToResourcePolicy(statement);
    restrictKeyManagement(this.key);
    new kms.Alias(this, 'Alias', { aliasName: `alias/${secretName.replace(/[^\w/-]/g, '-')}`, targetKey: this.key });
  }
}
