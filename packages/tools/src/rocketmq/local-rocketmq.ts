import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { NEVER_DEAD_LETTER_RETRY_MAX_TIMES } from '@rocketmq-lambda/bridge/index.ts';
import { Producer } from 'rocketmq-client-nodejs';
import { ensureRocketMQJars, ROCKETMQ_LIB_DIR } from './rocketmq-jars.ts';

/**
 * A throw-away RocketMQ 5 on this machine: a name server plus a proxy in local mode (which embeds
 * the broker), both from the official Apache jars, with their store, logs and config in a
 * temporary folder that `stop()` removes.
 *
 * Topics and consumer groups are declared up front: the RocketMQ 5 proxy neither auto-creates a
 * topic on send nor a group on subscribe over gRPC, and `mqadmin` costs one JVM start (~6 s) per
 * command. The broker loads `<store>/config/topics.json` and `subscriptionGroup.json` at boot (it is
 * how topics survive a restart), so the files are seeded before the first start.
 */
export interface LocalTopic {
  readonly name: string;
  /** `FIFO` topics need a FIFO consumer group to be consumed in order; `DELAY` topics take delay messages. */
  readonly type?: 'NORMAL' | 'FIFO' | 'DELAY';
  readonly queues?: number;
}

export interface LocalConsumerGroup {
  readonly name: string;
  /** A FIFO group delivers one message group in order: the next only after the previous is acked. */
  readonly fifo?: boolean;
  /**
   * Deliveries the proxy makes before it moves a message to `%DLQ%<group>`, minus one. Default:
   * never, what the bridge requires of its groups (packages/bridge/src/group-retry-policy.ts); RocketMQ's own
   * default is 16.
   */
  readonly retryMaxTimes?: number;
}

export interface LocalRocketMQOptions {
  readonly topics?: readonly LocalTopic[];
  readonly groups?: readonly LocalConsumerGroup[];
  readonly clusterName?: string;
  readonly brokerName?: string;
  readonly java?: string;
  readonly startTimeoutMs?: number;
  /**
   * The proxy's gRPC and remoting servers and the broker's HA port bind every interface (the
   * proxy builds its gRPC server with `forPort` and offers no bind address). Unless this is set,
   * starting refuses to run outside a network namespace that has loopback only, which is what
   * `npm run test:bridge` provides with `unshare --net`.
   */
  readonly allowExposedPorts?: boolean;
}

export interface LocalRocketMQ {
  /** `127.0.0.1:<port>` of the proxy's gRPC endpoint, what the RocketMQ 5 clients dial. */
  readonly proxyEndpoint: string;
  readonly namesrvAddr: string;
  readonly clusterName: string;
  readonly brokerName: string;
  /** Milliseconds from spawning the name server until clients can resolve every declared topic. */
  readonly startupMs: number;
  /** Elapsed at each milestone: name server up, proxy (and broker) up, topic routes resolvable. */
  readonly phasesMs: { readonly namesrv: number; readonly proxy: number; readonly routes: number };
  /** SIGKILL the proxy and its embedded broker: no flush, no unregistering, the store as a crash leaves it. */
  killBroker(): Promise<void>;
  /** Starts the proxy (and broker) again on the same store and ports; resolves once topic routes resolve. */
  restartBroker(): Promise<{ recoveryMs: number }>;
  stop(): Promise<void>;
}

export class LocalRocketMQStartError extends Error {
  override readonly name = 'LocalRocketMQStartError';
}

export class ExposedNetworkError extends Error {
  override readonly name = 'ExposedNetworkError';
}

const NAMESRV_READY = /The Name Server boot success/;
const PROXY_READY = /rocketmq-proxy startup successfully/;
// Small heaps: the machine is shared and the broker's store is mmapped outside the heap anyway.
const JVM_OPTIONS = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xss512k', '-XX:MaxDirectMemorySize=256m'];
/**
 * Java 17 closes the JDK internals the broker reaches into: direct buffers and their cleaners
 * (`jdk.internal.ref.Cleaner`, used when a broker recovering from a crash unmaps store files).
 */
export const JAVA_17_OPENS = [
  '--add-opens',
  'java.base/java.nio=ALL-UNNAMED',
  '--add-exports',
  'java.base/sun.nio.ch=ALL-UNNAMED',
  '--add-opens',
  'java.base/sun.nio.ch=ALL-UNNAMED',
  '--add-opens',
  'java.base/java.lang=ALL-UNNAMED',
  '--add-exports',
  'java.base/jdk.internal.ref=ALL-UNNAMED',
  '--add-opens',
  'java.base/jdk.internal.ref=ALL-UNNAMED',
];

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

export async function startLocalRocketMQ(options: LocalRocketMQOptions = {}): Promise<LocalRocketMQ> {
  if (!options.allowExposedPorts) assertLoopbackOnlyNetwork();
  await ensureRocketMQJars();
  installExitHook();

  const clusterName = options.clusterName ?? 'LocalCluster';
  const brokerName = options.brokerName ?? 'broker-a';
  const home = mkdtempSync(join(tmpdir(), 'local-rocketmq-'));
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const jvms = new LocalRocketMQProcesses(options.java ?? process.env.JAVA ?? 'java', home, timeoutMs);
  const stop = async () => {
    await jvms.stop();
    // LOCAL_ROCKETMQ_KEEP=1 keeps the store and the logs for a post-mortem.
    if (process.env.LOCAL_ROCKETMQ_KEEP !== '1') rmSync(home, { recursive: true, force: true });
  };

  try {
    const namesrvPort = await freePort();
    const brokerPort = await freeBrokerPort();
    const grpcPort = await freePort();
    const remotingPort = await freePort();
    const namesrvAddr = `127.0.0.1:${namesrvPort}`;
    writeConfig(home, { clusterName, brokerName, namesrvAddr, namesrvPort, brokerPort, grpcPort, remotingPort });
    seedMetadata(join(home, 'store'), options.topics ?? [], options.groups ?? []);

    const started = Date.now();
    await jvms.startNamesrv();
    const namesrvMs = Date.now() - started;
    await jvms.startProxy();
    const proxyMs = Date.now() - started;
    const proxyEndpoint = `127.0.0.1:${grpcPort}`;
    const topicNames = (options.topics ?? []).map((t) => t.name);
    await waitForRoutes(proxyEndpoint, topicNames, started + timeoutMs);
    const startupMs = Date.now() - started;
    return {
      proxyEndpoint,
      namesrvAddr,
      clusterName,
      brokerName,
      startupMs,
      phasesMs: { namesrv: namesrvMs, proxy: proxyMs, routes: startupMs },
      killBroker: () => jvms.killProxy(),
      restartBroker: async () => {
        const began = Date.now();
        await jvms.startProxy();
        await waitForRoutes(proxyEndpoint, topicNames, began + timeoutMs);
        return { recoveryMs: Date.now() - began };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The name server and the proxy (with the broker it embeds) of one local RocketMQ 5, each started once it is ready. */
class LocalRocketMQProcesses {
  /** Every JVM started, in order; a restarted proxy is one more. */
  private readonly children: ChildProcess[] = [];
  private proxy: ChildProcess | undefined;
  private proxyStarts = 0;

  constructor(
    private readonly java: string,
    private readonly home: string,
    private readonly timeoutMs: number,
  ) {}

  async startNamesrv(): Promise<void> {
    const { java, home } = this;
    const args = ['-c', join(home, 'namesrv.properties')];
    const namesrv = spawnJvm(java, home, '-Xmx64m', 'org.apache.rocketmq.namesrv.NamesrvStartup', args, 'namesrv');
    this.children.push(namesrv);
    await waitForLine(namesrv, NAMESRV_READY, this.timeoutMs, join(home, 'namesrv.out'));
  }

  /** The proxy, again on the same store and ports when it is a restart: its output then goes to `proxy-<n>.out`. */
  async startProxy(): Promise<void> {
    const { java, home } = this;
    this.proxyStarts += 1;
    const name = this.proxyStarts === 1 ? 'proxy' : `proxy-${this.proxyStarts}`;
    const proxy = spawnJvm(
      java,
      home,
      '-Xmx256m',
      'org.apache.rocketmq.proxy.ProxyStartup',
      ['-pm', 'local', '-pc', join(home, 'proxy.json'), '-bc', join(home, 'broker.conf')],
      name,
      ROCKETMQ_LIB_DIR,
      JAVA_17_OPENS,
    );
    this.proxy = proxy;
    this.children.push(proxy);
    await waitForLine(proxy, PROXY_READY, this.timeoutMs, join(home, `${name}.out`));
  }

  killProxy(): Promise<void> {
    return killChild(this.proxy!);
  }

  async stop(): Promise<void> {
    // Reverse start order: the broker unregisters from a name server that is still there.
    for (const child of [...this.children].reverse()) await stopChild(child);
  }
}

/**
 * The proxy reports itself up before the broker's first registration at the name server has
 * necessarily landed; until it has, clients fail with "No topic route info". A producer that
 * fetches a topic's route at start-up is the readiness probe clients would agree with.
 *
 * One producer per topic: rocketmq-client-nodejs 1.0.8 fetches the routes of a multi-topic client
 * one after the other, syncs its settings as soon as the first answers, and only then starts
 * listening for the settings reply it waits for. Once the proxy is warm the reply beats the
 * remaining route queries and `startup()` never settles (12 of 12 five-topic starts hung on a local
 * 5.5.0, 60 of 60 one-topic starts succeeded). A one-topic client sends its settings after its only
 * route query, so it cannot lose the reply.
 */
async function waitForRoutes(endpoints: string, topics: string[], deadline: number): Promise<void> {
  for (const topic of topics) await waitForRoute(endpoints, topic, deadline);
}

async function waitForRoute(endpoints: string, topic: string, deadline: number): Promise<void> {
  for (;;) {
    const producer = new Producer({ endpoints, namespace: '', topics: [topic], logger: SILENT, requestTimeout: 3000 });
    let timer: NodeJS.Timeout | undefined;
    // A startup that never settles is a failed attempt too, or the deadline below would never be
    // checked and the caller would wait forever.
    const unanswered = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the producer did not start within 10 s')), 10_000);
    });
    try {
      await Promise.race([producer.startup(), unanswered]);
      await Promise.race([producer.shutdown(), unanswered]);
      return;
    } catch (err) {
      void producer.shutdown().catch(() => undefined);
      if (Date.now() > deadline)
        throw new LocalRocketMQStartError(`the route of ${topic} never appeared: ${String(err)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      clearTimeout(timer);
    }
  }
}

const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

export function assertLoopbackOnlyNetwork(): void {
  const exposed = Object.entries(networkInterfaces())
    .filter(([, addresses]) => addresses?.some((a) => !a.internal))
    .map(([name]) => name);
  if (exposed.length > 0) {
    throw new ExposedNetworkError(
      `the RocketMQ proxy binds all interfaces and this process can reach ${exposed.join(', ')}; ` +
        'run inside a loopback-only network namespace (npm run test:bridge does: unshare --net) ' +
        'or pass allowExposedPorts: true on a machine where that is acceptable',
    );
  }
}

interface Ports {
  clusterName: string;
  brokerName: string;
  namesrvAddr: string;
  namesrvPort: number;
  brokerPort: number;
  grpcPort: number;
  remotingPort: number;
}

function writeConfig(home: string, p: Ports): void {
  const store = join(home, 'store');
  mkdirSync(join(store, 'config'), { recursive: true });
  writeFileSync(join(home, 'namesrv.properties'), `listenPort=${p.namesrvPort}\nbindAddress=127.0.0.1\n`);
  writeFileSync(
    join(home, 'broker.conf'),
    [
      `brokerClusterName=${p.clusterName}`,
      `brokerName=${p.brokerName}`,
      'brokerId=0',
      `listenPort=${p.brokerPort}`,
      'bindAddress=127.0.0.1',
      'brokerIP1=127.0.0.1',
      `namesrvAddr=${p.namesrvAddr}`,
      `storePathRootDir=${store}`,
      `storePathCommitLog=${join(store, 'commitlog')}`,
      // 64 MB commit-log files instead of 1 GB: enough for tests, kinder to a shared disk.
      'mappedFileSizeCommitLog=67108864',
      'autoCreateTopicEnable=false',
      'autoCreateSubscriptionGroup=false',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(home, 'proxy.json'),
    JSON.stringify({
      rocketMQClusterName: p.clusterName,
      namesrvAddr: p.namesrvAddr,
      grpcServerPort: p.grpcPort,
      remotingListenPort: p.remotingPort,
      // The proxy caches "no route" answers; short refresh so routes appear as soon as the broker registers.
      topicRouteServiceCacheRefreshSeconds: 1,
      topicRouteServiceCacheExpiredSeconds: 5,
    }),
  );
}

function seedMetadata(store: string, topics: readonly LocalTopic[], groups: readonly LocalConsumerGroup[]): void {
  const topicConfigTable = Object.fromEntries(
    topics.map((t) => {
      const queues = t.queues ?? 4;
      const type = t.type ?? 'NORMAL';
      return [
        t.name,
        {
          topicName: t.name,
          readQueueNums: queues,
          writeQueueNums: queues,
          perm: 6,
          order: type === 'FIFO',
          // Stored without the `+` that mqadmin's update command uses as its "add attribute" operator.
          attributes: { 'message.type': type },
        },
      ];
    }),
  );
  const subscriptionGroupTable = Object.fromEntries(
    groups.map((g) => [
      g.name,
      {
        groupName: g.name,
        consumeMessageOrderly: g.fifo === true,
        retryMaxTimes: g.retryMaxTimes ?? NEVER_DEAD_LETTER_RETRY_MAX_TIMES,
      },
    ]),
  );
  writeFileSync(join(store, 'config', 'topics.json'), JSON.stringify({ topicConfigTable }));
  writeFileSync(join(store, 'config', 'subscriptionGroup.json'), JSON.stringify({ subscriptionGroupTable }));
}

export function spawnJvm(
  java: string,
  home: string,
  heap: string,
  mainClass: string,
  args: string[],
  name: string,
  libDir = ROCKETMQ_LIB_DIR,
  jvmOptions: readonly string[] = [],
): ChildProcess {
  const child = spawn(
    java,
    [...JVM_OPTIONS, ...jvmOptions, heap, `-Duser.home=${home}`, '-cp', `${libDir}*`, mainClass, ...args],
    {
      cwd: home,
      // ROCKETMQ_HOME and user.home keep every log and default path inside the temporary folder.
      env: { ...process.env, ROCKETMQ_HOME: home, RMQ_PROXY_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const out = join(home, `${name}.out`);
  const append = (chunk: Buffer) => writeFileSync(out, chunk, { flag: 'a' });
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export function waitForLine(child: ChildProcess, ready: RegExp, timeoutMs: number, logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const tail = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-3000) : '');
    const done = (err?: Error) => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-1000);
      if (ready.test(seen)) done();
    };
    const onExit = (code: number | null) =>
      done(new LocalRocketMQStartError(`exited with code ${code} before it was ready:\n${tail()}`));
    const onError = (err: Error) =>
      done(new LocalRocketMQStartError(`cannot run Java (${err.message}); install a JDK 17`));
    const timer = setTimeout(
      () => done(new LocalRocketMQStartError(`not ready within ${timeoutMs} ms:\n${tail()}`)),
      timeoutMs,
    );
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // The broker flushes and unregisters on SIGTERM; a test store is thrown away, so do not wait long.
    const force = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** SIGKILL: no flush, no unregistering; resolves once the process is gone (at once if it already was). */
export async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Orphaned JVMs would outlive a crashed test run: kill whatever is still running when Node exits. */
export function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The broker also listens on `port - 2` (fast channel) and `port + 1` (HA), so all three must be free. */
export async function freeBrokerPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const free = await Promise.all([port - 2, port, port + 1].map(portIsFree));
    if (free.every(Boolean)) return port;
  }
  throw new LocalRocketMQStartError('no free port triple for the broker');
}
