import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { type LocalRocketMQ, startLocalRocketMQ } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq.ts';
import { Producer } from 'rocketmq-client-nodejs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RocketMQProtocol } from '../src/bridge-config.ts';
import { type IncidentCluster, ORDER_TOPIC, replayOrderIncident } from './support/order-incident.ts';

/**
 * The incident on RocketMQ 5.5.0 (name server + proxy with its embedded broker, real JVMs), the
 * bridge on the gRPC protocol, the points consumer on the emulator.
 */
const SILENT = { info() {}, warn() {}, error() {}, debug() {} };

let rocketMq: LocalRocketMQ | undefined;
let producer: Producer | undefined;

beforeAll(async () => {
  rocketMq = await startLocalRocketMQ({ topics: [{ name: ORDER_TOPIC }], groups: [{ name: POINTS_GROUP }] });
  console.info(`local RocketMQ 5.5.0 up in ${rocketMq.startupMs} ms`);
  producer = new Producer({ endpoints: rocketMq.proxyEndpoint, namespace: '', logger: SILENT, requestTimeout: 3_000 });
  await producer.startup();
});

afterAll(async () => {
  await producer?.shutdown().catch(() => undefined);
  await rocketMq?.stop();
});

function cluster(): IncidentCluster {
  return {
    version: '5.5.0',
    connection: {
      protocol: RocketMQProtocol.RocketMQ5,
      proxyEndpoint: rocketMq!.proxyEndpoint,
      clusterName: rocketMq!.clusterName,
      sslEnabled: false,
    },
    // The client makes the msgId once per send call and keeps it across its own retries.
    send: async (order) =>
      (
        await producer!.send({
          topic: ORDER_TOPIC,
          tag: 'PAID',
          keys: [order.orderNo],
          body: Buffer.from(JSON.stringify(order)),
        })
      ).messageId,
    killBroker: () => rocketMq!.killBroker(),
    restartBroker: () => rocketMq!.restartBroker(),
  };
}

describe('the incident on RocketMQ 5.5.0 (the broker failover that double-awarded 47 orders)', () => {
  it('broker SIGKILLed and restarted on its store, bridge SIGKILLed before its ack: every order awarded exactly once', async () => {
    const result = await replayOrderIncident(cluster(), { orders: 240, resendEvery: 12 });
    const { figures } = result;

    // Both faults happened.
    expect(result.bridgeFault?.msgIds.length).toBeGreaterThan(0);
    expect(figures.brokerRecoveryMs).toBeGreaterThan(0);
    // Nothing lost: every message a producer got a msgId for reached the points queue.
    expect(result.sentMsgIds.filter((id) => !result.deliveredMsgIds.includes(id))).toEqual([]);
    // Duplicates did arrive: RocketMQ redelivered messages, and the application re-sent orders.
    expect(figures.redeliveriesArrived).toBeGreaterThan(0);
    expect(figures.applicationResends).toBeGreaterThan(0);
    // ... and every one of them was suppressed: one award per order, balances equal the ledger.
    expect(figures.duplicatesSuppressed).toBe(figures.deliveriesForwarded - figures.orders);
    expect(figures.awards).toBe(figures.orders);
    expect(result.ledger).toEqual(result.expectedLedger);
    for (const [, balance] of result.balances) expect(balance.actual).toBe(balance.expected);
    expect(result.ledgerMismatches).toEqual([]);
  }, 420_000);
});
