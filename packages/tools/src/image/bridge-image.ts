/**
 * `npm run bridge:image -- [--out dir]`: the bridge's image built without Docker.
 * Makes the image's root filesystem from its lock if it is not made yet
 * (packages/tools/src/image/bridge-image-rootfs.ts), synthesises the app with a bridge-enabled stage, takes the build
 * context CDK staged for the image asset (packages/tools/src/image/bridge-image-context.ts), replays packages/bridge/Dockerfile
 * in it (packages/tools/src/image/dockerfile-replay.ts) and prints the context's size, each step with its time and
 * the image's root. See docs/bridge.md. Exit codes: 0 built, 1 the build failed or was refused,
 * 2 bad arguments.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BridgeImageAssetError, stageBridgeImageContext } from './bridge-image-context.ts';
import { BridgeRootfsError, makeBridgeRootfs } from './bridge-image-rootfs.ts';
import { DockerfileReplayError, replayDockerfile } from './dockerfile-replay.ts';

const USAGE = `Usage: npm run bridge:image -- [options]

  --out <dir>   an empty or new directory for the assembly (cdk.out/) and the stages' roots (stages/)
                (default: a new temporary directory)
  -h, --help`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  return { out: values.out, help: values.help };
}

/** A directory for the build that the image's user (node) can reach, as it reaches `/`. */
function outDirectory(requested: string | undefined): string {
  if (requested === undefined) {
    const out = mkdtempSync(path.join(tmpdir(), 'bridge-image-'));
    chmodSync(out, 0o755);
    return out;
  }
  const out = path.resolve(requested);
  mkdirSync(out, { recursive: true });
  if (readdirSync(out).length > 0) throw new UsageError(`--out ${out} is not empty`);
  return out;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function main(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  let out: string;
  try {
    args = parse(argv);
    if (args.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    out = outDirectory(args.out);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  try {
    await makeBridgeRootfs({ onProgress: (line) => process.stdout.write(`${line}\n`) });
    const context = stageBridgeImageContext(path.join(out, 'cdk.out'));
    process.stdout.write(
      `synth ${seconds(context.synthMs)}; build context ${(context.bytes / 1024).toFixed(0)} KiB in ${context.files} files: ${context.directory}\n`,
    );
    const image = await replayDockerfile({
      context: context.directory,
      dockerfile: context.dockerFile,
      out: path.join(out, 'stages'),
      onStep: (step) =>
        process.stdout.write(
          `${seconds(step.ms).padStart(7)}  ${step.stage.padEnd(6)} ${String(step.line).padStart(3)}  ${step.instruction}\n`,
        ),
    });
    const total = image.steps.reduce((sum, step) => sum + step.ms, 0);
    process.stdout.write(
      `image root ${image.root} (replayed in ${seconds(total)}): CMD ${JSON.stringify(image.cmd)} in ${image.workdir} as ${image.user}, ` +
        `ENV ${JSON.stringify(image.env)}, STOPSIGNAL ${image.stopSignal}\n`,
    );
    return 0;
  } catch (error) {
    if (
      !(
        error instanceof DockerfileReplayError ||
        error instanceof BridgeImageAssetError ||
        error instanceof BridgeRootfsError
      )
    )
      throw error;
    process.stderr.write(`${error.name}: ${error.message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
