import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_REQUIREMENTS,
  ensurePythonEnvironment,
  lockedRequirements,
  type PythonEnvironmentOptions,
  PythonNotFoundError,
  RequirementsInstallError,
  VirtualEnvironmentCreationError,
} from '../../../src/emulator/python-environment.ts';

// Real venv and pip, with a tiny pure-Python package (six, one module) from the package index in
// place of moto: the mechanism is the same, the install takes seconds instead of half a minute.
// Every requirement carries the sha256 of its wheel on the index, as the project's lock does.
const run = promisify(execFile);
const SIX_16 = 'six==1.16.0 --hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n';
const SIX_17 = 'six==1.17.0 --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274\n';
/** python-dateutil needs six: a lock as pip-compile writes it, the asked-for package marked `via -r`. */
const DATEUTIL =
  'python-dateutil==2.9.0.post0 \\\n    --hash=sha256:a8b2bc7bffae282281c8140a97d3aa9c14da0b136dfe83f850eea9a5f7470427\n    # via -r requirements.in\n';
const SIX_FOR_DATEUTIL =
  'six==1.17.0 \\\n    --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274\n    # via python-dateutil\n';
const MODULE = fileURLToPath(new URL('../../../src/emulator/python-environment.ts', import.meta.url));
const INSTALL = { timeout: 300_000 };

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'python-environment-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** The progress lines that announce an install: the rest say how far pip got (every few seconds of a slow one). */
const headlines = (lines: readonly string[]) => lines.filter((l) => !/^emulator: \d+ of \d+ packages fetched/.test(l));

/** A fresh environment location, its requirements file, and the progress lines it printed. */
async function scenario(name: string, requirements: string) {
  const file = join(root, `${name}.txt`);
  await writeFile(file, requirements);
  const progress: string[] = [];
  const options: PythonEnvironmentOptions = {
    directory: join(root, name),
    requirements: file,
    onProgress: (line) => progress.push(line),
  };
  return { file, progress, options };
}

async function sixVersion(python: string): Promise<string> {
  const { stdout } = await run(python, ['-c', 'import six; print(six.__version__)']);
  return stdout.trim();
}

// One environment through its life: a first install that fails, the retry that builds it, reuse,
// and a changed pin. Sequential, because each step starts from the state the previous one left
// (and each build costs a venv: seconds of ensurepip).
describe('an environment from first use to a changed pin', () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  let stamp: string;
  let python: string;
  beforeAll(async () => {
    s = await scenario('life', `${SIX_16}this is not a requirement!\n`);
    stamp = join(s.options.directory!, 'requirements.sha256');
  });

  it('a failed pip install names the command to run by hand and leaves no stamp', INSTALL, async () => {
    const err = await ensurePythonEnvironment(s.options).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(RequirementsInstallError);
    const { message, command } = err as RequirementsInstallError;
    expect(command).toMatch(
      /life\/bin\/python -m pip install .* --require-hashes --no-deps --only-binary :all: -r \S+life\.txt$/,
    );
    expect(message).toContain(`run by hand: ${command}`);
    expect(message.split('\n')).toHaveLength(1);
    await expect(readFile(stamp)).rejects.toThrow(/ENOENT/);
  });

  it('the next call builds it, with one line announcing it, and stamps it', INSTALL, async () => {
    await writeFile(s.file, SIX_16);
    s.progress.length = 0;

    python = await ensurePythonEnvironment(s.options);

    expect(await sixVersion(python)).toBe('1.16.0');
    expect(headlines(s.progress)).toEqual([
      expect.stringMatching(/^emulator: installing six 1\.16\.0 into \S+life \(first run only\)…$/),
    ]);
    await expect(readFile(stamp, 'utf8')).resolves.toMatch(/^[0-9a-f]{64}\n$/);
  });

  it('reuses it without starting a process: no pip, no base Python needed', async () => {
    // Prepare: an environment no install could run in.
    await run(python, ['-c', 'import pip, shutil, os; shutil.rmtree(os.path.dirname(pip.__file__))']);
    s.progress.length = 0;

    // Act
    const again = await ensurePythonEnvironment({ ...s.options, basePython: join(root, 'no-such-python') });

    // Assess
    expect(again).toBe(python);
    expect(s.progress).toEqual([]);
    expect(await sixVersion(again)).toBe('1.16.0');
  });

  it('rebuilds it from empty when the requirements change', INSTALL, async () => {
    await writeFile(s.file, SIX_17);
    s.progress.length = 0;

    const rebuilt = await ensurePythonEnvironment(s.options);

    expect(rebuilt).toBe(python);
    expect(headlines(s.progress)).toEqual([
      expect.stringMatching(/^emulator: reinstalling six 1\.17\.0 into \S+ \(life\.txt changed\)…$/),
    ]);
    expect(await sixVersion(rebuilt)).toBe('1.17.0');
    await run(rebuilt, ['-m', 'pip', '--version']); // the emptied environment got its pip back
  });
});

// Two environments, each through refusals to a build (a failed install leaves no stamp, and the
// next call adds to the half-made environment): each venv costs seconds of ensurepip.
describe('a lock pip cannot vouch for', () => {
  const stampOf = (s: Awaited<ReturnType<typeof scenario>>) => join(s.options.directory!, 'requirements.sha256');
  const pythonOf = (s: Awaited<ReturnType<typeof scenario>>) => join(s.options.directory!, 'bin', 'python');

  it('refuses a requirement without a hash, and one whose file is not the one the hash names', INSTALL, async () => {
    const s = await scenario('untrusted', 'six==1.16.0\n');

    const unhashed = await ensurePythonEnvironment(s.options).catch((e: unknown) => e);
    await writeFile(s.file, `six==1.16.0 --hash=sha256:${'0'.repeat(64)}\n`);
    const mismatched = await ensurePythonEnvironment(s.options).catch((e: unknown) => e);

    expect(unhashed).toBeInstanceOf(RequirementsInstallError);
    expect((unhashed as Error).message).toMatch(/pip could not install \S+untrusted\.txt .*hash/i);
    expect(mismatched).toBeInstanceOf(RequirementsInstallError);
    expect((mismatched as Error).message).toMatch(/pip could not install \S+untrusted\.txt/);
    await expect(readFile(stampOf(s))).rejects.toThrow(/ENOENT/);
    await expect(sixVersion(pythonOf(s))).rejects.toThrow(/No module named/);
  });

  it(
    'fails a lock that leaves a dependency out, naming it, then installs the complete one, announced in one line',
    INSTALL,
    async () => {
      const s = await scenario('dateutil', DATEUTIL);

      const incomplete = await ensurePythonEnvironment(s.options).catch((e: unknown) => e);
      const sixBefore = await sixVersion(pythonOf(s)).catch((e: Error) => e.message);
      await writeFile(s.file, `${DATEUTIL}${SIX_FOR_DATEUTIL}`);
      s.progress.length = 0;
      const python = await ensurePythonEnvironment(s.options);

      // Assess: the missing dependency named, none fetched from the index in its place, no stamp; then the build.
      expect(incomplete).toBeInstanceOf(RequirementsInstallError);
      expect((incomplete as Error).message).toMatch(
        /dateutil\.txt is not a complete lock \(exit 1: python-dateutil 2\.9\.0\.post0 requires six/,
      );
      expect((incomplete as RequirementsInstallError).command).toMatch(/dateutil\/bin\/python -m pip check/);
      expect(sixBefore).toMatch(/No module named/);
      expect(await sixVersion(python)).toBe('1.17.0');
      expect(headlines(s.progress)).toEqual([
        expect.stringMatching(
          /^emulator: installing python-dateutil 2\.9\.0\.post0 and 1 dependency, hash-checked, into \S+dateutil \(first run only\)…$/,
        ),
      ]);
      await expect(readFile(stampOf(s), 'utf8')).resolves.toMatch(/^[0-9a-f]{64}\n$/);
    },
  );
});

describe('concurrent first use', () => {
  it('installs once when two callers here and one in another process start together', INSTALL, async () => {
    // Prepare
    const s = await scenario('concurrent', SIX_16);
    const script = `const { ensurePythonEnvironment } = await import(${JSON.stringify(MODULE)});
      console.log(await ensurePythonEnvironment(${JSON.stringify({ directory: s.options.directory, requirements: s.file })}));`;

    // Act
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let childStdout = '';
    let childStderr = '';
    child.stdout.on('data', (d: Buffer) => (childStdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (childStderr += d.toString()));
    const childExit = new Promise<number | null>((resolve) => child.once('close', resolve));
    const here = await Promise.all([ensurePythonEnvironment(s.options), ensurePythonEnvironment(s.options)]);

    // Assess
    expect(await childExit).toBe(0);
    expect(new Set([...here, childStdout.trim()])).toEqual(new Set([join(s.options.directory!, 'bin', 'python')]));
    const lines = [...s.progress, ...childStderr.split('\n').filter((l) => l.startsWith('emulator:'))];
    expect(headlines(lines)).toHaveLength(1);
    expect(await sixVersion(here[0])).toBe('1.16.0');
  });
});

describe('a base Python that cannot make the environment', () => {
  it('a Python without ensurepip is told to install python3-venv', async () => {
    // Stands in for Debian's python3 without the python3-venv package: it runs the lock holder
    // (`-c`) and answers `-m venv` the way Debian's venv does, on stdout.
    const s = await scenario('no-ensurepip', SIX_16);
    const python = join(root, 'python-without-ensurepip');
    await writeFile(
      python,
      '#!/bin/sh\n[ "$1" = -c ] && exec python3 "$@"\necho "The virtual environment was not created successfully because ensurepip is not"\necho "available.  On Debian/Ubuntu systems, you need to install the python3-venv"\nexit 1\n',
    );
    await chmod(python, 0o755);

    const err = await ensurePythonEnvironment({ ...s.options, basePython: python }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(VirtualEnvironmentCreationError);
    expect((err as VirtualEnvironmentCreationError).message).toMatch(
      /ensurepip is not available: on Debian\/Ubuntu, sudo apt-get install python3-venv; run by hand: \S+python-without-ensurepip -m venv /,
    );
    expect((err as VirtualEnvironmentCreationError).command).toMatch(
      /python-without-ensurepip -m venv \S+no-ensurepip$/,
    );
  });

  it('a missing base Python is PythonNotFoundError', async () => {
    const s = await scenario('no-python', SIX_16);

    const err = await ensurePythonEnvironment({ ...s.options, basePython: join(root, 'no-such-python') }).catch(
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(PythonNotFoundError);
    expect((err as Error).message).toMatch(/cannot run "\S+no-such-python".*install Python 3 with its venv module/);
    expect(s.progress).toEqual([]);
  });
});

describe("the project's own environment", () => {
  it('holds moto 5.2.1, the version the launcher patches', INSTALL, async () => {
    const python = await ensurePythonEnvironment();

    const { stdout } = await run(python, ['-c', 'import moto; print(moto.__version__)']);

    expect(python).toBe(fileURLToPath(new URL('../../../../../.venv/bin/python', import.meta.url)));
    expect(stdout.trim()).toBe('5.2.1');
  });

  it(
    'holds exactly the packages the lock names, at their versions, and nothing else but the pip that installed them',
    INSTALL,
    async () => {
      const python = await ensurePythonEnvironment();

      const { stdout } = await run(python, ['-m', 'pip', 'list', '--format=json', '--disable-pip-version-check']);

      // PEP 503 names: pip list says `Flask`, `jaraco.functools`; the lock `flask`, `jaraco-functools`.
      const normal = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');
      const installed = (JSON.parse(stdout) as Array<{ name: string; version: string }>)
        .filter((p) => normal(p.name) !== 'pip')
        .map((p) => `${normal(p.name)}==${p.version}`)
        .sort();
      const locked = lockedRequirements(await readFile(EMULATOR_REQUIREMENTS, 'utf8'))
        .map((r) => `${normal(r.name)}==${r.version}`)
        .sort();
      expect(locked.length).toBeGreaterThan(50);
      expect(installed).toEqual(locked);
    },
  );
});
