import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type LocalRocketMQ4, startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import { Message, type Producer } from 'ali-ons';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RocketMQProtocol } from '../src/bridge-config.ts';
import { type IncidentCluster, ORDER_TOPIC, replayOrderIncident } from './support/order-incident.ts';
import { orderServiceProducer } from './support/rocketmq4-producer.ts';

/**
 * The incident on its own release line: Apache RocketMQ 4.7.1 (name server + broker, real JVMs),
 * the bridge on the remoting protocol, the points consumer on the emulator.
 */
let rocketMq: LocalRocketMQ4 | undefined;
let producer: Producer | undefined;

beforeAll(async () => {
  rocketMq = await startLocalRocketMQ4({ topics: [{ name: ORDER_TOPIC, queues: 4 }] });
  console.info(`local RocketMQ ${rocketMq.version} up in ${rocketMq.startupMs} ms`);
  producer = await orderServiceProducer(rocketMq.namesrvAddr);
});

afterAll(async () => {
  await producer?.close();
  await rocketMq?.stop();
});

/**
 * ali-ons does not set UNIQ_KEY; the Java producer the incident's order service ran does, and its
 * own retries keep it. So does this one: the id is made once per send call.
 */
function cluster(): IncidentCluster {
  const ids = new MsgIdGenerator('7F000001', process.pid & 0xffff);
  return {
    version: rocketMq!.version,
    connection: {
      protocol: RocketMQProtocol.RocketMQ4,
      nameServer: rocketMq!.namesrvAddr,
      clusterName: rocketMq!.clusterName,
      sslEnabled: false,
    },
    send: async (order) => {
      const message = new Message(ORDER_TOPIC, 'PAID', JSON.stringify(order));
      message.keys = [order.orderNo];
      message.properties.UNIQ_KEY = ids.next();
      await producer!.send(message);
      return message.properties.UNIQ_KEY;
    },
    killBroker: () => rocketMq!.killBroker(),
    restartBroker: () => rocketMq!.restartBroker(),
  };
}

describe('the incident on RocketMQ 4.7.1 (the broker failover that double-awarded 47 orders)', () => {
  it('broker SIGKILLed and restarted on its store, bridge SIGKILLed before its offset commit: every order awarded exactly once', async () => {
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
