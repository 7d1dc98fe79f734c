import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  assertLoopbackOnlyNetwork,
  freeBrokerPort,
  freePort,
  installExitHook,
  JAVA_17_OPENS,
  spawnJvm,
  stopChild,
  waitForLine,
} from './local-rocketmq.ts';
import { ensureRocketMQJars, ROCKETMQ_4 } from './rocketmq-jars.ts';

/**
 * A throw-away Apache RocketMQ 4.7.1 on this machine: a name server and one broker (master) from
 * the official jars, loopback only, store and logs in a temporary folder that `stop()` removes.
 * The broker can be killed with SIGKILL and started again on the same store and ports, which is
 * how a broker failover looks to the clients of a single-master cluster.
 *
 * Topics are seeded into the broker's `topics.json` before the first boot (`mqadmin updateTopic`
 * costs a JVM start per topic); consumer groups and their `%RETRY%` topics the broker creates
 * itself when a consumer first heartbeats.
 */
export interface LocalRocketMQ4Options {
  readonly topics: readonly { readonly name: string; readonly queues?: number }[];
  readonly clusterName?: string;
  readonly brokerName?: string;
  readonly java?: string;
  readonly startTimeoutMs?: number;
  /** The broker listens on every interface; unless set, starting refuses to run outside a loopback-only namespace. */
  readonly allowExposedPorts?: boolean;
  /** Turns ACL on (`aclEnable`, `conf/plain_acl.yml`) with one account that may publish and subscribe everything. */
  readonly acl?: { readonly accessKey: string; readonly secretKey: string };
  /**
   * More `broker.conf` settings, e.g. `messageDelayLevel: '1s 1s 2s …'` so that `%RETRY%` and
   * `%DLQ%` are reached in seconds, or `fileReservedTime`.
   */
  readonly brokerSettings?: Readonly<Record<string, string>>;
}

export interface LocalRocketMQ4 {
  /** `127.0.0.1:<port>`, what RocketMQ 4 clients are given as name server. */
  readonly namesrvAddr: string;
  readonly clusterName: string;
  readonly brokerName: string;
  readonly version: string;
  readonly startupMs: number;
  /** SIGKILL: no flush, no unregistering; the store is left as a crash leaves it. */
  killBroker(): Promise<void>;
  /** Starts the broker again on the same store and ports; resolves once it is registered. */
  restartBroker(): Promise<{ recoveryMs: number }>;
  stop(): Promise<void>;
}

const NAMESRV_READY = /The Name Server boot success/;
const BROKER_READY = /The broker\[.*\] boot success/;

export async function startLocalRocketMQ4(options: LocalRocketMQ4Options): Promise<LocalRocketMQ4> {
  if (!options.allowExposedPorts) assertLoopbackOnlyNetwork();
  await ensureRocketMQJars(ROCKETMQ_4);
  installExitHook();

  const clusterName = options.clusterName ?? 'LocalCluster';
  const brokerName = options.brokerName ?? 'broker-a';
  const java = options.java ?? process.env.JAVA ?? 'java';
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const home = mkdtempSync(join(tmpdir(), 'local-rocketmq4-'));
  let namesrv: ChildProcess | undefined;
  let broker: ChildProcess | undefined;
  let brokerStarts = 0;
  const stop = async () => {
    if (broker) await stopChild(broker);
    if (namesrv) await stopChild(namesrv);
    if (process.env.LOCAL_ROCKETMQ_KEEP !== '1') rmSync(home, { recursive: true, force: true });
  };
  const spawn = (heap: string, mainClass: string, args: string[], name: string) =>
    spawnJvm(java, home, heap, mainClass, args, name, ROCKETMQ_4.libDir, JAVA_17_OPENS);
  const startBroker = async () => {
    brokerStarts += 1;
    const name = `broker-${brokerStarts}`;
    broker = spawn('-Xmx256m', 'org.apache.rocketmq.broker.BrokerStartup', ['-c', join(home, 'broker.conf')], name);
    await waitForLine(broker, BROKER_READY, timeoutMs, join(home, `${name}.out`));
  };

  try {
    const namesrvPort = await freePort();
    const brokerPort = await freeBrokerPort();
    const namesrvAddr = `127.0.0.1:${namesrvPort}`;
    writeConfig(home, {
      clusterName,
      brokerName,
      namesrvAddr,
      namesrvPort,
      brokerPort,
      acl: options.acl,
      brokerSettings: options.brokerSettings,
    });
    seedTopics(join(home, 'store'), options.topics);

    const started = Date.now();
    namesrv = spawn(
      '-Xmx64m',
      'org.apache.rocketmq.namesrv.NamesrvStartup',
      ['-c', join(home, 'namesrv.properties')],
      'namesrv',
    );
    await waitForLine(namesrv, NAMESRV_READY, timeoutMs, join(home, 'namesrv.out'));
    // The 4.x broker registers with the name server as the last step of its start, before it reports success.
    await startBroker();
    return {
      namesrvAddr,
      clusterName,
      brokerName,
      version: ROCKETMQ_4.version,
      startupMs: Date.now() - started,
      killBroker: async () => {
        const victim = broker!;
        if (victim.exitCode !== null || victim.signalCode !== null) return;
        const exited = new Promise((resolve) => victim.once('exit', resolve));
        victim.kill('SIGKILL');
        await exited;
      },
      restartBroker: async () => {
        const began = Date.now();
        await startBroker();
        return { recoveryMs: Date.now() - began };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

interface Ports {
  clusterName: string;
  brokerName: string;
  namesrvAddr: string;
  namesrvPort: number;
  brokerPort: number;
  acl: LocalRocketMQ4Options['acl'];
  brokerSettings: LocalRocketMQ4Options['brokerSettings'];
}

function writeConfig(home: string, p: Ports): void {
  const store = join(home, 'store');
  mkdirSync(join(store, 'config'), { recursive: true });
  mkdirSync(join(home, 'conf'), { recursive: true });
  // Both start scripts configure logback from ROCKETMQ_HOME/conf and exit when the file is missing.
  for (const name of ['namesrv', 'broker', 'tools'])
    writeFileSync(join(home, 'conf', `logback_${name}.xml`), logback(join(home, `${name}.log`)));
  writeFileSync(join(home, 'namesrv.properties'), `listenPort=${p.namesrvPort}\n`);
  writeFileSync(
    join(home, 'broker.conf'),
    [
      `brokerClusterName=${p.clusterName}`,
      `brokerName=${p.brokerName}`,
      'brokerId=0',
      'brokerRole=ASYNC_MASTER',
      'flushDiskType=ASYNC_FLUSH',
      `listenPort=${p.brokerPort}`,
      'brokerIP1=127.0.0.1',
      `namesrvAddr=${p.namesrvAddr}`,
      `storePathRootDir=${store}`,
      `storePathCommitLog=${join(store, 'commitlog')}`,
      // 64 MB commit-log files instead of 1 GB, and a small consume-queue file: enough for tests.
      'mappedFileSizeCommitLog=67108864',
      'mappedFileSizeConsumeQueue=300000',
      'autoCreateTopicEnable=false',
      ...(p.acl ? ['aclEnable=true'] : []),
      ...Object.entries(p.brokerSettings ?? {}).map(([name, value]) => `${name}=${value}`),
      '',
    ].join('\n'),
  );
  // The broker reads ROCKETMQ_HOME/conf/plain_acl.yml; every request must carry a valid signature.
  if (p.acl) {
    writeFileSync(
      join(home, 'conf', 'plain_acl.yml'),
      [
        'globalWhiteRemoteAddresses: []',
        'accounts:',
        `  - accessKey: ${p.acl.accessKey}`,
        `    secretKey: ${p.acl.secretKey}`,
        '    admin: false',
        '    defaultTopicPerm: PUB|SUB',
        '    defaultGroupPerm: PUB|SUB',
        '',
      ].join('\n'),
    );
  }
}

function logback(file: string): string {
  return `<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${file}</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
`;
}

function seedTopics(store: string, topics: LocalRocketMQ4Options['topics']): void {
  const topicConfigTable = Object.fromEntries(
    topics.map((t) => [
      t.name,
      {
        topicName: t.name,
        readQueueNums: t.queues ?? 4,
        writeQueueNums: t.queues ?? 4,
        perm: 6,
        topicFilterType: 'SINGLE_TAG',
        topicSysFlag: 0,
        order: false,
      },
    ]),
  );
  writeFileSync(join(store, 'config', 'topics.json'), JSON.stringify({ topicConfigTable }));
}
