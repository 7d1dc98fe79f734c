import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { notificationClientOf, parseAwardEvent } from '@rocketmq-lambda/consumers/notifications/index.ts';
import {
  awardWrites,
  orderPaidFingerprintFields,
  parseOrderPaid,
  pointsAwardedMessage,
} from '@rocketmq-lambda/consumers/points/index.ts';
import { consumerGroup, outboxTtlOf, recordIdPrefix } from '@rocketmq-lambda/runtime/config/index.ts';
import { defineConsumer } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { outboxWrites, transactionalStrategy } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { describe, expect, inject, it } from 'vitest';
import { type ChaosOptions, runChaos } from '../../src/chaos/chaos-run.ts';
import type { ConsumerFactory } from '../../src/chaos/fault-plan.ts';
import { interceptCommands } from '../../src/instrumentation/command-interceptor.ts';

process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const POINTS = consumerGroup('point-consumer-group');
const NOTIFICATIONS = consumerGroup('notification-consumer-group');

/** A seeded chaos run of the points and notification groups, on its own resources of the shared emulator. */
function run(options: Partial<ChaosOptions>) {
  return runChaos({
    seed: 7,
    messages: 120,
    consumers: 2,
    groups: [POINTS.group, NOTIFICATIONS.group],
    endpoint: inject('emulatorEndpoint'),
    prefix: `ob${randomUUID().slice(0, 8)}`,
    ...options,
  });
}

/**
 * The points consumer as it would be without the outbox: its transaction commits the award alone, then
 * it writes the announcement on its own, and dies between the two the first time for every order.
 */
const publishAfterCommit: ConsumerFactory = (deps) => {
  const died = new Set<string>();
  interceptCommands(
    deps.dynamoDb,
    'diesBeforeAnnouncing',
    async (command, send) => {
      const input = command.input as { TableName?: string; Item?: { businessKey?: string } };
      const key = input.Item?.businessKey;
      if (command.name === 'PutCommand' && input.TableName === deps.outboxTable && key && !died.has(key)) {
        died.add(key);
        throw Object.assign(new Error('died between the commit and the announcement'), { name: 'ProcessKilled' });
      }
      return send();
    },
    { per: 'command' },
  );
  const weak = defineConsumer(POINTS, {
    strategy: (wiring) => {
      const base = transactionalStrategy({
        client: wiring.dynamoDb,
        tableName: wiring.tables.idempotency!,
        group: POINTS.group,
        recordIdPrefix: recordIdPrefix(POINTS.group),
        ttlSeconds: wiring.ttlSeconds,
      });
      return {
        ...base,
        async commit(msg, result) {
          const settlement = await base.commit(msg, { writes: result.writes });
          if (settlement.outcome !== 'processed') return settlement;
          const announcements = outboxWrites(msg, result.publishes ?? [], {
            group: POINTS.group,
            publishes: POINTS.publishes,
            tableName: deps.outboxTable,
            ttlSeconds: outboxTtlOf(POINTS),
            now: Date.now,
          });
          for (const write of Array.isArray(announcements) ? announcements : [])
            await wiring.dynamoDb.send(new PutCommand(write.item.Put as ConstructorParameters<typeof PutCommand>[0]));
          return settlement;
        },
      };
    },
    parsePayload: parseOrderPaid,
    keyOf: (order) => order.orderNo,
    fingerprintFields: orderPaidFingerprintFields,
    business:
      ({ tables }) =>
      (msg) => ({
        writes: awardWrites(
          msg.payload,
          { msgId: msg.message.msgId, fingerprint: msg.fingerprint },
          tables,
          new Date(),
        ),
        publishes: msg.payload.points > 0 ? [pointsAwardedMessage(msg.payload)] : [],
      }),
  });
  return weak.create({ ...deps, packing: false });
};

/** The notification consumer keyed on the msgId (the incident's mistake) instead of the event id. */
const notifyByMsgId: ConsumerFactory = (deps) =>
  defineConsumer(NOTIFICATIONS, {
    parsePayload: (body, message) => ({ ...parseAwardEvent(body, message), msgId: message.msgId }),
    keyOf: (event) => event.msgId,
    fingerprintFields: (event) => event.award,
    business: (wiring) => {
      const notifications = notificationClientOf(wiring);
      return (msg, invocation) =>
        notifications.notify({ eventId: msg.key, ...msg.payload.award }, { remainingMs: invocation.remainingMs() });
    },
  }).create(deps);

/** The real consumers' run, against which each weakened one is read (made once, by the first test that asks). */
let realRun: ReturnType<typeof run> | undefined;
const real = () => {
  realRun ??= run({});
  return realRun;
};

describe.concurrent('the outbox under chaos: each protection removed fails the outbox invariant', () => {
  it('the announcement in the effect’s transaction — an award announced after its commit is lost when the consumer dies in between', async () => {
    const [held, weak] = await Promise.all([real(), run({ replace: { [POINTS.group]: publishAfterCommit } })]);

    expect([...held.invariants.violations, ...held.outboxViolations]).toEqual([]);
    expect(held.summary.invariantHolds).toBe(true);
    expect(held.summary.outbox).toMatchObject({ pending: 0, orphaned: 0, downstreamDouble: 0, holds: true });
    expect(held.summary.outbox!.committed).toBeGreaterThan(0);
    expect(weak.summary.outbox!.orphaned).toBeGreaterThan(0);
    expect(weak.outboxViolations.join('\n')).toMatch(/effect SO\S+ has no outbox event/);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 180_000);

  it('downstream dedup on the event id — a consumer keyed on the msgId notifies an award twice when a carrier mints a new msgId', async () => {
    const [held, weak] = await Promise.all([real(), run({ replace: { [NOTIFICATIONS.group]: notifyByMsgId } })]);

    expect(held.summary.outbox).toMatchObject({ downstreamDouble: 0, holds: true });
    expect(held.faults.relay.kills + held.faults.relay.redeliveries).toBeGreaterThan(0);
    expect(weak.summary.outbox!.downstreamDouble).toBeGreaterThan(0);
    expect(weak.summary.invariantHolds).toBe(false);
  }, 180_000);
});
