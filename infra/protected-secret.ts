import { type DefaultStackSynthesizer, Duration, Lazy, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

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
const KEY_MANAGEMENT = [
  'kms:PutKeyPolicy',
  'kms:ScheduleKeyDeletion',
  'kms:DisableKey',
  'kms:DisableKeyRotation',
  'kms:CreateGrant',
];

/**
 * A secret only its readers can read, under a customer-managed key with the same scope. In one
 * account an identity policy with broad Secrets Manager or KMS read (PowerUser, many CI roles)
 * reaches any secret whose own policies do not say otherwise, so every restriction is an explicit
 * Deny for every principal but those named, by `aws:PrincipalArn` (`ArnNotLike`: an SSO role's
 * generated suffix may be a `*`):
 *
 * - reading the value (`GetSecretValue`, and `kms:Decrypt` on the key): its readers;
 * - putting a value or moving a label (rotation, revocation): its keepers, the operators;
 * - changing the secret, its policy or the key's (`UpdateSecret`, `PutResourcePolicy`,
 *   `kms:PutKeyPolicy`, deletion, grants): the account's CloudFormation execution role alone,
 *   the role every deployment of the stack runs as, so the pipeline can still create, update and
 *   fix both; and the account's root user, so a mistaken policy can always be repaired by hand.
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

  private restrict(secretName: string): void {
    const stack = Stack.of(this);
    const cloudFormation = cloudFormationExecutionRoleArn(stack);
    const root = `arn:${stack.partition}:iam::${stack.account}:root`;
    // Everyone but `roles()` and `exempt`: the CloudFormation execution role, which manages the
    // secret and the key on every deployment, and the root user, who can repair a mistaken policy by hand.
    const other = (roles: () => readonly string[], exempt: readonly string[] = [cloudFormation, root]) => ({
      ArnNotLike: {
        'aws:PrincipalArn': Lazy.list({ produce: () => [...new Set([...roles(), ...exempt])] }),
      },
    });
    const deny = (sid: string, actions: string[], conditions: Record<string, unknown>) =>
      new iam.PolicyStatement({
        sid,
        effect: iam.Effect.DENY,
        principals: [new iam.StarPrincipal()],
        actions,
        resources: ['*'],
        conditions,
      });
    const readers = () => this.readers;
    const keepers = () => this.keepers;
    new secretsmanager.ResourcePolicy(this, 'Policy', { secret: this.secret }).document.addStatements(
      // Reading is no part of managing: no deployment reads the value.
      deny('OnlyItsReadersReadIt', ['secretsmanager:GetSecretValue'], other(readers, [root])),
      deny('OnlyItsKeepersChangeItsValue', SECRET_VALUE_CHANGES, other(keepers)),
      deny(
        'OnlyTheDeploymentManagesIt',
        SECRET_MANAGEMENT,
        other(() => []),
      ),
    );
    const viaSecretsManager = `secretsmanager.${stack.region}.amazonaws.com`;
    for (const statement of [
      // CloudFormation decrypts when it re-encrypts the secret under another key (UpdateSecret).
      deny('OnlyTheSecretsReadersDecrypt', ['kms:Decrypt'], other(readers)),
      deny('OnlyItsKeepersEncrypt', KEY_ENCRYPTION, other(keepers)),
      deny('OnlyThroughSecretsManager', ['kms:Decrypt', ...KEY_ENCRYPTION], {
        StringNotEquals: { 'kms:ViaService': viaSecretsManager },
      }),
      deny(
        'OnlyTheDeploymentManagesTheKey',
        KEY_MANAGEMENT,
        other(() => []),
      ),
    ])
      this.key.addToResourcePolicy(statement);
    new kms.Alias(this, 'Alias', { aliasName: `alias/${secretName.replace(/[^\w/-]/g, '-')}`, targetKey: this.key });
  }
}

/**
 * The role CloudFormation runs the stack's deployments as (the CDK bootstrap's execution role of
 * the stage's account), with the partition as the template resolves it.
 */
export function cloudFormationExecutionRoleArn(stack: Stack): string {
  const arn = (stack.synthesizer as Partial<DefaultStackSynthesizer>).cloudFormationExecutionRoleArn;
  if (!arn) throw new Error(`${stack.stackName}: its synthesizer names no CloudFormation execution role to exempt`);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the synthesizer's CloudFormation placeholder, literally.
  return arn.replace('${AWS::Partition}', stack.partition);
}
