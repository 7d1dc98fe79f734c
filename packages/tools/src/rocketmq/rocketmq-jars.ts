import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The official Apache RocketMQ server jars (name server, proxy, broker and their dependencies),
 * fetched once from Maven Central by a small pom per release into a gitignored folder per release.
 */
export const ROCKETMQ_LIB_DIR = fileURLToPath(new URL('../../../../.rocketmq/lib/', import.meta.url));
const POM_DIR = fileURLToPath(new URL('./', import.meta.url));

export interface RocketMQRelease {
  readonly version: string;
  readonly pom: string;
  readonly libDir: string;
  /** The jars every RocketMQ process of the release needs; their absence means the fetch has not run. */
  readonly requiredJars: readonly RegExp[];
}

/** Name server + proxy in local mode (embedded broker): `packages/tools/src/rocketmq/pom.xml`. */
export const ROCKETMQ_5: RocketMQRelease = {
  version: '5.5.0',
  pom: `${POM_DIR}pom.xml`,
  libDir: ROCKETMQ_LIB_DIR,
  requiredJars: [/^rocketmq-namesrv-5\..*\.jar$/, /^rocketmq-proxy-5\..*\.jar$/, /^rocketmq-broker-5\..*\.jar$/],
};

/** Name server + broker (+ mqadmin), the incident's release line: `packages/tools/src/rocketmq/pom-4.7.1.xml`. */
export const ROCKETMQ_4: RocketMQRelease = {
  version: '4.7.1',
  pom: `${POM_DIR}pom-4.7.1.xml`,
  libDir: fileURLToPath(new URL('../../../../.rocketmq/lib-4.7.1/', import.meta.url)),
  requiredJars: [/^rocketmq-namesrv-4\.7\.1\.jar$/, /^rocketmq-broker-4\.7\.1\.jar$/, /^rocketmq-tools-4\.7\.1\.jar$/],
};

/**
 * The 5.x Java client a producer application uses (`rocketmq-client-java`, one shaded jar), for
 * tests of what it sends through a 5.5.0 proxy: `packages/tools/src/rocketmq/pom-client-java-5.xml`.
 */
export const ROCKETMQ_5_JAVA_CLIENT: RocketMQRelease = {
  version: '5.0.8 (Java client)',
  pom: `${POM_DIR}pom-client-java-5.xml`,
  libDir: fileURLToPath(new URL('../../../../.rocketmq/client-java-5/', import.meta.url)),
  requiredJars: [/^rocketmq-client-java-5\..*\.jar$/],
};

const RELEASES = [ROCKETMQ_5, ROCKETMQ_4, ROCKETMQ_5_JAVA_CLIENT];

export class RocketMQJarsMissingError extends Error {
  override readonly name = 'RocketMQJarsMissingError';
}

export function hasRocketMQJars(release: RocketMQRelease = ROCKETMQ_5): boolean {
  if (!existsSync(release.libDir)) return false;
  const jars = readdirSync(release.libDir);
  return release.requiredJars.every((pattern) => jars.some((jar) => pattern.test(jar)));
}

/** Runs `mvn dependency:copy-dependencies` on the small pom; Maven caches in ~/.m2, so reruns are cheap. */
export async function fetchRocketMQJars(options: { mvn?: string; release?: RocketMQRelease } = {}): Promise<void> {
  const release = options.release ?? ROCKETMQ_5;
  const mvn = options.mvn ?? process.env.MVN ?? 'mvn';
  const args = ['-q', '-B', '-f', release.pom, 'dependency:copy-dependencies'];
  let output = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(mvn, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => reject(new RocketMQJarsMissingError(`cannot run Maven (${mvn}): ${err.message}`)));
    child.once('exit', resolve);
  });
  if (code !== 0 || !hasRocketMQJars(release)) {
    throw new RocketMQJarsMissingError(
      `fetching the RocketMQ ${release.version} jars failed (mvn exit ${code}): ${output}`,
    );
  }
}

export async function ensureRocketMQJars(release: RocketMQRelease = ROCKETMQ_5): Promise<void> {
  if (!hasRocketMQJars(release)) await fetchRocketMQJars({ release });
}

// `npm run rocketmq:fetch` (always fetches) and `... --if-missing` (the test's pre-step).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const ifMissing = process.argv.includes('--if-missing');
  for (const release of RELEASES) {
    await (ifMissing ? ensureRocketMQJars(release) : fetchRocketMQJars({ release }));
    console.log(`RocketMQ ${release.version} jars ready in ${release.libDir}`);
  }
}
