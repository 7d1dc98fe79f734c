import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import type { ChaosPlugin } from './chaos-plugin.ts';

const REPOSITORY_ROOT = resolve(import.meta.dirname, '../../../..');

/** Where a group's plug-in lives, from the repository root: one module per group, named after it. */
export function chaosPluginPath(group: string): string {
  return `packages/tools/src/chaos/groups/${group}.ts`;
}

/** A selected group has no chaos plug-in: the run would leave it unjudged, so it refuses to start. */
export class MissingChaosPluginError extends Error {
  override readonly name = 'MissingChaosPluginError';
}

/**
 * The plug-in of each group, by convention: `chaosPlugin` exported by `chaosPluginPath(group)`.
 * `provided` plug-ins (a test's fixture group) are taken first.
 */
export async function loadChaosPlugins(
  definitions: readonly ConsumerGroupDefinition[],
  provided: readonly ChaosPlugin[] = [],
): Promise<Map<string, ChaosPlugin>> {
  const plugins = new Map<string, ChaosPlugin>();
  for (const { group } of definitions)
    plugins.set(group, provided.find((p) => p.group === group) ?? (await pluginByConvention(group)));
  return plugins;
}

async function pluginByConvention(group: string): Promise<ChaosPlugin> {
  const path = chaosPluginPath(group);
  const expected = `consumer group ${group} has no chaos plug-in: expected ${path} exporting \`chaosPlugin\` (see docs/adding-a-consumer-group.md)`;
  const file = resolve(REPOSITORY_ROOT, path);
  if (!existsSync(file)) throw new MissingChaosPluginError(expected);
  const { chaosPlugin } = (await import(pathToFileURL(file).href)) as { chaosPlugin?: ChaosPlugin };
  if (!chaosPlugin) throw new MissingChaosPluginError(expected);
  if (chaosPlugin.group !== group)
    throw new MissingChaosPluginError(`${expected}; it exports the plug-in of ${chaosPlugin.group}`);
  return chaosPlugin;
}
