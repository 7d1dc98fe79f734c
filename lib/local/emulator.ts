import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A running local AWS emulator (moto server behind the project's launcher). */
export interface Emulator {
  readonly endpoint: string;
  /** Wipes every resource of every service. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export class EmulatorUnavailableError extends Error {
  override readonly name = 'EmulatorUnavailableError';
}

const LAUNCHER = fileURLToPath(new URL('../../scripts/emulator/launcher.py', import.meta.url));
const INSTALL_HINT = 'pip install "moto[server]==5.2.1"';

/** Starts the emulator on a free loopback port and resolves once it answers. */
export async function startEmulator(options: { python?: string; timeoutMs?: number } = {}): Promise<Emulator> {
  const python = options.python ?? process.env.EMULATOR_PYTHON ?? 'python3';
  const child = spawn(python, [LAUNCHER], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const endpoint = await readEndpoint(child, options.timeoutMs ?? 20_000, () => stderr);
  return {
    endpoint,
    async reset() {
      const res = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
      if (!res.ok) throw new Error(`emulator reset failed: HTTP ${res.status}`);
    },
    stop: () => stopChild(child),
  };
}

function readEndpoint(child: ChildProcess, timeoutMs: number, stderr: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new EmulatorUnavailableError(`emulator did not start within ${timeoutMs} ms: ${stderr()}`));
    }, timeoutMs);
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new EmulatorUnavailableError(why));
    };
    child.once('error', (err) => fail(`cannot run Python for the emulator (${err.message}); install Python 3 and ${INSTALL_HINT}`));
    child.once('exit', (code) => {
      const missingMoto = /No module named '?(moto|werkzeug)/.test(stderr());
      fail(missingMoto
        ? `moto is not installed: ${INSTALL_HINT}`
        : `emulator exited with code ${code}: ${stderr()}`);
    });
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      try {
        resolve((JSON.parse(line) as { endpoint: string }).endpoint);
      } catch {
        reject(new EmulatorUnavailableError(`unexpected emulator output: ${line}`));
      }
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
