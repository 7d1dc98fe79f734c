import { setTimeout as sleep } from 'node:timers/promises';
import { type BridgeConfigInput, RocketMQProtocol } from '@rocketmq-lambda/bridge/index.ts';
import { Message, Producer as RemotingProducer } from 'ali-ons';
import { Producer } from 'rocketmq-client-nodejs';
import { startLocalRocketMQ } from '../rocketmq/local-rocketmq.ts';
import { startLocalRocketMQ4 } from '../rocketmq/local-rocketmq-4.ts';

/**
 * The broker side of the bridge benchmark: a throw-away local RocketMQ (5.5.0 through its proxy,
 * or 4.7.1 through its name server) with one topic, and a producer that preloads it. Every
 * consumer group reads the whole topic from its first message (a new group on a fresh broker
 * starts at offset 0), so the bare consumer and the bridge each drain the same preload.
 */
export const BENCH_TOPIC = 'BENCH_TOPIC';
export const SourceVersion = { RocketMQ5: '5', RocketMQ4: '4' } as const;
export type SourceVersion = (typeof SourceVersion)[keyof typeof SourceVersion];

export interface BenchCluster {
  readonly version: string;
  /** The connection part of the bridge configuration. */
  readonly connection: Pick<
    BridgeConfigInput,
    'protocol' | 'proxyEndpoint' | 'nameServer' | 'clusterName' | 'sslEnabled'
  >;
  /** Sends `count` PAID orders; resolves when the broker accepted all of them. */
  preload(count: number): Promise<void>;
  stop(): Promise<void>;
}

const QUEUES = 8;
const SEND_CONCURRENCY = 32;
const SEND_ATTEMPTS = 5;
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const NO_ADDRESS_SERVER = { request: () => Promise.reject(new Error('the name server is given')) };

export async function startBenchCluster(version: SourceVersion, groups: readonly string[]): Promise<BenchCluster> {
  return version === SourceVersion.RocketMQ5 ? startRocketMQ5(groups) : startRocketMQ4();
}

async function startRocketMQ5(groups: readonly string[]): Promise<BenchCluster> {
  const rocketMq = await startLocalRocketMQ({
    topics: [{ name: BENCH_TOPIC, queues: QUEUES }],
    groups: groups.map((name) => ({ name })),
  });
  return {
    version: '5.5.0',
    connection: {
      protocol: RocketMQProtocol.RocketMQ5,
      proxyEndpoint: rocketMq.proxyEndpoint,
      clusterName: rocketMq.clusterName,
      sslEnabled: false,
    },
    async preload(count) {
      const producer = new Producer({
        endpoints: rocketMq.proxyEndpoint,
        namespace: '',
        topics: [BENCH_TOPIC],
        logger: SILENT,
      });
      await producer.startup();
      try {
        await inParallel(count, (i) =>
          producer.send({ topic: BENCH_TOPIC, tag: 'PAID', keys: [orderNo(i)], body: orderBody(i) }),
        );
      } finally {
        await producer.shutdown();
      }
    },
    stop: () => rocketMq.stop(),
  };
}

async function startRocketMQ4(): Promise<BenchCluster> {
  const rocketMq = await startLocalRocketMQ4({ topics: [{ name: BENCH_TOPIC, queues: QUEUES }] });
  return {
    version: rocketMq.version,
    connection: {
      protocol: RocketMQProtocol.RocketMQ4,
      nameServer: rocketMq.namesrvAddr,
      clusterName: rocketMq.clusterName,
      sslEnabled: false,
    },
    async preload(count) {
      const producer = new RemotingProducer({
        nameSrv: rocketMq.namesrvAddr,
        httpclient: NO_ADDRESS_SERVER,
        producerGroup: 'bench-producer',
        logger: SILENT,
      });
      await producer.ready();
      try {
        await inParallel(count, (i) => {
          const message = new Message(BENCH_TOPIC, 'PAID', orderBody(i));
          message.keys = [orderNo(i)];
          return producer.send(message);
        });
      } finally {
        await producer.close();
      }
    },
    stop: () => rocketMq.stop(),
  };
}

const orderNo = (i: number) => `SO-BENCH-${String(i).padStart(7, '0')}`;

/** A body the size of a real order event (~120 bytes). */
function orderBody(i: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      orderNo: orderNo(i),
      userId: `u${i % 997}`,
      points: 1 + (i % 500),
      paidAt: new Date(1_764_000_000_000 + i).toISOString(),
    }),
  );
}

async function inParallel(count: number, send: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) await sendUntilAccepted(next++, send);
  };
  await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, count) }, lane));
}

/**
 * A busy broker refuses sends (4.x: `[TIMEOUT_CLEAN_QUEUE] broker busy`); a producer tries again, as applications do.
 */
async function sendUntilAccepted(i: number, send: (i: number) => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await send(i);
      return;
    } catch (err) {
      if (attempt === SEND_ATTEMPTS) throw err;
      await sleep(200 * attempt);
    }
  }
}
