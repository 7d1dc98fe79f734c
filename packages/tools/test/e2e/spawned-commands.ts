import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/** The repository: every command runs from here, as a person runs it from a checkout. */
export const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

export interface CommandRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, as a person types it (`npx tsx packages/ops/src/command/ops.ts …`, `npm start -- …`, `sh -c …`). */
export function runCommand(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CommandRun> {
  return new Promise((resolve) => {
    execFile(
      command,
      [...args],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, FORCE_COLOR: '0', ...env } },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: unknown }).code ?? 1) : 0;
        resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
  });
}

/**
 * `npm start -- --keep …` left running in a process group of its own, as a terminal runs it in
 * the foreground: `interrupt('npm')` is npm told to stop (what a process manager or `kill -INT`
 * does), `interrupt('group')` a terminal's Ctrl-C, which reaches every process of the group.
 */
export class KeptRun {
  stdout = '';
  stderr = '';
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;

  constructor(args: readonly string[]) {
    this.child = spawn('npm', ['start', '--', ...args], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  /** The process group: npm's pid, since it leads the group it was started in. */
  get group(): number {
    return this.child.pid!;
  }

  /** Waits until stdout matches, and returns the match; fails with what the run printed if it ends or times out first. */
  async waitFor(pattern: RegExp, timeoutMs = 120_000): Promise<RegExpMatchArray> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const match = this.stdout.match(pattern);
      if (match) return match;
      if (this.child.exitCode !== null || Date.now() > until)
        throw new Error(`no ${pattern} in the kept run's output:\n${this.stdout}\n${this.stderr}`);
      await sleep(100);
    }
  }

  /** The endpoint and the environment the run printed for the AWS CLI and ops (`export AWS_ENDPOINT_URL=…`). */
  async exported(): Promise<Record<string, string>> {
    const [, line] = await this.waitFor(/^\s*export (AWS_ENDPOINT_URL=.*)$/m);
    return Object.fromEntries(line!.split(' ').map((pair) => pair.split('=') as [string, string]));
  }

  interrupt(whom: 'npm' | 'group'): void {
    process.kill(whom === 'npm' ? this.group : -this.group, 'SIGINT');
  }

  /** npm's exit code, or `undefined` if it has not exited within the time given. */
  async exit(timeoutMs = 30_000): Promise<number | null | undefined> {
    return Promise.race([this.exited, sleep(timeoutMs).then(() => undefined)]);
  }

  /** True once no process of the group is left (npm, tsx, the run, the emulator), within the time given. */
  async groupGone(timeoutMs = 15_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      try {
        process.kill(-this.group, 0);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
        throw error;
      }
      await sleep(100);
    }
    return false;
  }

  /** Whatever is left of the group, killed: a test that failed must not leave an emulator behind. */
  kill(): void {
    try {
      process.kill(-this.group, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** True when nothing answers at the endpoint any more. */
export async function unreachable(endpoint: string): Promise<boolean> {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(5000) });
    return false;
  } catch {
    return true;
  }
}
