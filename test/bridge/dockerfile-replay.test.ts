import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DockerfileStepFailedError,
  replayDockerfile,
  UnsupportedDockerfileInstructionError,
} from '../../scripts/dockerfile-replay.ts';

/**
 * The Dockerfile replay's own rules, on small Dockerfiles: what it models behaves as `docker build`
 * does, and anything else is refused with its line before a single step runs, so a change to
 * bridge/Dockerfile cannot be skipped silently.
 */
const BASE = 'FROM public.ecr.aws/docker/library/node:24-slim';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'dockerfile-replay-'));
  mkdirSync(path.join(dir, 'context', 'src', 'nested'), { recursive: true });
  writeFileSync(path.join(dir, 'context', 'src', 'nested', 'a.txt'), 'a');
  writeFileSync(path.join(dir, 'context', 'package.json'), '{}');
  // No RUN here installs packages: an empty npm cache spares seeding this machine's into each stage.
  for (const part of ['index-v5', 'content-v2'])
    mkdirSync(path.join(dir, 'npm-cache', '_cacache', part), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

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
  it("maps WORKDIR and COPY into each stage, runs RUN with the stage's ENV on Node 24, and copies between stages", async () => {
    const image = await replay(
      [
        `${BASE} AS build`,
        'ENV GREETING=hello',
        'WORKDIR /work',
        'COPY src ./src',
        'COPY package.json ./',
        'RUN echo "$GREETING" > greeting.txt && node --version > node.txt && pwd > pwd.txt',
        BASE,
        'WORKDIR /app',
        'COPY --from=build /work/greeting.txt /work/node.txt ./',
        'USER node',
        'CMD ["node", "-e", "1"]',
      ].join('\n'),
    );

    const work = path.join(dir, 'out', 'build', 'work');
    expect(readFileSync(path.join(work, 'src', 'nested', 'a.txt'), 'utf8')).toBe('a');
    expect(existsSync(path.join(work, 'package.json'))).toBe(true);
    expect(readFileSync(path.join(work, 'pwd.txt'), 'utf8').trim()).toBe(work);
    expect(image).toMatchObject({
      root: path.join(dir, 'out', '1'),
      workdir: '/app',
      user: 'node',
      cmd: ['node', '-e', '1'],
      env: {},
    });
    expect(readFileSync(path.join(image.root, 'app', 'greeting.txt'), 'utf8')).toBe('hello\n');
    expect(readFileSync(path.join(image.root, 'app', 'node.txt'), 'utf8')).toMatch(/^v24\./);
    expect(image.steps.map((s) => [s.stage, s.line])).toEqual([
      ['build', 1],
      ['build', 2],
      ['build', 3],
      ['build', 4],
      ['build', 5],
      ['build', 6],
      ['1', 7],
      ['1', 8],
      ['1', 9],
      ['1', 10],
      ['1', 11],
    ]);
  });

  it.each([
    ['an instruction it does not model', 'ARG NODE_VERSION=24', /ARG is not modelled/],
    ['another base image', 'FROM node:22-slim', /stands in only for/],
    ['a RUN flag', 'RUN --mount=type=cache,target=/root/.npm npm ci', /--mount/],
    ['a RUN naming an absolute path', 'RUN cp package.json /etc/', /absolute path/],
    ['a COPY flag other than --from', 'COPY --chown=node:node package.json ./', /--chown/],
    ['COPY --from a stage that does not exist', 'COPY --from=builder /src/dist ./', /names no earlier stage/],
    ['a user the base image does not have', 'USER app', /users are root, node/],
    ['the shell form of CMD', 'CMD node bridge.mjs', /exec \(JSON\) form/],
  ])('refuses %s with its line, before any step runs', async (_, line, reason) => {
    const replayed = replay(`${BASE}\nWORKDIR /app\n${line}\n`);

    await expect(replayed).rejects.toThrow(UnsupportedDockerfileInstructionError);
    await expect(replayed).rejects.toMatchObject({ line: 3, message: expect.stringMatching(reason) });
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
  });

  it('fails a RUN that exits non-zero with its line and output', async () => {
    const replayed = replay(`${BASE}\nRUN echo broken >&2 && exit 3\n`);

    await expect(replayed).rejects.toThrow(DockerfileStepFailedError);
    await expect(replayed).rejects.toMatchObject({ line: 2, message: expect.stringMatching(/exited 3[\s\S]*broken/) });
  });
});
