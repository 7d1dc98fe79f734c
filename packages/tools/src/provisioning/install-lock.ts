import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * One installer at a time for something the project provisions on first use (the emulator's
 * `.venv`, the MariaDB server): test files start in parallel workers and would otherwise each
 * download and unpack the same bytes.
 *
 * Node has no flock, so a small Python process holds one on `lockFile` while `work` runs. The
 * kernel drops the lock when the holder exits, and the holder exits at EOF on its stdin, i.e. when
 * we release it or when this process dies, even by SIGKILL. So no stale-lock guessing: a pid check
 * would misjudge holders in another PID namespace (test:bridge runs in one), a timeout would
 * misjudge a slow install. Python 3 is a prerequisite of the project already.
 */
export class InstallLockError extends Error {
  override readonly name = 'InstallLockError';
  constructor(
    message: string,
    /** What to run by hand to see why. */
    readonly command: string,
    /** The interpreter could not be started at all (rather than failing to lock). */
    readonly pythonMissing: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const HOLD_LOCK = [
  'import fcntl, sys',
  'with open(sys.argv[1], "a") as lock:',
  '    fcntl.flock(lock, fcntl.LOCK_EX)',
  '    print("locked", flush=True)',
  '    sys.stdin.read()',
].join('\n');

export async function withInstallLock<T>(lockFile: string, python: string, work: () => Promise<T>): Promise<T> {
  await mkdir(dirname(lockFile), { recursive: true });
  const holder = spawn(python, ['-c', HOLD_LOCK, lockFile], { stdio: ['pipe', 'pipe', 'pipe'] });
  holder.stdin.on('error', () => {}); // EPIPE if the holder is already gone
  const exited = new Promise<void>((resolve) => {
    holder.once('close', () => resolve());
    holder.once('error', () => resolve());
  });
  try {
    await new Promise<void>((resolve, reject) => {
      let stderr = '';
      holder.stderr.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-2000);
      });
      const lines = createInterface({ input: holder.stdout });
      lines.once('line', () => {
        lines.close();
        resolve();
      });
      holder.once('error', (err) =>
        reject(
          new InstallLockError(`cannot run "${python}" (${err.message})`, `${python} --version`, true, { cause: err }),
        ),
      );
      holder.once('exit', (code) => {
        const last = stderr.trim().split('\n').at(-1) ?? '';
        reject(
          new InstallLockError(
            `${python} could not lock ${lockFile} (exit ${code}: ${last})`,
            `${python} -c ${JSON.stringify(HOLD_LOCK)} ${lockFile}`,
            false,
          ),
        );
      });
    });
    return await work();
  } finally {
    holder.stdin.end();
    await exited;
  }
}
