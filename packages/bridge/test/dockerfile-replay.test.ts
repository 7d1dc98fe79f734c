import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import {
  DockerfileStepFailedError,
  replayDockerfile,
  startImageCommand,
  UnsupportedDockerfileInstructionError,
} from '@rocketmq-lambda/tools/image/dockerfile-replay.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * The Dockerfile replay's own rules, on small Dockerfiles: what it models behaves as `docker build`
 * does (RUN inside the stage's own root, as its user), and anything else is refused with its line
 * before a single step runs, so a change to packages/bridge/Dockerfile cannot be skipped silently. The
 * stages' root filesystem is the smallest that runs a shell: this machine's /bin/sh and the
 * libraries it loads, with an /etc/passwd of root and node.
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'dockerfile-replay-'));
  chmodSync(dir, 0o755);
  const context = path.join(dir, 'context');
  mkdirSync(path.join(context, 'src', 'nested'), { recursive: true });
  writeFileSync(path.join(context, 'src', 'nested', 'a.txt'), 'a');
  writeFileSync(path.join(context, 'package.json'), '{}');
  shellRootfs(path.join(context, 'rootfs'));
  // No RUN here installs packages: an empty npm cache spares seeding this machine's into each stage.
  for (const part of ['index-v5', 'content-v2'])
    mkdirSync(path.join(dir, 'npm-cache', '_cacache', part), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** /bin/sh with the shared libraries `ldd` names, /tmp, and the users root and node (1000). */
function shellRootfs(root: string): void {
  const needed = execFileSync('ldd', ['/bin/sh'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /(\/\S+) \(0x/.exec(line)?.[1])
    .filter((file): file is string => file !== undefined);
  for (const file of ['/bin/sh', ...needed]) {
    mkdirSync(path.join(root, path.dirname(file)), { recursive: true });
    copyFileSync(realpathSync(file), path.join(root, file));
    chmodSync(path.join(root, file), 0o755);
  }
  mkdirSync(path.join(root, 'etc'));
  writeFileSync(
    path.join(root, 'etc', 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n',
  );
  mkdirSync(path.join(root, 'tmp'));
  chmodSync(path.join(root, 'tmp'), 0o1777);
}

function replay(dockerfile: string) {
  writeFileSync(path.join(dir, 'context', 'Dockerfile'), dockerfile);
  return replayDockerfile({
    context: path.join(dir, 'context'),
    dockerfile: 'Dockerfile',
    out: path.join(dir, 'out'),
    npmCache: path.join(dir, 'npm-cache'),
  });
}

describe('the Dockerfile replay', () => {
  it("maps WORKDIR and COPY into each stage, runs RUN inside the stage's root with its ENV and user, and copies between stages", async () => {
    const image = await replay(
      [
        'FROM scratch AS build',
        'COPY rootfs/ /',
        'ENV GREETING=hello',
        'WORKDIR /work',
        'COPY src ./src',
        'COPY package.json ./',
        'RUN echo "$GREETING" > greeting.txt && echo "$PWD $HOME" > where.txt',
        'USER node',
        'RUN ["/bin/sh", "-c", "echo mine > /tmp/owned.txt"]',
        'FROM scratch',
        'WORKDIR /app',
        'COPY --from=build /work/greeting.txt /work/where.txt ./',
        'USER 1000',
        'CMD ["node", "-e", "1"]',
      ].join('\n'),
    );

    const build = path.join(dir, 'out', 'build');
    expect(readFileSync(path.join(build, 'work', 'src', 'nested', 'a.txt'), 'utf8')).toBe('a');
    expect(existsSync(path.join(build, 'work', 'package.json'))).toBe(true);
    // The shell saw the stage's root as `/`, and root's home from the stage's own /etc/passwd.
    expect(readFileSync(path.join(build, 'work', 'where.txt'), 'utf8')).toBe('/work /root\n');
    expect(statSync(path.join(build, 'tmp', 'owned.txt')).uid).toBe(1000);
    expect(image).toMatchObject({
      root: path.join(dir, 'out', '1'),
      workdir: '/app',
      user: '1000',
      cmd: ['node', '-e', '1'],
      env: {},
    });
    expect(readFileSync(path.join(image.root, 'app', 'greeting.txt'), 'utf8')).toBe('hello\n');
    expect(image.steps.map((s) => [s.stage, s.line])).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((line) => ['build', line]),
      ...[10, 11, 12, 13, 14].map((line) => ['1', line]),
    ]);
  });

  it('runs a shell-form RUN with the image’s /bin/sh, so a stage without one fails as docker build would', async () => {
    const replayed = replay('FROM scratch\nWORKDIR /app\nRUN echo hello\n');

    await expect(replayed).rejects.toThrow(DockerfileStepFailedError);
    await expect(replayed).rejects.toMatchObject({ line: 3, message: expect.stringMatching(/\/bin\/sh/) });
  });

  it.each([
    ['an instruction it does not model', 'ARG NODE_VERSION=24', /ARG is not modelled/],
    ['a base image other than scratch', 'FROM public.ecr.aws/docker/library/node:24-slim', /only FROM scratch/],
    ['a RUN flag', 'RUN --mount=type=cache,target=/root/.npm npm ci', /--mount/],
    ['a COPY flag other than --from', 'COPY --chown=node:node package.json ./', /--chown/],
    ['COPY --from a stage that does not exist', 'COPY --from=builder /src/dist ./', /names no earlier stage/],
    ['a USER that is neither a name nor a uid', 'USER "node user"', /user name or uid/],
    ['the shell form of CMD', 'CMD node bridge.mjs', /exec \(JSON\) form/],
  ])('refuses %s with its line, before any step runs', async (_, line, reason) => {
    const replayed = replay(`FROM scratch\nWORKDIR /app\n${line}\n`);

    await expect(replayed).rejects.toThrow(UnsupportedDockerfileInstructionError);
    await expect(replayed).rejects.toMatchObject({ line: 3, message: expect.stringMatching(reason) });
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
  });

  it("fails a USER the stage's /etc/passwd does not have, with its line", async () => {
    const replayed = replay('FROM scratch\nCOPY rootfs/ /\nUSER app\n');

    await expect(replayed).rejects.toThrow(DockerfileStepFailedError);
    await expect(replayed).rejects.toMatchObject({
      line: 3,
      message: expect.stringMatching(/unable to find user app/),
    });
  });

  it('fails a RUN that exits non-zero with its line and output', async () => {
    const replayed = replay('FROM scratch\nCOPY rootfs/ /\nRUN echo broken >&2 && exit 3\n');

    await expect(replayed).rejects.toThrow(DockerfileStepFailedError);
    await expect(replayed).rejects.toMatchObject({ line: 3, message: expect.stringMatching(/exited 3[\s\S]*broken/) });
  });
});

describe('a command in the replayed image', () => {
  it('runs inside the image as its user, in its WORKDIR, with its ENV under the given one; a read-only root stays unwritten', async () => {
    const image = await replay('FROM scratch\nCOPY rootfs/ /\nENV A=image B=image\nWORKDIR /app\nUSER node\n');
    const script = 'echo "$PWD $HOME $A $B"; echo x > /app/f && echo wrote; echo y > /tmp/f && echo wrote tmp';

    const run = async (readOnlyRoot: boolean) => {
      const child = startImageCommand(image, { B: 'task' }, ['/bin/sh', '-c', script], { readOnlyRoot });
      const [out, err] = await Promise.all([text(child.stdout!), text(child.stderr!)]);
      return { out, err };
    };
    const readOnly = await run(true);
    const writtenReadOnly = existsSync(path.join(image.root, 'tmp', 'f'));
    const writable = await run(false);

    expect(readOnly.out).toBe('/app /home/node image task\n');
    expect(readOnly.err).toMatch(/Read-only file system[\s\S]*Read-only file system/);
    expect(writtenReadOnly).toBe(false);
    // Without it, node (uid 1000) still cannot write root's /app, but may write /tmp.
    expect(writable.out).toBe('/app /home/node image task\nwrote tmp\n');
    expect(statSync(path.join(image.root, 'tmp', 'f')).uid).toBe(1000);
  });
});
