import type { TestProject } from 'vitest/node';
import { startEmulator } from '../emulator/emulator.ts';
import { ensureMariaDb } from '../legacy/mariadb-release.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    emulatorEndpoint: string;
  }
}

/**
 * One emulator for the whole run; every test file creates its own uniquely named resources.
 * Starting it provisions `.venv` on a fresh checkout, before any worker or child command needs it.
 * The legacy side's MariaDB (a 149 MB download on a fresh checkout) is unpacked meanwhile, here
 * rather than within a test file's start-up timeout; should that fail, the files that need it fail
 * with the reason when their own start retries it, and the others run.
 */
export default async function setup(project: TestProject) {
  const [emulator] = await Promise.all([startEmulator(), ensureMariaDb().catch(() => undefined)]);
  project.provide('emulatorEndpoint', emulator.endpoint);
  return () => emulator.stop();
}
