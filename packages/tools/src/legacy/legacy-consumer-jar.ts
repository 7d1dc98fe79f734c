import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runToCompletion } from './server-process.ts';

/**
 * The legacy consumer replica (packages/tools/src/legacy/src, Java 17, rocketmq-client 4.7.1,
 * mariadb-java-client and Jedis from Maven Central), built once by Maven into `.legacy/`
 * (gitignored): the jar and its dependencies. A hash of the sources decides whether a build is
 * current, so an edited consumer is rebuilt and an unchanged one never is.
 */
const LEGACY_DIR = fileURLToPath(new URL('./', import.meta.url));
const OUT_DIR = fileURLToPath(new URL('../../../../.legacy/', import.meta.url));
export const LEGACY_CONSUMER_JAR = join(OUT_DIR, 'target', 'legacy-consumer.jar');
export const LEGACY_LIB_DIR = join(OUT_DIR, 'lib');
const STAMP = join(OUT_DIR, 'sources.sha256');

export class LegacyConsumerBuildError extends Error {
  override readonly name = 'LegacyConsumerBuildError';
}

/** `-cp` for a JVM that runs a class of the replica. */
export function legacyClassPath(): string {
  return `${LEGACY_CONSUMER_JAR}:${LEGACY_LIB_DIR}/*`;
}

function sourcesHash(): string {
  const hash = createHash('sha256');
  const files = [
    'pom.xml',
    ...readdirSync(join(LEGACY_DIR, 'src/main/java/legacy')).map((f) => `src/main/java/legacy/${f}`),
  ];
  for (const file of files.sort()) hash.update(file).update(readFileSync(join(LEGACY_DIR, file)));
  return hash.digest('hex');
}

export function legacyConsumerIsBuilt(): boolean {
  return existsSync(LEGACY_CONSUMER_JAR) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === sourcesHash();
}

/** `mvn package` on packages/tools/src/legacy/pom.xml; Maven caches the artifacts in ~/.m2, so a rebuild is quick. */
export async function buildLegacyConsumer(mvn = process.env.MVN ?? 'mvn'): Promise<void> {
  try {
    await runToCompletion(mvn, ['-q', '-B', '-f', join(LEGACY_DIR, 'pom.xml'), 'package'], 'install Maven');
  } catch (error) {
    throw new LegacyConsumerBuildError(`building the legacy consumer replica failed: ${(error as Error).message}`);
  }
  if (!existsSync(LEGACY_CONSUMER_JAR)) throw new LegacyConsumerBuildError(`Maven built no ${LEGACY_CONSUMER_JAR}`);
  writeFileSync(STAMP, sourcesHash());
}

export async function ensureLegacyConsumer(): Promise<void> {
  if (!legacyConsumerIsBuilt()) await buildLegacyConsumer();
}

// `npm run legacy:build` (always builds) and `... --if-missing` (the tests' pre-step).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await (process.argv.includes('--if-missing') ? ensureLegacyConsumer() : buildLegacyConsumer());
  console.log(`legacy consumer replica ready: ${LEGACY_CONSUMER_JAR}`);
}
