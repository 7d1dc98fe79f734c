import { type LocalRocketMQ4, startLocalRocketMQ4 } from '@rocketmq-lambda/tools/rocketmq/local-rocketmq-4.ts';
import type { Producer } from 'ali-ons';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokerProbe } from './support/broker-probe.ts';
import { type CutoverResult, MESSAGE_DELAY_LEVEL, QUEUE_IDS, replayCutover } from './support/legacy-cutover.ts';
import { ORDER_TOPIC } from './support/master-slave-switchover.ts';
import { orderServiceProducer } from './support/rocketmq4-producer.ts';

/**
 * The cutover of a live consumer group (docs/migration.md) end to end on RocketMQ 4.7.1 (name
 * server + broker, real JVMs): the article's consumer as a Java replica on MariaDB, the runbook in
 * the middle of a stream of orders, the bridge taking the legacy group over, the points consumer on
 * the emulator. One cluster and one topic (ORDER_TOPIC, the points consumer's); the negative
 * control, without the imports, runs with its own groups.
 */
let rocketMq: LocalRocketMQ4 | undefined;
let producer: Producer | undefined;
let probe: BrokerProbe | undefined;

beforeAll(async () => {
  rocketMq = await startLocalRocketMQ4({
    topics: [{ name: ORDER_TOPIC, queues: QUEUE_IDS.length }],
    brokerSettings: { messageDelayLevel: MESSAGE_DELAY_LEVEL },
  });
  producer = await orderServiceProducer(rocketMq.namesrvAddr);
  probe = await BrokerProbe.open(rocketMq.namesrvAddr);
});

afterAll(async () => {
  await probe?.close();
  await producer?.close();
  await rocketMq?.stop();
});

/** Every kind of copy the cutover must meet came through to the points consumer. */
function expectEveryKindOfCopyArrived(result: CutoverResult) {
  expect(result.copies.uncommitted.length).toBeGreaterThan(0);
  const retried = result.copies.retry;
  expect(retried.length).toBeGreaterThanOrEqual(
    result.specials.retryAwarded.length + result.specials.retryFailed.length,
  );
  // Taken over from %RETRY% with the legacy reconsumeTimes: the first SQS receive is attempt 2.
  for (const r of retried) expect(r.attempt).toBeGreaterThanOrEqual(2);
  expect(result.copies.deadLetterResend).toHaveLength(1);
  expect(result.copies.producerResend).toHaveLength(1);
}

const settlementOf = (r: CutoverResult['copies']['uncommitted'][number]) =>
  r.settlement.outcome === 'duplicate' ? r.settlement.reason : r.settlement.outcome;

describe('RocketMQ 4.7.1: cutover of a live consumer group from the Java consumer to the bridge and Lambda', () => {
  it('backfill import, legacy consumer killed before its offset commit with messages in %RETRY%, delta import, takeover, %DLQ% re-send and producer re-send: every order awarded once across MariaDB and DynamoDB, the audit finds nothing', async () => {
    const result = await replayCutover(rocketMq!, producer!, probe!, {
      prefix: 'CUT',
      legacyGroup: 'LEGACY_POINT_GROUP',
      withImport: true,
    });

    // Every kind of copy arrived here ...
    expectEveryKindOfCopyArrived(result);
    // ... and each copy of a legacy-processed message was suppressed by its imported record.
    for (const r of result.copies.uncommitted) expect(settlementOf(r)).toBe('legacy-record-exists');
    expect(result.copies.deadLetterResend.map(settlementOf)).toEqual(['legacy-record-exists']);
    expect(result.copies.producerResend.map(settlementOf)).toEqual(['legacy-record-exists']);
    // The %RETRY% copies of orders the replica awarded are suppressed; the ones it failed are awarded here, once.
    const orderOf = new Map(result.orders.map((o) => [o.msgId, o.orderNo]));
    for (const r of result.copies.retry)
      if (result.specials.retryAwarded.includes(orderOf.get(r.msgId!)!))
        expect(settlementOf(r)).toBe('legacy-record-exists');
    for (const orderNo of result.specials.retryFailed)
      expect(result.awardsPerOrder.get(orderNo), orderNo).toEqual({ legacy: 0, here: 1 });
    // Every order awarded exactly once across both systems; the moved ledger adds up.
    for (const order of result.orders) {
      const a = result.awardsPerOrder.get(order.orderNo);
      expect((a?.legacy ?? 0) + (a?.here ?? 0), order.orderNo).toBe(1);
    }
    for (const [userId, b] of result.balances) expect(b.actual, `balance of ${userId}`).toBe(b.expected);
    expect(result.ledgerMismatches).toEqual([]);
    // The cross-system audit finds nothing.
    expect(result.audit.json().crossSystem.inBothSystems).toEqual([]);
    expect(result.audit.code).toBe(0);
  }, 480_000);

  it('negative control: the same run without the imports awards the copies a second time, and the audit finds them', async () => {
    const result = await replayCutover(rocketMq!, producer!, probe!, {
      prefix: 'CTL',
      legacyGroup: 'LEGACY_CONTROL_GROUP',
      withImport: false,
    });

    expectEveryKindOfCopyArrived(result);
    const twice = [...result.awardsPerOrder].filter(([, a]) => a.legacy + a.here > 1).map(([orderNo]) => orderNo);
    expect(twice.length).toBeGreaterThan(0);
    // The re-sent letter's order and the re-sent order: awarded by the replica, then here (by the re-send, or by an
    // uncommitted copy that came first).
    for (const orderNo of [result.specials.deadLetter, result.specials.resent])
      expect(result.awardsPerOrder.get(orderNo), orderNo).toEqual({ legacy: 1, here: 1 });
    expect(result.copies.producerResend.map(settlementOf)).toEqual(['processed']);
    const found = result.audit.json().crossSystem.inBothSystems.map((c) => c.orderNo);
    expect(found.length).toBeGreaterThan(0);
    expect([...found].sort()).toEqual([...twice].sort());
    expect(result.audit.code).toBe(1);
  }, 480_000);
});
