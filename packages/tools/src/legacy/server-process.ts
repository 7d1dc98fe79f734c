import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/**
 * A database server the tests run as a child process (MariaDB, Redis): spawned with its output
 * appended to a log file, ready once a line matches, killed with the test process if a test run
 * crashes. The servers are the project's own binaries (local-mariadb.ts, local-redis.ts), never a
 * system service: each instance has its own data directory under a temporary folder and its own
 * loopback port.
 */
export class LegacyServerStartError extends Error {
  override readonly name = 'LegacyServerStartError';
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Spawns `command`; `installHint` says where it comes from when it is missing. */
export function spawnServer(
  command: string,
  args: readonly string[],
  logFile: string,
  installHint: string,
): { child: ChildProcess; spawned: Promise<void> } {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const child of live) child.kill('SIGKILL');
    });
  }
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const append = (chunk: Buffer) => appendFileSync(logFile, chunk);
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  live.add(child);
  child.once('exit', () => live.delete(child));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) =>
      reject(new LegacyServerStartError(`cannot run ${command} (${err.message}): ${installHint}`)),
    );
  });
  return { child, spawned };
}

/** Resolves once the server's log shows `ready`; rejects with the log's tail if it exits or takes too long. */
export function waitUntilReady(child: ChildProcess, logFile: string, ready: RegExp, timeoutMs: number): Promise<void> {
  const tail = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-3000) : '');
  return new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      if (ready.test(tail())) done();
    }, 50);
    const timer = setTimeout(
      () => done(new LegacyServerStartError(`not ready within ${timeoutMs} ms:\n${tail()}`)),
      timeoutMs,
    );
    const onExit = (code: number | null) =>
      done(new LegacyServerStartError(`exited with code ${code} before it was ready:\n${tail()}`));
    function done(err?: Error) {
      clearInterval(poll);
      clearTimeout(timer);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve();
    }
    child.once('exit', onExit);
  });
}

/** Runs a command to completion (an installer, a client); rejects with its output on a non-zero exit. */
export function runToCompletion(command: string, args: readonly string[], installHint: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) =>
      reject(new LegacyServerStartError(`cannot run ${command} (${err.message}): ${installHint}`)),
    );
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new LegacyServerStartError(`${command} exited with ${code}: ${output}`)),
    );
  });
}

/** SIGTERM (both servers shut down cleanly on it), SIGKILL if that takes longer than `graceMs`. */
export function stopServer(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
