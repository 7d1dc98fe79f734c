import { startEmulator } from '@rocketmq-lambda/tools/emulator/emulator.ts';
import type { TestProject } from 'vitest/node';

/** One AWS emulator for the bridge's test run; each file creates its own uniquely named queues. */
export default async function setup(project: TestProject) {
  const emulator = await startEmulator();
  project.provide('emulatorEndpoint', emulator.endpoint);
  return () => emulator.stop();
}
