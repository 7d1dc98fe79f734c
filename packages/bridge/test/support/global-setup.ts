import { startEmulator } from '@rocketmq-lambda/tools/emulator/emulator.ts';
import { startLocalRocketMQ } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq.ts';
import { startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import type { TestProject } from 'vitest/node';
import { brokerAddrOf, SHARED_PROBE_TOPIC } from './shared-rocketmq.ts';

/**
 * One AWS emulator, one RocketMQ 5.5.0 and one RocketMQ 4.7.1 for the broker lane's run, started
 * side by side. Each file creates its own uniquely named queues, topics and groups on them
 * (support/shared-rocketmq.ts); the files that kill or switch brokers start clusters of their own.
 */
export default async function setup(project: TestProject) {
  const startTimeoutMs = 180_000;
  const starting = [
    startEmulator(),
    startLocalRocketMQ({ topics: [{ name: SHARED_PROBE_TOPIC }], startTimeoutMs }),
    startLocalRocketMQ4({ topics: [], startTimeoutMs }),
  ] as const;
  const stopAll = async () => {
    await Promise.allSettled(starting.map((s) => s.then((started) => started.stop())));
  };
  try {
    const [emulator, rocketMq5, rocketMq4] = await Promise.all(starting);
    project.provide('emulatorEndpoint', emulator.endpoint);
    const { proxyEndpoint, namesrvAddr, clusterName, brokerName } = rocketMq5;
    const brokerAddr = await brokerAddrOf(namesrvAddr, SHARED_PROBE_TOPIC);
    project.provide('rocketMq5', { proxyEndpoint, namesrvAddr, clusterName, brokerName, brokerAddr });
    const { version, storeDir } = rocketMq4;
    project.provide('rocketMq4', {
      namesrvAddr: rocketMq4.namesrvAddr,
      clusterName: rocketMq4.clusterName,
      brokerName: rocketMq4.brokerName,
      brokerAddr: rocketMq4.brokerAddr,
      version,
      storeDir,
    });
  } catch (err) {
    await stopAll();
    throw err;
  }
  return stopAll;
}
