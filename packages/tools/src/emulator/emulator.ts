import { type ChildProcess, spawn } from 'node:child_process';
import { relative } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { EMULATOR_REQUIREMENTS, ensurePythonEnvironment, PythonEnvironmentError } from './python-environment.ts';

/** A running local AWS emulator (moto server behind the project's launcher). */
export interface Emulator {
  readonly endpoint: string;
  /** DynamoDB's endpoint: `endpoint`, or a second process's with `separateDynamoDb`. */
  readonly dynamoDbEndpoint: string;
  /**
   * The launcher's patches that are installed: `mode` "patched" (DynamoDB item-level
   * rollback + lock), "locked" (lock only) or "stock"; `hotPaths` the SQS counts and
   * request routing of `packages/tools/src/emulator/hot_paths.py`.
   */
  readonly patches: { mode: string; hotPaths: boolean };
  /** Wipes every resource of every service. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export class EmulatorUnavailableError extends Error {
  override readonly name = 'EmulatorUnavailableError';
}

export interface StartEmulatorOptions {
  /**
   * Python interpreter with moto installed. Default: `$EMULATOR_PYTHON`, else the project's
   * `.venv`, provisioned on first use from `packages/tools/src/emulator/requirements.txt`.
   */
  python?: string;
  /** How long to wait for the readiness line. Default 20 s. */
  timeoutMs?: number;
  /**
   * Plain moto: no DynamoDB lock, no item-level transaction rollback. Only for tests that
   * compare against stock behaviour; never for anything that writes concurrently.
   */
  stockMoto?: boolean;
  /**
   * DynamoDB in a process of its own, every other service in the first: moto serves one request
   * at a time per process in effect (Python's GIL), so two processes let SQS and DynamoDB work on
   * both cores at once. Clients must then send DynamoDB calls to `dynamoDbEndpoint`.
   */
  separateDynamoDb?: boolean;
}

const LAUNCHER = fileURLToPath(new URL('./launcher.py', import.meta.url));
// Hints for an interpreter given by option or EMULATOR_PYTHON; the default one provisions itself.
const requirementsShown = () => relative(process.cwd(), EMULATOR_REQUIREMENTS);
const DEFAULT_HINT = "or leave EMULATOR_PYTHON unset to use the project's .venv";

/** Every child still running; killed synchronously if this process exits without stop(). */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function killAllOnExit() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/** Starts the emulator on a free loopback port and resolves once it answers. */
export async function startEmulator(options: StartEmulatorOptions = {}): Promise<Emulator> {
  const python = options.python ?? process.env.EMULATOR_PYTHON ?? (await defaultPython());
  const processes = await Promise.allSettled(
    Array.from({ length: options.separateDynamoDb ? 2 : 1 }, () => startLauncher(python, options)),
  );
  const started = processes.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []));
  const failed = processes.find((p) => p.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((p) => p.stop()));
    throw failed.reason;
  }
  const [main, dynamoDb = main] = started as [Emulator, Emulator?];
  return {
    endpoint: main.endpoint,
    dynamoDbEndpoint: dynamoDb.endpoint,
    patches: main.patches,
    async reset() {
      await Promise.all(started.map((p) => p.reset()));
    },
    async stop() {
      await Promise.all(started.map((p) => p.stop()));
    },
  };
}

async function startLauncher(python: string, options: StartEmulatorOptions): Promise<Emulator> {
  const args = [LAUNCHER, '--exit-with-stdin', ...(options.stockMoto ? ['--stock'] : [])];
  // stdin stays an open pipe we never write to: if this process dies, even by SIGKILL, the
  // launcher sees EOF and exits, so no emulator outlives its test run.
  const child = spawn(python, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  killAllOnExit();
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  child.stdin!.on('error', () => {}); // EPIPE once the child is gone
  let ready: ReadinessLine;
  try {
    ready = await readEndpoint(child, python, options.timeoutMs ?? 20_000, () => stderr);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const { endpoint } = ready;
  return {
    endpoint,
    dynamoDbEndpoint: endpoint,
    patches: { mode: String(ready.mode ?? 'unknown'), hotPaths: ready.hotPaths === true },
    async reset() {
      const res = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
      if (!res.ok) throw new Error(`emulator reset failed: HTTP ${res.status}`);
    },
    stop: () => stopChild(child),
  };
}

/** The project's `.venv`; a failure to make it is the emulator's, with the classified error as its cause. */
async function defaultPython(): Promise<string> {
  try {
    return await ensurePythonEnvironment();
  } catch (err) {
    if (err instanceof PythonEnvironmentError) throw new EmulatorUnavailableError(err.message, { cause: err });
    throw err;
  }
}

interface ReadinessLine {
  endpoint: string;
  mode?: unknown;
  hotPaths?: unknown;
}

function readEndpoint(
  child: ChildProcess,
  python: string,
  timeoutMs: number,
  stderr: () => string,
): Promise<ReadinessLine> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const lines = createInterface({ input: child.stdout! });
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      lines.close();
      child.stdout!.resume(); // keep draining so later output can never block the child
      fn();
    };
    const fail = (why: string) => settle(() => reject(new EmulatorUnavailableError(why)));
    const timer = setTimeout(
      () => fail(`emulator did not start within ${timeoutMs} ms: ${stderr().trim()}`),
      timeoutMs,
    );
    child.once('error', (err) =>
      fail(
        `cannot run Python for the emulator ("${python}": ${err.message}); use one with ${requirementsShown()} installed, ${DEFAULT_HINT}`,
      ),
    );
    child.once('exit', (code, signal) => {
      const missing = /No module named '?(moto|werkzeug|flask|cheroot)'?/.exec(stderr());
      fail(
        missing
          ? `the emulator's Python packages (moto, cheroot) are not installed for "${python}" (${missing[0]}): ${python} -m pip install -r ${requirementsShown()}, ${DEFAULT_HINT}`
          : `emulator exited with ${signal ?? `code ${code}`} before it was ready: ${stderr().trim()}`,
      );
    });
    lines.on('line', (line) => {
      let ready: { ready?: unknown; endpoint?: unknown; mode?: unknown; hotPaths?: unknown } | undefined;
      try {
        ready = JSON.parse(line) as typeof ready;
      } catch {
        return; // not the readiness line (a library printing to stdout); keep waiting
      }
      if (ready?.ready === true && typeof ready.endpoint === 'string') {
        const line = { endpoint: ready.endpoint, mode: ready.mode, hotPaths: ready.hotPaths };
        settle(() => resolve(line));
      }
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
