import { defineConfig } from 'vitest/config';

/**
 * Two layers: `unit` (pure, no emulator, seconds: `npm run test:unit`) and `emulator` (moto
 * server started once by the global setup; every file creates its own uniquely named
 * resources). `npm test` runs both with coverage, and the thresholds below fail it.
 */
export default defineConfig({
  test: {
    pool: 'forks',
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
        test: { name: 'unit', include: ['packages/*/test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'emulator',
          include: ['packages/*/test/**/*.test.ts'],
          exclude: ['packages/*/test/unit/**', 'packages/bridge/test/**', 'node_modules/**'],
          globalSetup: ['packages/tools/src/testing/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
