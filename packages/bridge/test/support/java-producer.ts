import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JAVA_17_OPENS } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq.ts';
import {
  ROCKETMQ_4,
  ROCKETMQ_5_JAVA_CLIENT,
  type RocketMQRelease,
} from '@rocketmq-lambda/tools/rocketmq/rocketmq-jars.ts';

/** One message as the Java application gives it to the client. */
export interface JavaMessage {
  readonly topic: string;
  readonly tags: string;
  /** Space-separated, as `Message(topic, tags, keys, body)` takes them. */
  readonly keys: string;
  readonly body: Uint8Array;
  /** Set one by one with `Message.putUserProperty`. */
  readonly userProperties?: Readonly<Record<string, string>>;
  /** `Message.setDelayTimeLevel`: 1 = 1 s, 2 = 5 s, 3 = 10 s … (the broker's `messageDelayLevel`). */
  readonly delayTimeLevel?: number;
  /** Consecutive messages with the same batch go in one `send(Collection)`: stored under one store timestamp. */
  readonly batch?: string;
}

/** What the client's `SendResult` said of one message. */
export interface JavaSendResult {
  /** The client's UNIQ_KEY. */
  readonly msgId: string;
  readonly offsetMsgId: string;
  readonly queueId: number;
  readonly queueOffset: number;
}

const SOURCE = fileURLToPath(new URL('./java/Producer471.java', import.meta.url));
const SOURCE_5 = fileURLToPath(new URL('./java/Producer5.java', import.meta.url));

export class JavaProducerError extends Error {
  override readonly name = 'JavaProducerError';
}

/**
 * Sends `messages` with the official RocketMQ 4.7.1 Java client (`DefaultMQProducer`, in the jars
 * `npm run rocketmq:fetch` puts in .rocketmq/lib-4.7.1 as a dependency of the broker's tools), run
 * as a single-file source program: one JVM start, no build step. For checks of what a Java
 * producer really writes, which a Node client only imitates.
 */
export async function sendWithJavaClient(
  nameServer: string,
  messages: readonly JavaMessage[],
  java = process.env.JAVA ?? 'java',
): Promise<JavaSendResult[]> {
  const spec = messages.map((m) => ({
    topic: m.topic,
    tags: m.tags,
    keys: m.keys,
    bodyBase64: Buffer.from(m.body).toString('base64'),
    userProperties: m.userProperties ?? {},
    ...(m.delayTimeLevel === undefined ? {} : { delayTimeLevel: m.delayTimeLevel }),
    ...(m.batch === undefined ? {} : { batch: m.batch }),
  }));
  return (
    await runProducer(ROCKETMQ_4, /^rocketmq-client-4\.7\.1\.jar$/, SOURCE, [nameServer, JSON.stringify(spec)], java)
  ).map((line) => JSON.parse(line) as JavaSendResult);
}

/** One message as a RocketMQ 5 Java application gives it to `MessageBuilder`. */
export interface Java5Message {
  readonly topic: string;
  readonly tag: string;
  readonly keys: readonly string[];
  readonly body: Uint8Array;
  /** `MessageBuilder.setDeliveryTimestamp`, epoch milliseconds: a delay message, for a topic of type DELAY. */
  readonly deliveryTimestamp?: number;
}

/**
 * Sends `messages` with the official RocketMQ 5 Java client (`rocketmq-client-java`, which
 * `npm run rocketmq:fetch` puts in .rocketmq/client-java-5) through the proxy at `endpoints`, one
 * JVM start; returns each message's id as the client's `SendReceipt` gave it.
 */
export async function sendWithJava5Client(
  endpoints: string,
  messages: readonly Java5Message[],
  java = process.env.JAVA ?? 'java',
): Promise<string[]> {
  const args = messages.map((m) =>
    [m.topic, m.tag, m.keys.join(' '), Buffer.from(m.body).toString('base64'), m.deliveryTimestamp ?? ''].join('\t'),
  );
  const lines = await runProducer(
    ROCKETMQ_5_JAVA_CLIENT,
    /^rocketmq-client-java-5\..*\.jar$/,
    SOURCE_5,
    [endpoints, ...args],
    java,
  );
  return lines.map((line) => (JSON.parse(line) as { msgId: string }).msgId);
}

/** Runs a producer source program on a release's jars; returns the JSON lines it printed. */
async function runProducer(
  release: RocketMQRelease,
  clientJar: RegExp,
  source: string,
  args: readonly string[],
  java: string,
): Promise<string[]> {
  if (!existsSync(release.libDir) || !readdirSync(release.libDir).some((j) => clientJar.test(j)))
    throw new JavaProducerError(
      `the RocketMQ ${release.version} client is not in ${release.libDir}: run npm run rocketmq:fetch`,
    );
  // The client writes its logs under user.home; a folder of its own keeps them out of the way. Netty logs through
  // logback, which prints DEBUG to the console unless configured.
  const home = mkdtempSync(join(tmpdir(), 'java-producer-'));
  const logback = join(home, 'logback.xml');
  writeFileSync(logback, '<configuration><root level="WARN"/></configuration>');
  try {
    const { code, stdout, stderr } = await run(java, [
      ...JAVA_17_OPENS,
      `-Dlogback.configurationFile=${logback}`,
      `-Duser.home=${home}`,
      '-Xmx128m',
      '-cp',
      `${release.libDir}*`,
      source,
      ...args,
    ]);
    if (code !== 0) throw new JavaProducerError(`the Java producer exited with ${code}: ${stderr.slice(-2000)}`);
    return stdout.split('\n').filter((line) => line.startsWith('{'));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function run(command: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
