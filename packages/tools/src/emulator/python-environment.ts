/**
 * The emulator's Python: a project-local virtual environment (`<repo>/.venv`) holding exactly
 * `packages/tools/src/emulator/requirements.txt`, made on first use so `npm ci && npm start` needs only
 * Python 3 with its venv module.
 *
 * requirements.txt is a full lock (pip-compile's output from requirements.in): every package of
 * the environment at one version with the sha256 of each of its files. pip installs it with
 * `--require-hashes` (a file whose bytes the lock does not name is refused), `--no-deps` (pip
 * resolves nothing, so nothing the lock does not name comes in) and `--only-binary :all:` (no
 * sdist, so no setup.py runs and no unhashed build dependency is fetched); `pip check` then proves
 * the lock complete, since `--no-deps` would otherwise leave a missing dependency unnoticed.
 *
 * Warm path: read requirements.txt, hash it, compare with the stamp inside the environment, check
 * that its interpreter is still there; no process is started. Cold path: under a lock, `python3 -m
 * venv`, `pip install` and `pip check`, then the stamp, written last and atomically, so a failed or
 * interrupted install never looks finished.
 *
 * `python3 -m venv`, not `virtualenv`: venv is the standard library's; where it lacks ensurepip
 * (Debian and Ubuntu ship that as the python3-venv package) bootstrapping virtualenv would need pip
 * outside an environment, which those same systems refuse (PEP 668, "externally managed"), so the
 * fix is the apt package either way, and the error says so.
 *
 * Run directly (`npm run emulator:setup`) it provisions and prints the interpreter's path: for
 * steps that run where the package index is unreachable (test:bridge's network namespace).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InstallLockError, withInstallLock } from '../provisioning/install-lock.ts';

/** The hash lock the environment is built from (generated from requirements.in, where the pins are chosen). */
export const EMULATOR_REQUIREMENTS = fileURLToPath(new URL('./requirements.txt', import.meta.url));
const DEFAULT_DIRECTORY = fileURLToPath(new URL('../../../../.venv', import.meta.url));
/** Inside the environment: the sha256 of the requirements file it was built from. */
const STAMP = 'requirements.sha256';

export interface PythonEnvironmentOptions {
  /** The virtual environment's directory. Default `<repo>/.venv`. */
  directory?: string;
  /** The hash-locked requirements file it holds. Default `packages/tools/src/emulator/requirements.txt`. */
  requirements?: string;
  /** The interpreter that creates the environment. Default `python3`. */
  basePython?: string;
  /**
   * Receives the progress lines printed when the environment is (re)built: what is installed and
   * why, then, while pip works, how many of the lock's packages it has fetched, at most every few
   * seconds. Default: stderr.
   */
  onProgress?: (line: string) => void;
  /** What the environment is for, first on the progress line. Default `emulator`. */
  label?: string;
}

/** The environment could not be made; `command` is what to run by hand to see why. */
export class PythonEnvironmentError extends Error {
  override readonly name: string = 'PythonEnvironmentError';
  constructor(
    message: string,
    readonly command: string,
  ) {
    super(message);
  }
}

/** The base interpreter cannot be started at all. */
export class PythonNotFoundError extends PythonEnvironmentError {
  override readonly name = 'PythonNotFoundError';
}

/** `python3 -m venv` failed (typically: no ensurepip, i.e. python3-venv is not installed). */
export class VirtualEnvironmentCreationError extends PythonEnvironmentError {
  override readonly name = 'VirtualEnvironmentCreationError';
}

/**
 * `pip install` failed (package index unreachable, no wheel for this Python, a bad pin, a missing
 * or wrong hash), or `pip check` found the lock incomplete.
 */
export class RequirementsInstallError extends PythonEnvironmentError {
  override readonly name = 'RequirementsInstallError';
}

interface Environment {
  directory: string;
  requirements: string;
  basePython: string;
  python: string;
  stamp: string;
  /** Beside the environment, not inside: `venv --clear` empties the directory. */
  lockFile: string;
  onProgress: (line: string) => void;
  label: string;
}

/** Makes sure the environment holds the requirements; resolves to its interpreter. */
export async function ensurePythonEnvironment(options: PythonEnvironmentOptions = {}): Promise<string> {
  const env = environmentOf(options);
  const digest = await digestOf(env.requirements);
  if (await isCurrent(env, digest)) return env.python;
  return withLock(env, async () => {
    // Whoever held the lock before may have just built it.
    if (!(await isCurrent(env, digest))) await build(env, digest);
    return env.python;
  });
}

function environmentOf(options: PythonEnvironmentOptions): Environment {
  const directory = options.directory ?? DEFAULT_DIRECTORY;
  return {
    directory,
    requirements: options.requirements ?? EMULATOR_REQUIREMENTS,
    basePython: options.basePython ?? 'python3',
    python: join(directory, 'bin', 'python'),
    stamp: join(directory, STAMP),
    lockFile: `${directory}.lock`,
    onProgress: options.onProgress ?? ((line) => process.stderr.write(`${line}\n`)),
    label: options.label ?? 'emulator',
  };
}

async function digestOf(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

const readStamp = (env: Environment) =>
  readFile(env.stamp, 'utf8').then(
    (s) => s.trim(),
    () => undefined,
  );

/** existsSync follows the interpreter's symlink: a removed base Python counts as not current. */
async function isCurrent(env: Environment, digest: string): Promise<boolean> {
  return (await readStamp(env)) === digest && existsSync(env.python);
}

async function build(env: Environment, digest: string): Promise<void> {
  const previous = await readStamp(env);
  const why =
    previous === undefined
      ? 'first run only'
      : previous === digest
        ? 'its Python is gone'
        : `${basename(env.requirements)} changed`;
  env.onProgress(
    `${env.label}: ${previous === undefined ? 'installing' : 'reinstalling'} ${await summaryOf(env.requirements)} into ${shown(env.directory)} (${why})…`,
  );
  await rm(env.stamp, { force: true });
  // A stamped environment is ours and is rebuilt from empty, so nothing of an old pin survives.
  // Without a stamp it is a half-made one of ours or someone's own: add to it, never wipe it.
  const venv = [env.basePython, '-m', 'venv', ...(previous === undefined ? [] : ['--clear']), env.directory];
  await runStep(venv, (outcome, output) => creationError(env, venv, outcome, output));
  const pip = [
    env.python,
    '-m',
    'pip',
    'install',
    // pip's own lines (one "Collecting" per package) feed the progress; its bars would flood a log.
    '--progress-bar',
    'off',
    '--disable-pip-version-check',
    '--no-input',
    '--require-hashes',
    '--no-deps',
    '--only-binary',
    ':all:',
    '-r',
    env.requirements,
  ];
  const packages = lockedRequirements(await readFile(env.requirements, 'utf8')).length;
  await runStep(
    pip,
    (outcome) =>
      new RequirementsInstallError(
        `pip could not install ${shown(env.requirements)} into ${shown(env.directory)} (${outcome}); run by hand: ${commandLine(pip)}`,
        commandLine(pip),
      ),
    new InstallProgress(packages, env.onProgress).onPipLine,
  );
  const check = [env.python, '-m', 'pip', 'check', '--disable-pip-version-check'];
  await runStep(
    check,
    (outcome) =>
      new RequirementsInstallError(
        `${shown(env.requirements)} is not a complete lock (${outcome}); regenerate it with pip-compile (docs/emulator.md); run by hand: ${commandLine(check)}`,
        commandLine(check),
      ),
  );
  const partial = `${env.stamp}.${process.pid}.tmp`;
  await writeFile(partial, `${digest}\n`);
  await rename(partial, env.stamp);
}

function creationError(env: Environment, venv: string[], outcome: string, output: string): PythonEnvironmentError {
  // Debian's venv explains a missing ensurepip on stdout, over several lines.
  const hint = /ensurepip is not\s+available/.test(output)
    ? '; ensurepip is not available: on Debian/Ubuntu, sudo apt-get install python3-venv'
    : '';
  return new VirtualEnvironmentCreationError(
    `${env.basePython} could not create ${shown(env.directory)} (${outcome})${hint}; run by hand: ${commandLine(venv)}`,
    commandLine(venv),
  );
}

/** One requirement of a lock: `name==version`, and whether the lock was asked for it (not a dependency). */
interface LockedRequirement {
  readonly name: string;
  readonly version: string;
  readonly direct: boolean;
}

/**
 * The requirements of a pip requirements file, continuation lines joined. pip-compile marks each
 * requirement it was asked for with a `via -r <input file>` comment below it; in a file without
 * such comments (written by hand) every requirement counts as asked for.
 */
export function lockedRequirements(text: string): LockedRequirement[] {
  const entries: Array<{ name: string; version: string; direct: boolean }> = [];
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) {
      const last = entries.at(-1);
      if (last && /(^|\s)-r\s/.test(trimmed.slice(1))) last.direct = true;
      continue;
    }
    const requirement = /^([\w.-]+)(\[[^\]]*\])?==(\S+)/.exec(trimmed);
    if (requirement) entries.push({ name: requirement[1]!, version: requirement[3]!, direct: false });
  }
  const annotated = entries.some((e) => e.direct);
  return entries.map((e) => ({ ...e, direct: annotated ? e.direct : true }));
}

/** "moto 5.2.1, cheroot 11.1.2 and 60 dependencies": what the progress line says is being installed. */
async function summaryOf(requirements: string): Promise<string> {
  const entries = lockedRequirements(await readFile(requirements, 'utf8'));
  const named = entries.filter((e) => e.direct).map((e) => `${e.name} ${e.version}`);
  const rest = entries.length - named.length;
  return `${named.join(', ')}${rest > 0 ? ` and ${rest} ${rest === 1 ? 'dependency' : 'dependencies'}, hash-checked,` : ''}`;
}

/**
 * pip's progress through a lock, in one unit (packages): a line when it has fetched more, at most
 * every `everyMs` (a short install prints none), and one when it starts installing them.
 */
export class InstallProgress {
  private fetched = 0;
  private last: number;

  constructor(
    private readonly packages: number,
    private readonly print: (line: string) => void,
    private readonly now: () => number = Date.now,
    private readonly everyMs = 5_000,
  ) {
    this.last = now();
  }

  readonly onPipLine = (line: string): void => {
    if (line.startsWith('Collecting ')) this.fetched++;
    const installing = line.startsWith('Installing collected packages');
    if (!installing && !line.startsWith('Collecting ')) return;
    if (this.now() - this.last < this.everyMs) return;
    this.last = this.now();
    this.print(
      installing
        ? `emulator: ${this.fetched} of ${this.packages} packages fetched; installing them…`
        : `emulator: ${this.fetched} of ${this.packages} packages fetched…`,
    );
  };
}

/** A path as the reader typed it: relative to the working directory when inside it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

const commandLine = (argv: string[]) =>
  argv
    .map((a) => (isAbsolute(a) ? shown(a) : a))
    .map((a) => (/^[\w./=:-]+$/.test(a) ? a : JSON.stringify(a)))
    .join(' ');

/**
 * Runs one step to completion. A failure becomes the step's error from its outcome (exit status and
 * the output's last line, which is where pip and venv say what went wrong) and its output's tail.
 */
function runStep(
  argv: string[],
  failure: (outcome: string, output: string) => PythonEnvironmentError,
  onLine?: (line: string) => void,
): Promise<void> {
  const [command, ...args] = argv as [string, ...string[]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    if (onLine) {
      // One partial line per stream: pip writes its progress to stdout, its warnings to stderr.
      for (const stream of [child.stdout, child.stderr]) {
        let partial = '';
        stream.on('data', (chunk: Buffer) => {
          const lines = (partial + chunk.toString()).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) onLine(line.trim());
        });
      }
    }
    child.once('error', (err) => reject(notFound(command, err)));
    child.once('close', (code, signal) => {
      if (code === 0) return resolve();
      const last = output.trim().split('\n').at(-1)?.trim() ?? '';
      reject(failure(`${signal ?? `exit ${code}`}${last ? `: ${last}` : ''}`, output));
    });
  });
}

function notFound(python: string, err: Error): PythonNotFoundError {
  const command = `${python} --version`;
  return new PythonNotFoundError(
    `cannot run "${python}" to make the emulator's Python environment (${err.message}); install Python 3 with its venv module, so that \`${command}\` works`,
    command,
  );
}

/** The install lock (install-lock.ts), its failures as this module's errors. */
async function withLock<T>(env: Environment, work: () => Promise<T>): Promise<T> {
  try {
    return await withInstallLock(env.lockFile, env.basePython, work);
  } catch (err) {
    if (!(err instanceof InstallLockError)) throw err;
    throw err.pythonMissing
      ? notFound(env.basePython, err.cause as Error)
      : new PythonEnvironmentError(err.message, err.command);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  ensurePythonEnvironment().then(
    (python) => console.log(python),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    },
  );
}
