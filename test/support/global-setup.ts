import type { TestProject } from 'vitest/node';
import { startEmulator } from '../../scripts/emulator/emulator.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    emulatorEndpoint: string;
  }
}

/**
 * One emulator for the whole run; every test file creates its own uniquely named resources.
 * Starting it provisions `.venv` on a fresh checkout, before any worker or child command needs it.
 */
export default async function setup(project: TestProject) {
  const emulator = await startEmulator();
  project.provide('emulatorEndpoint', emulator.endpoint);
  return () => emulator.stop();
}
