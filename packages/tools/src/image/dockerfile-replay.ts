import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
} from 'node:fs';
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
 * A Dockerfile build replayed without Docker, for images that start `FROM scratch` (the bridge's:
 * its root filesystem is made from pinned inputs and copied in, see packages/tools/src/image/bridge-image-rootfs.ts).
 * Each stage's `/` is a directory of its own; COPY writes into it, and RUN runs its command inside
 * it, as `docker build` does: `chroot` into the stage's root (util-linux `unshare --root`) in the
 * stage's WORKDIR, as the stage's USER (resolved from the stage's own /etc/passwd), with the stage's
 * ENV, in a mount namespace of its own with /proc mounted. So RUN uses the image's own binaries and
 * libraries (its Node, its glibc) and nothing of this machine's: a step that needs a shell the image
 * lacks fails here as it would there. Parsing is dockerfile-ast's (line continuations, quoting,
 * flags, JSON forms); an instruction, flag or form the replay does not model is refused with its
 * line, so a later change to the Dockerfile is never skipped silently.
 *
 * Where it differs from `docker build`, and why that is safe for what it is used for:
 * - The registry: npm in RUN lines works offline, from a cache (`$HOME/.npm` of the RUN's user)
 *   seeded from this machine's, which `npm ci` filled with what the lockfile names. npm checks
 *   every tarball against the lockfile's integrity, so the installed bytes are those the registry
 *   serves. Offline because the bridge's tests run in a loopback-only network namespace. A package
 *   missing from the cache fails the step (ENOTCACHED).
 * - No /dev, /sys, /etc/resolv.conf or /etc/hosts is provided (Docker mounts them); /proc is, and
 *   its mount point is created if the stage has none. The network is this machine's.
 * - chroot needs root, as does switching to the image's user: the replay refuses to start otherwise.
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
  /** This machine's npm cache, seeded into each stage that runs a RUN (default: npm's, `~/.npm`). */
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

export interface ImageUser {
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** The PATH Docker gives a container whose image sets none. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** This machine's tools that enter a stage's root; absolute, since the child's PATH is the image's. */
const UNSHARE = hostTool('unshare');
const MOUNT = hostTool('mount');

interface Stage {
  readonly name: string;
  readonly root: string;
  workdir: string;
  env: Record<string, string>;
  user: string;
  stopSignal: NodeJS.Signals;
  cmd: readonly string[];
  /** Whether this machine's npm cache is in the stage yet (seeded before its first RUN). */
  npmCacheSeeded: boolean;
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
  if (process.getuid?.() !== 0)
    throw new DockerfileReplayError(
      "the replay runs each RUN inside the stage's own root (chroot) as the stage's user, which needs root; run it as root, as CI and test:bridge do",
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
      if (error instanceof UnsupportedDockerfileInstructionError || error instanceof DockerfileStepFailedError)
        throw error;
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

export interface ImageCommandOptions {
  /** As ECS's `readonlyRootFilesystem` (and `docker run --read-only`): the image's root cannot be written. */
  readonly readOnlyRoot?: boolean;
}

/**
 * Starts a command in the image as a container runtime would: inside the image's root, in its
 * WORKDIR, as its USER, with the image's ENV under `env` (which wins, as `docker run -e` and a task
 * definition's environment do). The command is the image's CMD unless given, as with `docker run
 * image <command>`; it is looked up on the image's PATH, in the image. The returned process is the
 * command itself (each wrapper execs the next), so signals reach it as the runtime's would.
 */
export function startImageCommand(
  image: ReplayedImage,
  env: Readonly<Record<string, string>>,
  command: readonly string[] = image.cmd,
  options: ImageCommandOptions = {},
): ChildProcess {
  if (command.length === 0) throw new DockerfileReplayError('the image has an empty CMD');
  const user = imageUser(image.root, image.user);
  return spawnInRoot(image.root, {
    workdir: image.workdir,
    user,
    env: { ...processEnvironment(image.env, user), ...env },
    argv: command,
    readOnlyRoot: options.readOnlyRoot ?? false,
  });
}

interface InRoot {
  readonly workdir: string;
  readonly user: ImageUser;
  readonly env: Readonly<Record<string, string>>;
  readonly argv: readonly string[];
  readonly readOnlyRoot: boolean;
}

/**
 * `unshare --mount` gives the process a mount namespace of its own (its mounts vanish with it);
 * inside, this machine's /bin/sh mounts /proc in the root (after making the root a read-only bind
 * mount, if asked) and execs `unshare --root --wd --setuid --setgid`, which chroots and execs the
 * command. Every step execs the next, so the child's pid ends up being the command's.
 */
function spawnInRoot(root: string, run: InRoot): ChildProcess {
  mkdirSync(path.join(root, 'proc'), { recursive: true });
  const enter = [
    UNSHARE,
    `--root=${root}`,
    `--wd=${run.workdir}`,
    `--setuid=${run.user.uid}`,
    `--setgid=${run.user.gid}`,
    '--',
    ...run.argv,
  ];
  const mounts = [
    ...(run.readOnlyRoot ? ['"$m" --bind "$r" "$r"', '"$m" -o remount,bind,ro "$r"'] : []),
    '"$m" -t proc proc "$r/proc"',
  ];
  const script = `m=$1 r=$2; shift 2; ${mounts.join(' && ')} && exec "$@"`;
  return spawn(
    UNSHARE,
    ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'sh', MOUNT, root, ...enter],
    {
      env: run.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
    const action = planAction(instruction, stageNames, options);
    return { ...step, run: (stages: Stage[]) => action(stages.at(-1)!, stages.slice(0, -1)) };
  });
}

function planAction(instruction: Instruction, stageNames: readonly string[], options: ReplayOptions): StageAction {
  if (instruction instanceof Run) return planRun(instruction, options);
  if (instruction instanceof Copy) return planCopy(instruction, stageNames, options.context);
  if (instruction instanceof Workdir) return planWorkdir(instruction);
  if (instruction instanceof Env) return planEnv(instruction);
  if (instruction instanceof User) return planUser(instruction);
  if (instruction instanceof Stopsignal) return planStopSignal(instruction);
  if (instruction instanceof Cmd) return planCmd(instruction);
  throw refuse(instruction, `${instruction.getKeyword()} is not modelled by this replay`);
}

/** The stage's name (its `AS`, else its index). Only `scratch`: anything else is someone's image, pulled by tag. */
function checkBaseImage(instruction: From, index: number): string {
  refuseFlags(instruction, []);
  if (instruction.getImage() !== 'scratch')
    throw refuse(instruction, 'the replay builds only FROM scratch: any other base is an image it would have to pull');
  return instruction.getBuildStage() ?? String(index);
}

function startStage(name: string, options: ReplayOptions): Stage {
  const root = path.join(options.out, name);
  mkdirSync(root);
  chmodSync(root, 0o755);
  return { name, root, workdir: '/', env: {}, user: 'root', stopSignal: 'SIGTERM', cmd: [], npmCacheSeeded: false };
}

/** The exec form runs as given; the shell form as `/bin/sh -c`, which must then be in the image. */
function planRun(instruction: Run, options: ReplayOptions): StageAction {
  refuseFlags(instruction, []);
  if (instruction.getHeredocs().length > 0) throw refuse(instruction, 'heredocs are not modelled');
  const content = instruction.getArgumentsContent() ?? '';
  const argv = execForm(content) ?? ['/bin/sh', '-c', content];
  if (argv.length === 0) throw refuse(instruction, 'runs nothing');
  return async (stage) => {
    const user = imageUser(stage.root, stage.user);
    if (!stage.npmCacheSeeded) {
      seedNpmCache(
        options.npmCache ?? process.env.npm_config_cache ?? path.join(homedir(), '.npm'),
        hostPath(stage.root, user.home),
      );
      stage.npmCacheSeeded = true;
    }
    const child = spawnInRoot(stage.root, {
      workdir: stage.workdir,
      user,
      env: { ...processEnvironment(stage.env, user), npm_config_offline: 'true' },
      argv,
      readOnlyRoot: false,
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
      if (statSync(from).isDirectory()) copyDirectoryModes(from, to);
    }
  };
}

/**
 * Docker's COPY keeps every directory's mode (a 1777 /tmp stays sticky); cpSync creates them with
 * the default mode, so the modes are put back. The destination itself keeps its own, as in Docker.
 */
function copyDirectoryModes(from: string, to: string): void {
  for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const source = path.join(entry.parentPath, entry.name);
    chmodSync(path.join(to, path.relative(from, source)), statSync(source).mode & 0o7777);
  }
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
  if (!/^[a-z_][\w-]*$|^\d+(:\d+)?$/.test(name)) throw refuse(instruction, 'give a user name or uid[:gid]');
  return (stage) => {
    imageUser(stage.root, name); // Docker resolves it when it is used; failing here names the line
    stage.user = name;
  };
}

/** A user as the stage's own /etc/passwd has it (a bare uid[:gid] needs no entry, as in Docker). */
export function imageUser(root: string, user: string): ImageUser {
  const numeric = /^(\d+)(?::(\d+))?$/.exec(user);
  const passwd = path.join(root, 'etc', 'passwd');
  const entries = existsSync(passwd)
    ? readFileSync(passwd, 'utf8')
        .split('\n')
        .map((line) => line.split(':'))
        .filter((fields) => fields.length >= 7)
    : [];
  const entry = entries.find((f) => (numeric ? f[2] === numeric[1] : f[0] === user));
  if (numeric)
    return { uid: Number(numeric[1]), gid: Number(numeric[2] ?? entry?.[3] ?? numeric[1]), home: entry?.[5] ?? '/' };
  if (!entry) {
    if (user === 'root') return { uid: 0, gid: 0, home: '/root' };
    throw new DockerfileReplayError(`unable to find user ${user}: no matching entries in the stage's /etc/passwd`);
  }
  return { uid: Number(entry[2]), gid: Number(entry[3]), home: entry[5]! };
}

function planStopSignal(instruction: Stopsignal): StageAction {
  const signal = instruction.getArgumentsContent() ?? '';
  if (!Object.hasOwn(constants.signals, signal)) throw refuse(instruction, 'give a signal name such as SIGTERM');
  return (stage) => {
    stage.stopSignal = signal as NodeJS.Signals;
  };
}

function planCmd(instruction: Cmd): StageAction {
  const cmd = execForm(instruction.getArgumentsContent() ?? '');
  if (!cmd) throw refuse(instruction, 'only the exec (JSON) form is modelled');
  return (stage) => {
    stage.cmd = cmd;
  };
}

/**
 * The exec form's argv, or undefined for the shell form. Docker reads the exec form as a JSON array
 * of strings and anything else as a shell command; parsed here the same way, because dockerfile-ast's
 * JSON argument values drop the spaces inside a string (`"echo hi"` comes back as `echohi`).
 */
function execForm(content: string): string[] | undefined {
  if (!content.trimStart().startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(content);
    return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** What a process in the stage sees: Docker's default PATH and the user's HOME, under the stage's ENV. */
function processEnvironment(env: Readonly<Record<string, string>>, user: ImageUser): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: user.home, ...env };
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

function hostTool(name: string): string {
  const found = ['/usr/bin', '/bin', '/usr/sbin', '/sbin']
    .map((dir) => path.join(dir, name))
    .find((file) => existsSync(file));
  if (!found)
    throw new DockerfileReplayError(`the replay needs util-linux's ${name}, which this machine does not have`);
  return found;
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
