import { Lazy, Stack } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as pipelines from 'aws-cdk-lib/pipelines';
import { type PipelineRole, pipelineProjectName, pipelineRoleName } from './pipeline-identities.ts';

const BUILD_ACTIONS = ['codebuild:BatchGetBuilds', 'codebuild:StartBuild', 'codebuild:StopBuild'];
const ROLES: Record<string, PipelineRole> = { FileRole: 'file-assets', DockerRole: 'image-assets' };

interface Statement {
  Action?: string | string[];
  Resource?: unknown;
}

/**
 * The asset steps CDK Pipelines generates under `Assets`: one role per asset type, shared by that
 * type's projects, and one project per asset. Call after `buildPipeline()`.
 *
 * - Each role gets its fixed name, which the stage accounts' publishing roles trust.
 * - Each project gets a name under the pipeline's, which the pipeline account's SCP names.
 * - The role's `codebuild:StartBuild`/`StopBuild`/`BatchGetBuilds` on `*` (CDK Pipelines grants it
 *   and offers no option against it) is narrowed to the projects that run with that role: an asset
 *   build, given a buildspec override, could otherwise start any project of the account, the
 *   deploy-capable ones included. The pipeline starts the asset builds with its own role, so the
 *   asset role needs no more.
 */
export function nameAndScopeAssetSteps(pipeline: pipelines.CodePipeline): void {
  const assets = pipeline.node.tryFindChild('Assets');
  if (!assets) return;
  const region = Stack.of(pipeline).region;
  const projects = assets.node.children.filter((c): c is codebuild.PipelineProject => c instanceof codebuild.Project);
  for (const project of projects)
    (project.node.defaultChild as codebuild.CfnProject).name = pipelineProjectName(
      `assets-${project.node.id}`.toLowerCase(),
    );
  for (const role of assets.node.children.filter((c): c is iam.Role => c instanceof iam.Role)) {
    const kind = ROLES[role.node.id];
    if (!kind) throw new Error(`${role.node.path}: an asset role CDK Pipelines did not make before; name it here`);
    (role.node.defaultChild as iam.CfnRole).roleName = pipelineRoleName(kind, region);
    const own = projects.filter((p) => p.role === role).map((p) => p.projectArn);
    scopeBuildActions(role, own);
  }
}

function scopeBuildActions(role: iam.Role, projectArns: string[]): void {
  const policy = role.node.findChild('DefaultPolicy') as iam.Policy;
  const cfn = policy.node.defaultChild as iam.CfnPolicy;
  cfn.addPropertyOverride(
    'PolicyDocument',
    Lazy.any({
      produce: () => {
        const document = Stack.of(role).resolve(policy.document) as { Statement: Statement[] };
        const unscoped = document.Statement.filter(
          (s) => JSON.stringify(s.Action) === JSON.stringify(BUILD_ACTIONS) && s.Resource === '*',
        );
        if (unscoped.length !== 1)
          throw new Error(
            `${role.node.path}: expected CDK Pipelines' one codebuild statement on *, found ${unscoped.length}`,
          );
        return {
          ...document,
          Statement: document.Statement.map((s) =>
            s === unscoped[0] ? { ...s, Resource: projectArns.map((arn) => Stack.of(role).resolve(arn)) } : s,
          ),
        };
      },
    }),
  );
}
