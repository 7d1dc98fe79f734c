import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/bridge/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    // Consumers log one JSON line per record; tests that inspect logs build their own logger.
    env: { POWERTOOLS_LOG_LEVEL: 'CRITICAL', POWERTOOLS_METRICS_DISABLED: 'true', AWS_REGION: 'us-east-1' },
    hookTimeout: 60_000,
  },
});
