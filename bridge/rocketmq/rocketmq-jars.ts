import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The official Apache RocketMQ server jars (name server, proxy, broker and their dependencies),
 * fetched once from Maven Central by `bridge/rocketmq/pom.xml` into a gitignored folder.
 */
export const ROCKETMQ_LIB_DIR = fileURLToPath(new URL('../.rocketmq/lib/', import.meta.url));
const POM_DIR = fileURLToPath(new URL('./', import.meta.url));

/** The jars every RocketMQ process here needs; their absence means the fetch has not run. */
const REQUIRED_JARS = [/^rocketmq-namesrv-5\..*\.jar$/, /^rocketmq-proxy-5\..*\.jar$/, /^rocketmq-broker-5\..*\.jar$/];

export class RocketMqJarsMissingError extends Error {
  override readonly name = 'RocketMqJarsMissingError';
}

export function hasRocketMqJars(): boolean {
  if (!existsSync(ROCKETMQ_LIB_DIR)) return false;
  const jars = readdirSync(ROCKETMQ_LIB_DIR);
  return REQUIRED_JARS.every((pattern) => jars.some((jar) => pattern.test(jar)));
}

/** Runs `mvn dependency:copy-dependencies` on the small pom; Maven caches in ~/.m2, so reruns are cheap. */
export async function fetchRocketMqJars(options: { mvn?: string } = {}): Promise<void> {
  const mvn = options.mvn ?? process.env.MVN ?? 'mvn';
  const args = ['-q', '-B', '-f', `${POM_DIR}pom.xml`, 'dependency:copy-dependencies'];
  let output = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(mvn, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => reject(new RocketMqJarsMissingError(`cannot run Maven (${mvn}): ${err.message}`)));
    child.once('exit', resolve);
  });
  if (code !== 0 || !hasRocketMqJars()) {
    throw new RocketMqJarsMissingError(`fetching the RocketMQ jars failed (mvn exit ${code}): ${output}`);
  }
}

export async function ensureRocketMqJars(): Promise<void> {
  if (!hasRocketMqJars()) await fetchRocketMqJars();
}

// `npm run rocketmq:fetch` (always fetches) and `... --if-missing` (the test's pre-step).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const ifMissing = process.argv.includes('--if-missing');
  await (ifMissing ? ensureRocketMqJars() : fetchRocketMqJars());
  console.log(`RocketMQ jars ready in ${ROCKETMQ_LIB_DIR}`);
}
