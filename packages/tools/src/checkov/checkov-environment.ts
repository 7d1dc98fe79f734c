/**
 * Checkov's own Python environment (`<repo>/.venv-checkov`), apart from the emulator's `.venv`: the
 * scanner is for the test lane, so `npm start`'s first run never installs it. The same hash-locked
 * provisioning as the emulator's (packages/tools/src/emulator/python-environment.ts): every package of
 * `requirements.txt` at one version with the sha256 of each file, installed `--require-hashes
 * --no-deps --only-binary :all:`, then `pip check`.
 *
 * Run directly (`npm run checkov:setup`) it provisions and prints the scanner's path.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensurePythonEnvironment } from '../emulator/python-environment.ts';

/** The hash lock (generated from requirements.in, where the pin is chosen). */
export const CHECKOV_REQUIREMENTS = fileURLToPath(new URL('./requirements.txt', import.meta.url));
const DIRECTORY = fileURLToPath(new URL('../../../../.venv-checkov', import.meta.url));

/** Makes sure the environment holds the lock; resolves to the `checkov` executable. */
export async function ensureCheckov(): Promise<string> {
  const python = await ensurePythonEnvironment({
    directory: DIRECTORY,
    requirements: CHECKOV_REQUIREMENTS,
    label: 'checkov',
  });
  return join(dirname(python), 'checkov');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  ensureCheckov().then(
    (checkov) => console.log(checkov),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    },
  );
}
