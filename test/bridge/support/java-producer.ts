import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JAVA_17_OPENS } from '../../../scripts/rocketmq/local-rocketmq.ts';
import { ROCKETMQ_4 } from '../../../scripts/rocketmq/rocketmq-jars.ts';

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
  if (
    !existsSync(ROCKETMQ_4.libDir) ||
    !readdirSync(ROCKETMQ_4.libDir).some((j) => /^rocketmq-client-4\.7\.1\.jar$/.test(j))
  )
    throw new JavaProducerError(`rocketmq-client-4.7.1.jar is not in ${ROCKETMQ_4.libDir}: run npm run rocketmq:fetch`);
  const spec = messages.map((m) => ({
    topic: m.topic,
    tags: m.tags,
    keys: m.keys,
    bodyBase64: Buffer.from(m.body).toString('base64'),
    userProperties: m.userProperties ?? {},
    ...(m.delayTimeLevel === undefined ? {} : { delayTimeLevel: m.delayTimeLevel }),
    ...(m.batch === undefined ? {} : { batch: m.batch }),
  }));
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
      `${ROCKETMQ_4.libDir}*`,
      SOURCE,
      nameServer,
      JSON.stringify(spec),
    ]);
    if (code !== 0) throw new JavaProducerError(`the Java producer exited with ${code}: ${stderr.slice(-2000)}`);
    return stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as JavaSendResult);
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
