/**
 * The names of the pipeline's principals and CodeBuild projects. They are fixed rather than
 * generated because what CDK cannot enforce is enforced outside it, by name: the stage accounts'
 * bootstrap roles trust only the pipeline's roles (`aws:PrincipalArn`), each stage's stack reader
 * trusts only the pipeline's stack reader, and the pipeline account's SCP lets only the pipeline
 * start or change its projects (docs/security.md, #37). IAM role names are per account, so each
 * role's name ends with the pipeline's region, as the pipeline's own name is per region.
 */
export const PIPELINE_NAME = 'rocketmq-consumers';

/**
 * `pipeline`: CodePipeline's role, which starts every build and deploys through the stage
 * accounts' CDK deploy roles; `file-assets`/`image-assets`: the asset steps' roles, which publish
 * through the stage accounts' publishing roles; `stack-reader`: the security diff's and the
 * termination-protection checks' role, which reads the stage stacks through each stage's reader.
 */
export type PipelineRole = 'pipeline' | 'file-assets' | 'image-assets' | 'stack-reader';

export function pipelineRoleName(role: PipelineRole, region: string): string {
  return `${PIPELINE_NAME}-${role}-${region}`;
}

/** Every CodeBuild project of the pipeline is named under the pipeline's name. */
export function pipelineProjectName(step: string): string {
  return `${PIPELINE_NAME}-${step}`;
}

/**
 * The role in a stage account that may read the stage's stack (its template and status) and
 * nothing else; deployed once, outside the pipeline, by `StageReaderStack`.
 */
export function stageReaderRoleName(prefix: string, region: string): string {
  return `${prefix}-stack-reader-${region}`;
}

export function iamRoleArn(partition: string, account: string, name: string): string {
  return `arn:${partition}:iam::${account}:role/${name}`;
}
