import { ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import type { BridgeConfigInput } from '../../src/bridge-config.ts';

const ENTRY = fileURLToPath(new URL('./bridge-child.ts', import.meta.url));

/** A bridge running as its own Node process, its JSON log lines collected for the test to wait on. */
export class BridgeChildProcess {
  readonly lines: Record<string, unknown>[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly #child: ChildProcess;
  #stderr = '';
  #waiters: (() => void)[] = [];

  /**
   * Runs `bridge-child.ts` under tsx with these variables over this process's environment, or
   * watches a bridge started some other way (the replayed image's entry command), output piped.
   */
  constructor(from: Record<string, string> | ChildProcess) {
    this.#child =
      from instanceof ChildProcess
        ? from
        : spawn(process.execPath, ['--import', 'tsx', ENTRY], {
            env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'INFO', POWERTOOLS_METRICS_DISABLED: 'true', ...from },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
    createInterface({ input: this.#child.stdout! }).on('line', (line) => {
      try {
        this.lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.lines.push({ raw: line });
      }
      for (const wake of this.#waiters) wake();
    });
    // Powertools writes warnings and errors to stderr: its JSON lines are collected too, the rest kept as a tail for
    // failures.
    createInterface({ input: this.#child.stderr! }).on('line', (line) => {
      this.#stderr = `${this.#stderr}${line}\n`.slice(-4000);
      if (!line.startsWith('{')) return;
      try {
        this.lines.push(JSON.parse(line) as Record<string, unknown>);
        for (const wake of this.#waiters) wake();
      } catch {
        // not a log line
      }
    });
    // 'close', not 'exit': it comes after the output pipes are drained, so a line written just
    // before a SIGKILL is in `lines` once this resolves.
    this.exited = new Promise((resolve) =>
      this.#child.once('close', (code, signal) => {
        resolve({ code, signal });
        for (const wake of this.#waiters) wake();
      }),
    );
  }

  /** Resolves with the first value `probe` returns that is not undefined, checking after each log line. */
  waitFor<T>(what: string, probe: (lines: Record<string, unknown>[]) => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const value = probe(this.lines);
        if (value !== undefined) return finish(() => resolve(value));
        if (this.#child.exitCode !== null || this.#child.signalCode !== null) {
          finish(() =>
            reject(
              new Error(
                `bridge exited while waiting for ${what}; stderr: ${this.#stderr}; last lines: ${JSON.stringify(this.lines.slice(-5))}`,
              ),
            ),
          );
        }
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(
              new Error(
                `timed out waiting for ${what}; stderr: ${this.#stderr}; last lines: ${JSON.stringify(this.lines.slice(-5))}`,
              ),
            ),
          ),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.#waiters = this.#waiters.filter((w) => w !== check);
        settle();
      };
      this.#waiters.push(check);
      check();
    });
  }

  kill(signal: NodeJS.Signals): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill(signal);
  }
}

/** The environment of a bridge process with this configuration, forwarding to the tests' AWS emulator. */
export function bridgeEnv(config: BridgeConfigInput, extra: Record<string, string> = {}): Record<string, string> {
  return {
    BRIDGE_CONFIG: JSON.stringify(config),
    AWS_ENDPOINT_URL: inject('emulatorEndpoint'),
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...extra,
  };
}

/** Every msgId the bridge logged as forwarded (and acked unless a fault stopped it). */
export function forwardedMsgIds(lines: Record<string, unknown>[]): string[] {
  return lines.filter((l) => l.message === 'forwarded').flatMap((l) => l.msgIds as string[]);
}

/**
 * The msgIds a faulted bridge reported holding, forwarded and not acked (`BRIDGE_FAULT`, default `crash-before-ack`).
 */
export function faultedMsgIds(lines: Record<string, unknown>[], fault = 'crash-before-ack'): string[] {
  return lines.filter((l) => l.fault === fault).flatMap((l) => l.msgIds as string[]);
}
