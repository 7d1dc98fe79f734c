import { defineConfig } from 'vitest/config';
import { BRIDGE_BROKER_FILES } from './vitest.lanes.ts';

/**
 * The broker lane (docs/testing.md): the bridge's tests against real RocketMQs (5.5.0: name server
 * + proxy; 4.7.1: name server + broker) and the AWS emulator. Run with `npm run test:bridge`, which
 * fetches the RocketMQ jars once and runs this inside a loopback-only network namespace as root.
 * The global setup starts the emulator and one cluster of each version for the files that share
 * them; the files that kill or switch brokers start their own. Files run one at a time: two
 * RocketMQs at work would not fit 2 cores. The bridge's other tests run in `npm test`'s lanes.
 */
export default defineConfig({
  test: {
    include: BRIDGE_BROKER_FILES,
    globalSetup: ['packages/bridge/test/support/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    env: { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'WARN' },
  },
});
