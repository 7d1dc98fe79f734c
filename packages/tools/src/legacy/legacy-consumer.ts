import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JAVA_17_OPENS } from '../rocketmq/local-rocketmq.ts';
import { ensureLegacyConsumer, legacyClassPath } from './legacy-consumer-jar.ts';
import type { LocalMariaDb } from './local-mariadb.ts';
import { runToCompletion } from './server-process.ts';

/**
 * The legacy points consumer replica (packages/tools/src/legacy/src/main/java/legacy/PointConsumer.java) as a
 * child process: one small JVM (serial GC, 96 MB heap) per consumer instance, its events read from
 * its standard output. `kill('SIGKILL')` is the crash before an offset commit; `stop()` the clean
 * shutdown that commits offsets.
 */
export interface LegacyConsumerOptions {
  readonly nameServer: string;
  readonly group: string;
  readonly topic?: string;
  /** Default `PAID`, as the article's listener. */
  readonly tags?: string;
  readonly database: Pick<LocalMariaDb, 'host' | 'port' | 'database' | 'user' | 'password'>;
  /** `mysql` (t_point_record in the award's transaction, the default) or `redis` (SET NX EX first). */
  readonly dedup?: 'mysql' | 'redis';
  /** `host:port` of the Redis for `dedup: 'redis'`. */
  readonly redis?: string;
  readonly keyPrefix?: string;
  readonly keyTtlSeconds?: number;
  readonly maxReconsumeTimes?: number;
  readonly threads?: number;
  readonly persistOffsetMs?: number;
  /** Regexes on the order number; see PointConsumer.java. */
  readonly faults?: {
    readonly failAlways?: string;
    readonly failFirst?: string;
    readonly failAfterCommit?: string;
    readonly failAfterCommitAlways?: string;
    readonly holdAfterAward?: string;
  };
}

/** One line the replica printed. */
export interface LegacyEvent {
  readonly event: 'started' | 'stopped' | 'awarded' | 'duplicate' | 'failed' | 'held';
  readonly at: number;
  readonly orderNo?: string;
  readonly msgId?: string;
  readonly reconsumeTimes?: number;
  readonly queueId?: number;
  readonly topic?: string;
  readonly error?: string;
}

const JVM = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xss512k', '-Xmx96m'];

/** A small JVM running `mainClass` of the replica; the client writes its logs under user.home, kept in `home`. */
function jvmArguments(home: string, mainClass: string, args: readonly string[]): string[] {
  return [...JVM, ...JAVA_17_OPENS, `-Duser.home=${home}`, '-cp', legacyClassPath(), mainClass, ...args];
}

export class LegacyConsumerProcess {
  readonly events: LegacyEvent[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly #child: ChildProcess;
  readonly #home: string;
  #stderr = '';

  private constructor(child: ChildProcess, home: string) {
    this.#child = child;
    this.#home = home;
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('{')) this.events.push(JSON.parse(line) as LegacyEvent);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString()).slice(-4000);
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        rmSync(home, { recursive: true, force: true });
        resolve({ code, signal });
      }),
    );
  }

  static async start(options: LegacyConsumerOptions): Promise<LegacyConsumerProcess> {
    await ensureLegacyConsumer();
    const home = mkdtempSync(join(tmpdir(), 'legacy-consumer-'));
    const db = options.database;
    const args: Record<string, string | number | undefined> = {
      namesrv: options.nameServer,
      group: options.group,
      topic: options.topic,
      tags: options.tags,
      jdbc: `jdbc:mariadb://${db.host}:${db.port}/${db.database}?user=${db.user}&password=${db.password}`,
      dedup: options.dedup,
      redis: options.redis,
      keyPrefix: options.keyPrefix,
      keyTtlSeconds: options.keyTtlSeconds,
      maxReconsumeTimes: options.maxReconsumeTimes,
      threads: options.threads,
      persistOffsetMs: options.persistOffsetMs,
      ...options.faults,
    };
    const child = spawn(
      process.env.JAVA ?? 'java',
      jvmArguments(
        home,
        'legacy.PointConsumer',
        Object.entries(args)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${v}`),
      ),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const consumer = new LegacyConsumerProcess(child, home);
    await consumer.waitFor('started', (e) => e.event === 'started', 60_000);
    return consumer;
  }

  /** Resolves with the first event that satisfies `predicate` (including ones already seen). */
  async waitFor(what: string, predicate: (event: LegacyEvent) => boolean, timeoutMs: number): Promise<LegacyEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(predicate);
      if (found) return found;
      if (this.#child.exitCode !== null || this.#child.signalCode !== null)
        throw new Error(`the legacy consumer exited before "${what}": ${this.#stderr}`);
      if (Date.now() > deadline) throw new Error(`the legacy consumer did not report "${what}" in ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** SIGKILL: no shutdown hook, no offset commit; what it processed since its last commit is delivered again. */
  async kill(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM: the consumer shuts down and commits its offsets, as a rolling stop does. */
  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGTERM');
    const force = setTimeout(() => this.#child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(force);
  }

  get home(): string {
    return this.#home;
  }
}

/**
 * Re-sends the letter with `key` from `%DLQ%<group>` to its original topic as a new message, as an
 * operator does from the console days later. Returns the new message's ids.
 */
export async function resendDeadLetter(
  nameServer: string,
  group: string,
  key: string,
): Promise<{ msgId: string; offsetMsgId: string; originalMsgId: string; topic: string }> {
  await ensureLegacyConsumer();
  const home = mkdtempSync(join(tmpdir(), 'dlq-resend-'));
  try {
    const out = await runToCompletion(
      process.env.JAVA ?? 'java',
      jvmArguments(home, 'legacy.DlqResend', [nameServer, group, key]),
      'install a JDK 17',
    );
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`the re-send printed no result: ${out}`);
    return JSON.parse(line);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
