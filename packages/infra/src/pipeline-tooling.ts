import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Stack } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import type { IConstruct } from 'constructs';
import { REPOSITORY_ROOT } from './project-function.ts';

/** A command-line tool the pipeline installs outside the synth step's `npm ci`. */
export type PipelineTool = 'aws-cdk' | 'cdk-assets';

export interface LockedPackage {
  readonly name: PipelineTool;
  readonly version: string;
  /** `sha512-<base64>`, as `package-lock.json` records it. */
  readonly integrity: string;
}

/** A tool as the lockfile resolved it: the version and the integrity of its tarball. */
export function lockedPackage(name: PipelineTool, root = REPOSITORY_ROOT): LockedPackage {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const entry = lock.packages?.[`node_modules/${name}`];
  if (typeof entry?.version !== 'string') throw new Error(`package-lock.json resolves no ${name}: run npm install`);
  if (!/^sha512-[A-Za-z0-9+/]{86}==$/.test(entry.integrity ?? ''))
    throw new Error(`package-lock.json has no sha512 integrity for ${name}: run npm install`);
  // Installed from its own tarball with --offline: a dependency would have to come unchecked from the registry.
  if (Object.keys({ ...entry.dependencies, ...entry.optionalDependencies }).length > 0)
    throw new Error(`${name} ${entry.version} has dependencies; the pipeline installs only dependency-free tools`);
  return { name, version: entry.version, integrity: entry.integrity };
}

export function lockedVersion(name: PipelineTool, root = REPOSITORY_ROOT): string {
  return lockedPackage(name, root).version;
}

/**
 * Install a tool from the tarball whose sha512 the lockfile holds: `npm install -g tool@version`
 * trusts whatever the registry serves for that version. The tarball is fetched, checked, and
 * installed offline with install scripts off, so nothing else is fetched or run.
 */
export function integrityCheckedInstall({ name, version, integrity }: LockedPackage): string[] {
  const tarball = `/tmp/${name}-${version}.tgz`;
  const sha512 = Buffer.from(integrity.slice('sha512-'.length), 'base64').toString('hex');
  return [
    `npm pack --ignore-scripts --silent --pack-destination /tmp ${name}@${version}`,
    `echo "${sha512}  ${tarball}" | sha512sum --check --strict`,
    `npm install --global --ignore-scripts --offline --no-audit --no-fund ${tarball}`,
  ];
}

const GENERATED_INSTALL = /^npm install -g (aws-cdk|cdk-assets)@(\S+)$/;

/**
 * CDK Pipelines writes `npm install -g aws-cdk@<cliVersion>` into self-mutation and `npm install -g
 * cdk-assets@<cdkAssetsCliVersion>` into every asset step, and offers no way to check what comes
 * back. Call after `buildPipeline()`: each such command of the pipeline's projects becomes
 * {@link integrityCheckedInstall} of the locked package, and a version other than the locked one
 * fails the synth.
 */
export function pinGeneratedToolInstalls(pipeline: IConstruct, root = REPOSITORY_ROOT): void {
  let replaced = 0;
  for (const project of pipeline.node.findAll()) {
    if (!(project instanceof codebuild.Project)) continue;
    const cfn = project.node.defaultChild as codebuild.CfnProject;
    const buildSpec = Stack.of(project).resolve((cfn.source as codebuild.CfnProject.SourceProperty).buildSpec);
    if (typeof buildSpec !== 'string' || !/npm install -g (aws-cdk|cdk-assets)@/.test(buildSpec)) continue;
    const spec = JSON.parse(buildSpec);
    spec.phases.install.commands = (spec.phases.install.commands as string[]).flatMap((command) => {
      const generated = GENERATED_INSTALL.exec(command);
      if (!generated) return [command];
      const locked = lockedPackage(generated[1] as PipelineTool, root);
      if (generated[2] !== locked.version)
        throw new Error(
          `${project.node.path} installs ${generated[1]}@${generated[2]}, the lockfile ${locked.version}`,
        );
      replaced++;
      return integrityCheckedInstall(locked);
    });
    cfn.addPropertyOverride('Source.BuildSpec', JSON.stringify(spec, null, 2));
  }
  if (replaced === 0)
    throw new Error(
      `${pipeline.node.path}: no npm install -g of aws-cdk or cdk-assets found; CDK Pipelines changed how it installs them`,
    );
}
