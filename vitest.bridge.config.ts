import { defineConfig } from 'vitest/config';
import { BRIDGE_BROKER_FILES } from './vitest.lanes.ts';

/**
 * The broker lane (docs/testing.md): the bridge's tests against real RocketMQs (5.5.0: name server
 * + proxy; 4.7.1: name server + broker) and the AWS emulator. Run with `npm run test:bridge`, which
 * fetches the RocketMQ jars once and runs this inside a loopback-only network namespace as root.
 * The global setup starts the emulator and one cluster of each version for the files that share
 * them; the files that kill or switch brokers start their own. Two files at a time: the lane
 * mostly waits (on invisible durations, broker restarts, a slave taking over; 0.5 of a core on
 * average with one file at a time), so two fit 2 cores. Measured on the 2-core machine: one at a
 * time 9 min 17 s, two 4 min 51 s. The bridge's other tests run in `npm test`'s lanes.
 */
export default defineConfig({
  test: {
    include: BRIDGE_BROKER_FILES,
    // Every temporary file of the run in one folder, removed at its end (packages/tools/src/testing/scratch-tmpdir.ts).
    globalSetup: ['packages/tools/src/testing/scratch-tmpdir.ts', 'packages/bridge/test/support/global-setup.ts'],
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    env: { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'WARN' },
  },
});
