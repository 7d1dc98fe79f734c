import { type DefaultStackSynthesizer, Lazy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';

/**
 * Inside one account an identity policy with broad rights (PowerUser, many CI roles) reaches every
 * resource whose own policy does not say otherwise, so "only these principals" is an explicit Deny
 * for every principal but those named, by `aws:PrincipalArn` (`ArnNotLike`: an SSO role's generated
 * suffix may be a `*`). The principal of each statement is the literal `*`, so it binds AWS
 * services too unless a statement says otherwise.
 */

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

/**
 * Who may change a resource's settings and policies: the CloudFormation execution role, which every
 * deployment runs as (so the pipeline can still create, update and fix them), and the account's
 * root user, so that a mistaken policy can always be repaired by hand.
 */
export function deploymentPrincipals(stack: Stack): string[] {
  return [cloudFormationExecutionRoleArn(stack), accountRootArn(stack)];
}

export function accountRootArn(stack: Stack): string {
  return `arn:${stack.partition}:iam::${stack.account}:root`;
}

/** A condition that matches every principal whose ARN is none of `arns`, read when the template is rendered. */
export function principalOtherThan(arns: () => readonly string[]): Record<string, Record<string, unknown>> {
  return { ArnNotLike: { 'aws:PrincipalArn': Lazy.list({ produce: () => [...new Set(arns())] }) } };
}

/** A Deny of `actions` for every principal (`*`) the conditions match. */
export function denyStatement(
  sid: string,
  actions: readonly string[],
  conditions: Record<string, Record<string, unknown>>,
  resources: readonly string[] = ['*'],
): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid,
    effect: iam.Effect.DENY,
    principals: [new iam.StarPrincipal()],
    actions: [...actions],
    resources: [...resources],
    conditions,
  });
}

/**
 * Every action that changes a KMS key rather than using it: its policy, its state, rotation,
 * deletion, description, tags (an ABAC identity policy may grant by tag), aliases (they point the
 * key's users elsewhere), grants, imported material and replicas. Key usage (Encrypt, Decrypt,
 * GenerateDataKey) is each key's own business.
 */
export const KEY_MANAGEMENT = [
  'kms:PutKeyPolicy',
  'kms:ScheduleKeyDeletion',
  'kms:CancelKeyDeletion',
  'kms:DisableKey',
  'kms:EnableKey',
  'kms:DisableKeyRotation',
  'kms:EnableKeyRotation',
  'kms:RotateKeyOnDemand',
  'kms:UpdateKeyDescription',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:CreateAlias',
  'kms:UpdateAlias',
  'kms:DeleteAlias',
  'kms:ImportKeyMaterial',
  'kms:DeleteImportedKeyMaterial',
  'kms:ReplicateKey',
  'kms:UpdatePrimaryRegion',
  'kms:SynchronizeMultiRegionKey',
] as const;

/** Grants give a principal the key's use without its policy saying so. */
export const KEY_GRANTS = ['kms:CreateGrant', 'kms:RevokeGrant'] as const;

/**
 * Only the deployment manages `key`. Grants too, except those an AWS service makes for its own use
 * of the key on a caller's behalf (`kms:GrantIsForAWSResource`): DynamoDB keeps a table readable
 * with such grants, and refusing them would make the table inaccessible. RetireGrant is not listed:
 * only a grant's own retiring or grantee principal can retire it.
 */
export function restrictKeyManagement(key: kms.Key): void {
  const deployment = deploymentPrincipals(Stack.of(key));
  key.addToResourcePolicy(
    denyStatement(
      'OnlyTheDeploymentManagesTheKey',
      KEY_MANAGEMENT,
      principalOtherThan(() => deployment),
    ),
  );
  key.addToResourcePolicy(
    denyStatement('OnlyTheDeploymentGrants', KEY_GRANTS, {
      ...principalOtherThan(() => deployment),
      BoolIfExists: { 'kms:GrantIsForAWSResource': 'false' },
    }),
  );
}
