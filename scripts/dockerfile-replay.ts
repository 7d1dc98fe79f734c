import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { constants, homedir } from 'node:os';
import path from 'node:path';
import {
  Cmd,
  Copy,
  type Dockerfile,
  DockerfileParser,
  Env,
  From,
  type Instruction,
  Run,
  Stopsignal,
  User,
  Workdir,
} from 'dockerfile-ast';

/**
 * A Dockerfile build replayed without Docker, for images built on the official Node images. Each
 * stage's `/` is a directory of its own; WORKDIR and COPY paths are mapped into it, RUN lines run
 * with `sh -c` in the mapped WORKDIR with the stage's ENV and user, and the base image's Node is
 * this machine's Node of the same major version (the `node` devDependency), first on PATH.
 * Parsing is dockerfile-ast's (line continuations, quoting, flags, JSON forms); an instruction,
 * flag or form the replay does not model is refused with its line, so a later change to the
 * Dockerfile is never skipped silently.
 *
 * Where it differs from `docker build`, and why that is safe for what it is used for:
 * - No chroot: only WORKDIR and COPY paths are mapped, so a RUN line naming an absolute path is
 *   refused rather than let loose on this machine's filesystem.
 * - The registry: npm in RUN lines works offline, from a cache (`$HOME/.npm` of the stage) seeded
 *   from this machine's, which `npm ci` filled with what the lockfile names. npm checks every
 *   tarball against the lockfile's integrity, so the installed bytes are those the registry
 *   serves. Offline because the bridge's tests run in a loopback-only network namespace, and
 *   because this machine reaches the registry only with its own npm settings (a CA file), which
 *   a stage's HOME does not hold. A package missing from the cache fails the step (ENOTCACHED).
 * - The base image's system files (`/bin/sh`, npm) are this machine's.
 */

/** Base of the replay's errors. */
export class DockerfileReplayError extends Error {
  override readonly name: string = 'DockerfileReplayError';
}

/** An instruction, flag or form the replay does not model; `line` is 1-based. */
export class UnsupportedDockerfileInstructionError extends DockerfileReplayError {
  override readonly name = 'UnsupportedDockerfileInstructionError';
  constructor(
    readonly line: number,
    readonly instruction: string,
    reason: string,
  ) {
    super(`Dockerfile line ${line} \`${instruction}\`: ${reason}`);
  }
}

/** A step that was understood and failed: a RUN exiting non-zero, a COPY source missing from the context. */
export class DockerfileStepFailedError extends DockerfileReplayError {
  override readonly name = 'DockerfileStepFailedError';
  constructor(
    readonly line: number,
    readonly instruction: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`Dockerfile line ${line} \`${instruction}\` failed: ${reason}`, options);
  }
}

export interface ReplayOptions {
  /** The build context (the directory `docker build` would be given). */
  readonly context: string;
  /** The Dockerfile's path inside the context. */
  readonly dockerfile: string;
  /**
   * Where the stages' roots go, one directory per stage. The image's users must be able to reach
   * it (its parents world-traversable), as they would reach `/`.
   */
  readonly out: string;
  /** This machine's npm cache, seeded into each stage (default: npm's, `~/.npm`). */
  readonly npmCache?: string;
  readonly onStep?: (step: ReplayStep) => void;
}

export interface ReplayStep {
  readonly stage: string;
  readonly line: number;
  readonly instruction: string;
  readonly ms: number;
}

/** The final stage: its filesystem and the configuration a container runtime reads. */
export interface ReplayedImage {
  /** The directory standing for the image's `/`. */
  readonly root: string;
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly user: string;
  readonly stopSignal: NodeJS.Signals;
  readonly cmd: readonly string[];
  readonly steps: readonly ReplayStep[];
}

interface ImageUser {
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** The base images the replay stands in for, with the Node major version each one has. */
const BASE_IMAGES: Readonly<Record<string, { readonly nodeMajor: number }>> = {
  'public.ecr.aws/docker/library/node:24-slim': { nodeMajor: 24 },
};

/** The users of the official Node images (their `/etc/passwd`). */
const USERS: Readonly<Record<string, ImageUser>> = {
  root: { uid: 0, gid: 0, home: '/root' },
  node: { uid: 1000, gid: 1000, home: '/home/node' },
};

/** The official Node images' PATH; the replay puts this machine's Node in front of it. */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A path argument starting at `/`: it would name this machine's file, not the stage's. */
const ABSOLUTE_PATH = /(^|[\s='"])\//;

/** Switching to the image's user needs root; anyone else replays as themselves (they own every file of the replay). */
const SWITCHES_USER = process.getuid?.() === 0;

interface Stage {
  readonly name: string;
  readonly root: string;
  workdir: string;
  env: Record<string, string>;
  user: string;
  stopSignal: NodeJS.Signals;
  cmd: readonly string[];
}

/** What one instruction does to the stage it belongs to, given the stages before it (for `COPY --from`). */
type StageAction = (stage: Stage, earlier: readonly Stage[]) => void | Promise<void>;

/** An instruction checked and ready to run: FROM starts a stage, any other acts on the latest. */
interface PlannedStep {
  readonly line: number;
  readonly instruction: string;
  readonly run: (stages: Stage[]) => void | Promise<void>;
}

export async function replayDockerfile(options: ReplayOptions): Promise<ReplayedImage> {
  if (existsSync(path.join(options.context, '.dockerignore'))) {
    throw new DockerfileReplayError(
      `${options.context} holds a .dockerignore, which docker build applies and this replay does not`,
    );
  }
  const planned = plan(
    DockerfileParser.parse(readFileSync(path.join(options.context, options.dockerfile), 'utf8')),
    options,
  );
  mkdirSync(options.out, { recursive: true });
  chmodSync(options.out, 0o755);
  const stages: Stage[] = [];
  const steps: ReplayStep[] = [];
  for (const { line, instruction, run } of planned) {
    const started = performance.now();
    try {
      await run(stages);
    } catch (error) {
      if (error instanceof DockerfileReplayError) throw error;
      throw new DockerfileStepFailedError(line, instruction, error instanceof Error ? error.message : String(error), {
        cause: error,
      });
    }
    const step = { stage: stages.at(-1)!.name, line, instruction, ms: Math.round(performance.now() - started) };
    steps.push(step);
    options.onStep?.(step);
  }
  const image = stages.at(-1);
  if (!image) throw new DockerfileReplayError(`${options.dockerfile} has no FROM`);
  return {
    root: image.root,
    workdir: image.workdir,
    env: image.env,
    user: image.user,
    stopSignal: image.stopSignal,
    cmd: image.cmd,
    steps,
  };
}

/**
 * Starts a command in the image as a container runtime would: in its WORKDIR, as its USER, with
 * the image's ENV under `env` (which wins, as `docker run -e` and a task definition's environment
 * do). The command is the image's CMD unless given, as with `docker run image <command>`.
 */
export function startImageCommand(
  image: ReplayedImage,
  env: Readonly<Record<string, string>>,
  command: readonly string[] = image.cmd,
): ChildProcess {
  const [file, ...args] = command;
  if (!file) throw new DockerfileReplayError('the image has an empty CMD');
  const user = USERS[image.user]!;
  return spawn(file, args, {
    cwd: hostPath(image.root, image.workdir),
    env: { ...stageEnvironment(image.root, image.env, user), ...env },
    ...(SWITCHES_USER ? { uid: user.uid, gid: user.gid } : {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Every instruction is checked before any runs, so a refusal names its line at once, not after a minute of `npm ci`.
 */
function plan(dockerfile: Dockerfile, options: ReplayOptions): PlannedStep[] {
  const stageNames: string[] = [];
  return dockerfile.getInstructions().map((instruction) => {
    const step = { line: lineOf(instruction), instruction: instruction.toString() };
    if (instruction instanceof From) {
      const name = checkBaseImage(instruction, stageNames.length);
      stageNames.push(name);
      return {
        ...step,
        run: (stages: Stage[]) => {
          stages.push(startStage(name, options));
        },
      };
    }
    if (stageNames.length === 0) throw refuse(instruction, 'comes before the first FROM');
    const action = planAction(instruction, stageNames, options.context);
    return { ...step, run: (stages: Stage[]) => action(stages.at(-1)!, stages.slice(0, -1)) };
  });
}

function planAction(instruction: Instruction, stageNames: readonly string[], context: string): StageAction {
  if (instruction instanceof Run) return planRun(instruction);
  if (instruction instanceof Copy) return planCopy(instruction, stageNames, context);
  if (instruction instanceof Workdir) return planWorkdir(instruction);
  if (instruction instanceof Env) return planEnv(instruction);
  if (instruction instanceof User) return planUser(instruction);
  if (instruction instanceof Stopsignal) return planStopSignal(instruction);
  if (instruction instanceof Cmd) return planCmd(instruction);
  throw refuse(instruction, `${instruction.getKeyword()} is not modelled by this replay`);
}

/** The stage's name (its `AS`, else its index), once the image is one the replay stands in for. */
function checkBaseImage(instruction: From, index: number): string {
  refuseFlags(instruction, []);
  const base = BASE_IMAGES[instruction.getImage() ?? ''];
  if (!base) throw refuse(instruction, `the replay stands in only for ${Object.keys(BASE_IMAGES).join(', ')}`);
  const node = nodeVersion();
  if (!node.startsWith(`v${base.nodeMajor}.`))
    throw refuse(instruction, `the image has Node ${base.nodeMajor}; this machine's node package is ${node}`);
  return instruction.getBuildStage() ?? String(index);
}

/** The base image's filesystem as far as the steps rely on it: the users' homes, root's npm cache. */
function startStage(name: string, options: ReplayOptions): Stage {
  const root = path.join(options.out, name);
  mkdirSync(root);
  chmodSync(root, 0o755);
  for (const user of Object.values(USERS)) {
    mkdirSync(hostPath(root, user.home), { recursive: true });
    if (SWITCHES_USER) chownSync(hostPath(root, user.home), user.uid, user.gid);
  }
  seedNpmCache(
    options.npmCache ?? process.env.npm_config_cache ?? path.join(homedir(), '.npm'),
    hostPath(root, USERS.root!.home),
  );
  return { name, root, workdir: '/', env: {}, user: 'root', stopSignal: 'SIGTERM', cmd: ['node'] };
}

function planRun(instruction: Run): StageAction {
  refuseFlags(instruction, []);
  if (instruction.getOpeningBracket() || instruction.getHeredocs().length > 0)
    throw refuse(instruction, 'only the shell form without heredocs is modelled');
  const script = instruction.getArgumentsContent() ?? '';
  if (ABSOLUTE_PATH.test(script))
    throw refuse(
      instruction,
      "names an absolute path, which would reach this machine's filesystem (only WORKDIR is mapped)",
    );
  return async (stage) => {
    const user = USERS[stage.user]!;
    const child = spawn('/bin/sh', ['-c', script], {
      cwd: hostPath(stage.root, stage.workdir),
      env: { ...stageEnvironment(stage.root, stage.env, user), npm_config_offline: 'true' },
      ...(SWITCHES_USER ? { uid: user.uid, gid: user.gid } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (code !== 0) throw new Error(`exited ${code}; output ends:\n${output}`);
  };
}

/**
 * COPY as Docker does it: sources relative to the context (or, with `--from`, to an earlier
 * stage's `/`), a directory's contents rather than the directory, the destination a directory
 * when it ends with `/`, names several sources or already is one.
 */
function planCopy(instruction: Copy, stageNames: readonly string[], context: string): StageAction {
  refuseFlags(instruction, ['from']);
  if (instruction.getOpeningBracket() || instruction.getHeredocs().length > 0)
    throw refuse(instruction, 'only the plain form without heredocs is modelled');
  const args = instruction.getArguments().map((a) => a.getValue());
  if (args.length < 2) throw refuse(instruction, 'needs a source and a destination');
  if (args.some((a) => /[*?[$]/.test(a))) throw refuse(instruction, 'wildcards and variables are not modelled');
  const fromFlag = instruction.getFromFlag();
  const fromStage = fromFlag ? (fromFlag.getValue() ?? '') : undefined;
  if (fromStage !== undefined && !stageNames.slice(0, -1).includes(fromStage))
    throw refuse(instruction, `--from=${fromStage} names no earlier stage`);
  const sources = args.slice(0, -1);
  const destination = args.at(-1)!;
  return (stage, earlier) => {
    const sourceRoot = fromStage === undefined ? context : earlier.find((s) => s.name === fromStage)!.root;
    const target = hostPath(stage.root, path.posix.resolve(stage.workdir, destination));
    const intoDirectory =
      destination.endsWith('/') || sources.length > 1 || (existsSync(target) && statSync(target).isDirectory());
    for (const source of sources) {
      // Resolved against `/` first, so `..` cannot leave the context, as Docker refuses it too.
      const from = hostPath(sourceRoot, path.posix.resolve('/', source));
      const to = statSync(from).isDirectory() || !intoDirectory ? target : path.join(target, path.basename(from));
      cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    }
  };
}

function planWorkdir(instruction: Workdir): StageAction {
  const dir = instruction.getPath() ?? '';
  if (dir.includes('$')) throw refuse(instruction, 'variables are not modelled');
  return (stage) => {
    stage.workdir = path.posix.resolve(stage.workdir, dir);
    mkdirSync(hostPath(stage.root, stage.workdir), { recursive: true });
  };
}

function planEnv(instruction: Env): StageAction {
  const variables = instruction
    .getProperties()
    .map((property) => [property.getName(), property.getUnescapedValue() ?? ''] as const);
  if (variables.some(([, value]) => value.includes('$'))) throw refuse(instruction, 'variables are not modelled');
  return (stage) => {
    stage.env = { ...stage.env, ...Object.fromEntries(variables) };
  };
}

function planUser(instruction: User): StageAction {
  const name = instruction.getArgumentsContent() ?? '';
  if (!USERS[name]) throw refuse(instruction, `the base image's users are ${Object.keys(USERS).join(', ')}`);
  return (stage) => {
    stage.user = name;
  };
}

function planStopSignal(instruction: Stopsignal): StageAction {
  const signal = instruction.getArgumentsContent() ?? '';
  if (!Object.hasOwn(constants.signals, signal)) throw refuse(instruction, 'give a signal name such as SIGTERM');
  return (stage) => {
    stage.stopSignal = signal as NodeJS.Signals;
  };
}

function planCmd(instruction: Cmd): StageAction {
  if (!instruction.getOpeningBracket()) throw refuse(instruction, 'only the exec (JSON) form is modelled');
  const cmd = instruction.getJSONStrings().map((s) => s.getJSONValue());
  return (stage) => {
    stage.cmd = cmd;
  };
}

/**
 * What a process in the stage sees: the base image's PATH behind this machine's Node, the user's HOME, the stage's ENV.
 */
function stageEnvironment(
  root: string,
  env: Readonly<Record<string, string>>,
  user: ImageUser,
): Record<string, string> {
  return { PATH: `${nodeBinDirectory()}:${IMAGE_PATH}`, HOME: hostPath(root, user.home), ...env };
}

/**
 * The stage's npm cache, from this machine's (see "The registry" above). Content files are
 * addressed by their hash and never rewritten, so they are hard-linked; index buckets are appended
 * to, so they are copied. `npm cache clean --force` in a RUN line then removes only the links.
 */
function seedNpmCache(machineCache: string, home: string): void {
  const from = path.join(machineCache, '_cacache');
  const to = path.join(home, '.npm', '_cacache');
  cpSync(path.join(from, 'index-v5'), path.join(to, 'index-v5'), { recursive: true });
  for (const entry of readdirSync(path.join(from, 'content-v2'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const source = path.join(entry.parentPath, entry.name);
    const target = path.join(to, path.relative(from, source));
    mkdirSync(path.dirname(target), { recursive: true });
    linkOrCopy(source, target);
  }
}

function linkOrCopy(source: string, target: string): void {
  try {
    linkSync(source, target);
  } catch (error) {
    // Hard links cannot cross file systems (an --out elsewhere than the cache's disk).
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    copyFileSync(source, target);
  }
}

function nodeBinDirectory(): string {
  return path.dirname(createRequire(import.meta.url).resolve('node/bin/node'));
}

function nodeVersion(): string {
  return execFileSync(path.join(nodeBinDirectory(), 'node'), ['--version'], { encoding: 'utf8' }).trim();
}

/** The machine path standing for `imagePath` (absolute in the image) under a stage's root. */
function hostPath(root: string, imagePath: string): string {
  return path.join(root, imagePath);
}

function refuseFlags(instruction: Run | Copy | From, allowed: readonly string[]): void {
  const flag = instruction.getFlags().find((f) => !allowed.includes(f.getName()));
  if (flag) throw refuse(instruction, `the flag --${flag.getName()} is not modelled`);
}

function refuse(instruction: Instruction, reason: string): UnsupportedDockerfileInstructionError {
  return new UnsupportedDockerfileInstructionError(lineOf(instruction), instruction.toString(), reason);
}

function lineOf(instruction: Instruction): number {
  return instruction.getRange().start.line + 1;
}
