import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BRIDGE_BROKER_FILES, BRIDGE_UNIT_FILES, SYNTH_FILES } from './vitest.lanes.ts';

/** Every lane's temporary files in one folder, removed at the run's end (the file says why). */
const SCRATCH_TMPDIR = 'packages/tools/src/testing/scratch-tmpdir.ts';

/**
 * Lanes by cost (docs/testing.md; vitest.lanes.ts sorts the files). `unit`: no emulator, no CDK, no
 * broker: every wing's pure tests, the bridge's included (`npm run test:unit`, seconds).
 * `emulator`: the moto server started once by the global setup; every file creates its own uniquely
 * named resources. `synth`: CDK synthesis and the infrastructure scanner, without the emulator.
 * `npm test` runs unit and emulator with coverage (the thresholds below fail it), then synth
 * without: it runs no line of the covered folders. The broker lane is vitest.bridge.config.ts
 * (`npm run test:bridge`).
 */
export default defineConfig({
  test: {
    pool: 'forks',
    // One worker more than the cores (vitest's default is one fewer): an emulator-lane file spends most
    // of its time waiting on the moto server or a child process, so other files fill that wait. Measured
    // on the 2-core machine, unit + emulator with coverage: 1 worker 7 min 4 s (loaded), 2 workers
    // 3 min 24 s, 3 workers 2 min 46 s, 4 workers 2 min 47 s.
    maxWorkers: availableParallelism() + 1,
    // Consumers log one JSON line per record; tests that inspect logs build their own logger.
    env: { POWERTOOLS_LOG_LEVEL: 'CRITICAL', POWERTOOLS_METRICS_DISABLED: 'true', AWS_REGION: 'us-east-1' },
    coverage: {
      provider: 'v8',
      include: ['packages/runtime/src/consumer/**', 'packages/runtime/src/rocketmq/**'],
      // Modules that hold only types or re-exports: v8 finds no code in them and lists them at 0 %.
      exclude: [
        'packages/runtime/src/consumer/settlement.ts',
        'packages/runtime/src/consumer/idempotency/strategy.ts',
        'packages/runtime/src/consumer/index.ts',
      ],
      reporter: ['text-summary', 'text'],
      thresholds: {
        'packages/runtime/src/consumer/**': { lines: 95, branches: 95 },
        'packages/runtime/src/rocketmq/**': { lines: 95, branches: 95 },
      },
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/test/unit/**/*.test.ts', ...BRIDGE_UNIT_FILES],
          globalSetup: [SCRATCH_TMPDIR],
        },
      },
      {
        extends: true,
        test: {
          name: 'emulator',
          include: ['packages/*/test/**/*.test.ts'],
          exclude: [
            'packages/*/test/unit/**',
            ...BRIDGE_UNIT_FILES,
            ...BRIDGE_BROKER_FILES,
            ...SYNTH_FILES,
            'node_modules/**',
          ],
          globalSetup: [SCRATCH_TMPDIR, 'packages/tools/src/testing/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'synth',
          include: SYNTH_FILES,
          globalSetup: [SCRATCH_TMPDIR],
          // No Lambda bundling (CDK reads CDK_CONTEXT_JSON into every App's context): no test here reads a
          // bundle, and esbuild through npx for every function of every App was a third of the lane's CPU.
          // consumers-app.test.ts turns bundling back on for the committed app, as `cdk synth` runs it.
          env: { CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [] }) },
          // aws-cdk-lib is imported once per worker, not once per file (most of this lane's time
          // was that import); every test builds its own App, and no file here mocks a module.
          isolate: false,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
