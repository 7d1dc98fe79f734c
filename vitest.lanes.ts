import { globSync } from 'node:fs';

/**
 * Which lane runs each test file, by what the file needs (docs/testing.md). Every wing's tests under
 * `test/unit/` are unit tests; the bridge's and infra's files sit in one folder each and are sorted
 * here by name. A bridge file in none of the lists below runs in the unit lane: one that needs more
 * fails there, loudly, rather than being left out of every lane.
 */
const bridge = (name: string) => `packages/bridge/test/${name}.test.ts`;

/** Need the AWS emulator only: the emulator lane. */
export const BRIDGE_EMULATOR_FILES = ['eventbridge-target', 'forward-tracing', 'outbound-queue', 'route-forwarder'].map(
  bridge,
);

/** Synthesize CDK: the synth lane. */
export const BRIDGE_SYNTH_FILES = ['bridge-service'].map(bridge);

/**
 * Need a real RocketMQ, or root for the image's chroot (the Dockerfile replay): the broker lane,
 * `npm run test:bridge`, in a loopback-only network namespace.
 */
export const BRIDGE_BROKER_FILES = [
  'bridge-image',
  'cutover-rocketmq4',
  'dockerfile-replay',
  'end-to-end',
  'end-to-end-rocketmq4',
  'group-takeover-rocketmq4',
  'incident-rocketmq4',
  'incident-rocketmq5',
  'java-producer-rocketmq4',
  'java-producer-rocketmq5',
  'outbound-route',
  'rocketmq-message-lookup',
  'switchover-rocketmq4',
  'trace-context-rocketmq4',
].map(bridge);

const notUnit = new Set([...BRIDGE_EMULATOR_FILES, ...BRIDGE_SYNTH_FILES, ...BRIDGE_BROKER_FILES]);
/** Need nothing but Node and a temporary folder: the unit lane. */
export const BRIDGE_UNIT_FILES = globSync('packages/bridge/test/*.test.ts', { cwd: import.meta.dirname })
  .sort()
  .filter((file) => !notUnit.has(file));

/** Infra's files that also put what they synthesized on the emulator: the emulator lane. */
export const INFRA_EMULATOR_FILES = ['packages/infra/test/rocketmq-tag-filter.test.ts'];
/** CDK synthesis and the infrastructure scanner (Checkov), no emulator: the synth lane. */
export const SYNTH_FILES = [
  ...globSync('packages/infra/test/**/*.test.ts', { cwd: import.meta.dirname })
    .sort()
    .filter((file) => !INFRA_EMULATOR_FILES.includes(file)),
  ...BRIDGE_SYNTH_FILES,
];
