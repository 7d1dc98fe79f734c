import type { LocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import type { BridgeConfigInput } from '../../src/bridge-config.ts';

/** A bridge configuration for a local RocketMQ 4 cluster: the remoting protocol, these routes, the tests' timings. */
export function remotingBridgeConfig(
  rocketMq: Pick<LocalRocketMQ4, 'namesrvAddr' | 'clusterName'>,
  routes: BridgeConfigInput['routes'],
  overrides: Partial<BridgeConfigInput> = {},
): BridgeConfigInput {
  return {
    protocol: 'rocketmq4',
    nameServer: rocketMq.namesrvAddr,
    clusterName: rocketMq.clusterName,
    sslEnabled: false,
    invisibleDurationMs: 10_000,
    awaitDurationMs: 5_000,
    health: { host: '127.0.0.1', port: 0 },
    ...overrides,
    routes,
  };
}
