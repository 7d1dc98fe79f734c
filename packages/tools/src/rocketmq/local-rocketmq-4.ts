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
  killChild,
  spawnJvm,
  stopChild,
  waitForLine,
} from './local-rocketmq.ts';
import { ensureRocketMQJars, ROCKETMQ_4 } from './rocketmq-jars.ts';

/**
 * A throw-away Apache RocketMQ 4.7.1 on this machine: a name server and one broker group from the
 * official jars, loopback only, stores and logs in a temporary folder that `stop()` removes. The
 * group is a master (`ASYNC_MASTER`, brokerId 0), and with `slave: true` also a `SLAVE` (brokerId
 * 1, same brokerName) replicating the master's commit log over its HA port. The master can be
 * killed with SIGKILL and started again on the same store and ports: for a single master that is
 * how a broker failover looks to its clients; with a slave it is the 4.x master/slave switchover
 * (no DLedger, so no promotion: clients read from the slave until the master is back, and nothing
 * can be written meanwhile).
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
  /** Also starts a SLAVE of the master's broker group (brokerId 1, 128 MB heap), once the master is registered. */
  readonly slave?: boolean;
}

export interface LocalRocketMQ4 {
  /** `127.0.0.1:<port>`, what RocketMQ 4 clients are given as name server. */
  readonly namesrvAddr: string;
  readonly clusterName: string;
  readonly brokerName: string;
  readonly version: string;
  readonly startupMs: number;
  /** The master's remoting address, `127.0.0.1:<port>`. */
  readonly brokerAddr: string;
  /** The master's store root: `config/consumerOffset.json` holds the consume offsets it has flushed (every 5 s). */
  readonly storeDir: string;
  /** The slave's remoting address, when started with `slave: true`. */
  readonly slaveAddr: string | undefined;
  /** SIGKILL of the master: no flush, no unregistering; its store is left as a crash leaves it. */
  killBroker(): Promise<void>;
  /** Starts the master again on the same store and ports; resolves once it is registered. */
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
  const home = mkdtempSync(join(tmpdir(), 'local-rocketmq4-'));
  const jvms = new LocalRocketMQ4Processes(java, home, options.startTimeoutMs ?? 90_000);
  const stop = async () => {
    await jvms.stop();
    if (process.env.LOCAL_ROCKETMQ_KEEP !== '1') rmSync(home, { recursive: true, force: true });
  };

  try {
    const namesrvPort = await freePort();
    const [brokerPort, slavePort] = await freeBrokerPorts(options.slave ? 2 : 1);
    const namesrvAddr = `127.0.0.1:${namesrvPort}`;
    const group = { clusterName, brokerName, namesrvAddr, acl: options.acl, brokerSettings: options.brokerSettings };
    writeConfig(home, namesrvPort, options.acl);
    writeBrokerConfig(home, 'broker.conf', { ...group, role: 'master', port: brokerPort!, store: 'store' });
    seedTopics(join(home, 'store'), options.topics);
    if (slavePort !== undefined) {
      writeBrokerConfig(home, 'broker-slave.conf', { ...group, role: 'slave', port: slavePort, store: 'store-slave' });
      // The slave copies the master's topics every 10 s; seeded, it serves pulls from its first minute too.
      seedTopics(join(home, 'store-slave'), options.topics);
    }

    const started = Date.now();
    await jvms.startNamesrv();
    // The 4.x broker registers with the name server as the last step of its start, before it reports success.
    await jvms.startMaster();
    // After the master: a slave learns the master's address (for its offset and topic sync) and HA
    // address from its registration, at start and then only every 30 s.
    if (slavePort !== undefined) await jvms.startSlave();
    return {
      namesrvAddr,
      clusterName,
      brokerName,
      version: ROCKETMQ_4.version,
      startupMs: Date.now() - started,
      brokerAddr: `127.0.0.1:${brokerPort}`,
      storeDir: join(home, 'store'),
      slaveAddr: slavePort === undefined ? undefined : `127.0.0.1:${slavePort}`,
      killBroker: () => jvms.killMaster(),
      restartBroker: async () => {
        const began = Date.now();
        await jvms.startMaster();
        return { recoveryMs: Date.now() - began };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The name server, the master and the slave of one local RocketMQ 4.7.1, each started once it is ready. */
class LocalRocketMQ4Processes {
  private namesrv: ChildProcess | undefined;
  private master: ChildProcess | undefined;
  private slave: ChildProcess | undefined;
  private masterStarts = 0;

  constructor(
    private readonly java: string,
    private readonly home: string,
    private readonly timeoutMs: number,
  ) {}

  async startNamesrv(): Promise<void> {
    const args = ['-c', join(this.home, 'namesrv.properties')];
    this.namesrv = this.spawn('-Xmx64m', 'org.apache.rocketmq.namesrv.NamesrvStartup', args, 'namesrv');
    await waitForLine(this.namesrv, NAMESRV_READY, this.timeoutMs, join(this.home, 'namesrv.out'));
  }

  /** The master, again on the same store and ports when it is a restart: its output goes to `broker-<n>.out`. */
  async startMaster(): Promise<void> {
    this.masterStarts += 1;
    this.master = await this.startBroker('broker.conf', '-Xmx256m', `broker-${this.masterStarts}`);
  }

  async startSlave(): Promise<void> {
    this.slave = await this.startBroker('broker-slave.conf', '-Xmx128m', 'broker-slave');
  }

  killMaster(): Promise<void> {
    return killChild(this.master!);
  }

  async stop(): Promise<void> {
    if (this.slave) await stopChild(this.slave);
    if (this.master) await stopChild(this.master);
    if (this.namesrv) await stopChild(this.namesrv);
  }

  private async startBroker(conf: string, heap: string, name: string): Promise<ChildProcess> {
    const args = ['-c', join(this.home, conf)];
    const broker = this.spawn(heap, 'org.apache.rocketmq.broker.BrokerStartup', args, name);
    await waitForLine(broker, BROKER_READY, this.timeoutMs, join(this.home, `${name}.out`));
    return broker;
  }

  private spawn(heap: string, mainClass: string, args: string[], name: string): ChildProcess {
    return spawnJvm(this.java, this.home, heap, mainClass, args, name, ROCKETMQ_4.libDir, JAVA_17_OPENS);
  }
}

/** Port triples (`port - 2`, `port`, `port + 1`) for each broker, none overlapping another's. */
async function freeBrokerPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freeBrokerPort();
    if (ports.every((p) => Math.abs(p - port) > 3)) ports.push(port);
  }
  return ports;
}

interface BrokerSettings {
  clusterName: string;
  brokerName: string;
  namesrvAddr: string;
  role: 'master' | 'slave';
  /** The remoting port; HA listens on `port + 1`, the fast channel on `port - 2`. */
  port: number;
  /** The store's folder under the home folder. */
  store: string;
  acl: LocalRocketMQ4Options['acl'];
  brokerSettings: LocalRocketMQ4Options['brokerSettings'];
}

function writeConfig(home: string, namesrvPort: number, acl: LocalRocketMQ4Options['acl']): void {
  mkdirSync(join(home, 'conf'), { recursive: true });
  // Both start scripts configure logback from ROCKETMQ_HOME/conf and exit when the file is missing.
  for (const name of ['namesrv', 'broker', 'tools'])
    writeFileSync(join(home, 'conf', `logback_${name}.xml`), logback(join(home, `${name}.log`)));
  writeFileSync(join(home, 'namesrv.properties'), `listenPort=${namesrvPort}\n`);
  // The broker reads ROCKETMQ_HOME/conf/plain_acl.yml; every request must carry a valid signature.
  if (acl) {
    writeFileSync(
      join(home, 'conf', 'plain_acl.yml'),
      [
        'globalWhiteRemoteAddresses: []',
        'accounts:',
        `  - accessKey: ${acl.accessKey}`,
        `    secretKey: ${acl.secretKey}`,
        '    admin: false',
        '    defaultTopicPerm: PUB|SUB',
        '    defaultGroupPerm: PUB|SUB',
        '',
      ].join('\n'),
    );
  }
}

function writeBrokerConfig(home: string, file: string, b: BrokerSettings): void {
  const store = join(home, b.store);
  mkdirSync(join(store, 'config'), { recursive: true });
  writeFileSync(
    join(home, file),
    [
      `brokerClusterName=${b.clusterName}`,
      `brokerName=${b.brokerName}`,
      // One broker group: the master is brokerId 0, a slave any other id.
      `brokerId=${b.role === 'master' ? 0 : 1}`,
      `brokerRole=${b.role === 'master' ? 'ASYNC_MASTER' : 'SLAVE'}`,
      'flushDiskType=ASYNC_FLUSH',
      `listenPort=${b.port}`,
      `haListenPort=${b.port + 1}`,
      'brokerIP1=127.0.0.1',
      `namesrvAddr=${b.namesrvAddr}`,
      `storePathRootDir=${store}`,
      `storePathCommitLog=${join(store, 'commitlog')}`,
      // 64 MB commit-log files instead of 1 GB, and a small consume-queue file: enough for tests.
      'mappedFileSizeCommitLog=67108864',
      'mappedFileSizeConsumeQueue=300000',
      'autoCreateTopicEnable=false',
      ...(b.acl ? ['aclEnable=true'] : []),
      ...Object.entries(b.brokerSettings ?? {}).map(([name, value]) => `${name}=${value}`),
      '',
    ].join('\n'),
  );
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
