import { defineConfig } from 'vitest/config';

/**
 * The bridge's tests: real RocketMQs (5.5.0: name server + proxy; 4.7.1: name server + broker) and
 * the AWS emulator, all started by the tests. Run with `npm run test:bridge`, which fetches the
 * RocketMQ jars once and runs this inside a loopback-only network namespace. Files run one at a
 * time: two RocketMQs would not fit 2 cores.
 */
export default defineConfig({
  test: {
    include: ['packages/bridge/test/**/*.test.ts'],
    globalSetup: ['packages/bridge/test/support/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    env: { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'WARN' },
  },
});
