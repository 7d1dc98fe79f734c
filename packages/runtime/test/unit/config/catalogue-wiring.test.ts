import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  chaosPluginPath,
  loadChaosPlugins,
  MissingChaosPluginError,
} from '@rocketmq-lambda/tools/chaos/plugin-discovery.ts';
import {
  declaredTables,
  HandlerModuleError,
  type LocalConsumerDeps,
  loadRegistration,
} from '@rocketmq-lambda/tools/local/local-consumers.ts';
import { PROCESS_SIGNING_KEY } from '@rocketmq-lambda/tools/local/local-signing-key.ts';
import { REFUNDS } from '@rocketmq-lambda/tools/testing/example-group/handler.ts';
import { describe, expect, it, vi } from 'vitest';
import { CONSUMER_ENV } from '../../../src/config/consumer-environment.ts';
import {
  assertCatalogueEntry,
  CONSUMER_GROUPS,
  type ConsumerGroupDefinition,
  catalogue,
  InvalidCatalogueEntryError,
} from '../../../src/config/resources.ts';
import { type ConsumerModule, defineConsumer, InvalidConsumerConfigError } from '../../../src/consumer/index.ts';
import { consumerConfigFromEnv } from '../../../src/consumer/internal.ts';
import { RetrySchedule } from '../../../src/rocketmq/index.ts';

const ROOT = resolve(import.meta.dirname, '../../../../..');

/** What the catalogue entry's module exports, loaded the way the local run and esbuild find it: by the entry path. */
async function moduleOf(
  def: ConsumerGroupDefinition,
): Promise<Partial<{ consumer: ConsumerModule; handler: unknown }>> {
  return import(pathToFileURL(resolve(ROOT, def.entry)).href);
}

describe.each(CONSUMER_GROUPS)('catalogue entry $group', (def) => {
  it('passes the catalogue check: its tables hold what its strategy and ordering keep records in', () => {
    expect(() => assertCatalogueEntry(def)).not.toThrow();
  });

  it('has a handler module that declares this very entry as its group', async () => {
    expect(existsSync(resolve(ROOT, def.entry)), `${def.group}: its handler module ${def.entry} does not exist`).toBe(
      true,
    );
    const mod = await moduleOf(def);
    expect(mod.consumer?.definition).toBe(def);
    expect(typeof mod.handler).toBe('function');
    expect(mod.handler).toBe(mod.consumer?.handler);
  });

  it('is registered with the local run, found through its entry alone, with the needs of its entry', async () => {
    const registration = await loadRegistration(def);
    expect(registration.definition).toBe(def);
    expect(registration.usesCouponService).toBe(
      ('services' in def ? (def.services as readonly string[]) : []).includes('coupon-service'),
    );
    expect(registration.needsOrders).toBe((def.tables as readonly string[]).includes('orders'));
  });

  it('has a chaos plug-in, found by convention, for this very group', async () => {
    const path = chaosPluginPath(def.group);
    expect(existsSync(resolve(ROOT, path)), `${def.group}: its chaos plug-in ${path} does not exist`).toBe(true);
    const plugins = await loadChaosPlugins([def]);
    expect(plugins.get(def.group)?.group).toBe(def.group);
  });

  it('names a unique function and group', () => {
    expect(CONSUMER_GROUPS.filter((g) => g.group === def.group)).toHaveLength(1);
    expect(CONSUMER_GROUPS.filter((g) => g.functionName === def.functionName)).toHaveLength(1);
  });
});

describe('the local run refuses a catalogue entry its handler module does not declare', () => {
  const [points, coupons] = CONSUMER_GROUPS;

  it.each([
    [
      'a module that does not exist',
      { ...points, entry: 'packages/consumers/functions/nowhere/handler.ts' },
      'its handler module packages/consumers/functions/nowhere/handler.ts does not exist',
    ],
    [
      'a module without a consumer export',
      { ...points, entry: 'packages/runtime/src/config/resources.ts' },
      'packages/runtime/src/config/resources.ts exports no `consumer`',
    ],
    [
      'a module defined for another group',
      { ...coupons, entry: points.entry },
      'exports a consumer defined for consumer group point-consumer-group',
    ],
    [
      'a module defined for a copy of the entry',
      { ...points },
      'exports a consumer defined for a copy of its catalogue entry',
    ],
  ])('%s', async (_, definition, message) => {
    await expect(loadRegistration(definition)).rejects.toThrow(HandlerModuleError);
    await expect(loadRegistration(definition)).rejects.toThrow(message);
  });
});

describe('an entry whose tables miss what its strategy keeps records in is refused where it is defined', () => {
  const [points, coupons] = CONSUMER_GROUPS;
  const leaseWithoutRecords = { ...coupons, group: 'voucher-consumer-group', tables: [] } as const;
  const transactionalWithoutRecords = { ...points, tables: ['ledger', 'accounts'] } as const;
  const refusal = (group: string, strategy: string) =>
    `consumer group ${group}: strategy '${strategy}' keeps its records in the idempotency table, but tables [`;

  it.each([
    [leaseWithoutRecords, 'lease'],
    [transactionalWithoutRecords, 'transactional'],
  ] as const)('in the catalogue itself (%# %s), naming the missing table', (entry, strategy) => {
    expect(() => catalogue([entry])).toThrow(InvalidCatalogueEntryError);
    expect(() => catalogue([entry])).toThrow(refusal(entry.group, strategy));
    expect(() => catalogue([entry])).toThrow("does not list 'idempotency'");
  });

  it('at the handler module’s import (in Lambda: the cold start)', () => {
    const define = () =>
      defineConsumer(leaseWithoutRecords, {
        parsePayload: (body) => body,
        keyOf: (body) => body,
        business: () => () => 'granted',
      });
    expect(define).toThrow(InvalidCatalogueEntryError);
    expect(define).toThrow(refusal('voucher-consumer-group', 'lease'));
  });

  it('in the local run, before its module is loaded', async () => {
    await expect(loadRegistration(transactionalWithoutRecords)).rejects.toThrow(
      refusal('point-consumer-group', 'transactional'),
    );
  });

  it('a state-transition group keeps no records: its business table is enough', () => {
    expect(() => catalogue([REFUNDS])).not.toThrow();
  });
});

describe('the local run hands a consumer only the tables its entry declares, as IAM grants them', () => {
  const allTables = { idempotency: 'i', ledger: 'l', accounts: 'a', orders: 'o' };

  it.each(CONSUMER_GROUPS.map((def) => [def.group, def] as const))('%s', (_, def) => {
    expect(Object.keys(declaredTables(def, allTables)).sort()).toEqual([...def.tables].sort());
  });

  it('the consumer the registration builds is configured with those alone', async () => {
    const registration = await loadRegistration(REFUNDS);
    const { consumer } = await import('@rocketmq-lambda/tools/testing/example-group/handler.ts');
    const create = vi.spyOn(consumer, 'create');
    const deps: LocalConsumerDeps = {
      aws: { region: 'us-east-1' },
      tables: allTables,
      deadLetterQueueUrl: 'http://127.0.0.1:1/dlq',
      schedule: new RetrySchedule([1]),
      envelopeKeys: PROCESS_SIGNING_KEY.ring,
      onReport: () => {},
      couponServiceUrl: '',
    };
    registration.create(deps);
    const tables = create.mock.calls[0]?.[0].tables;
    create.mockRestore();
    expect(tables).toEqual({ orders: 'o' });
  });
});

describe('the chaos run refuses a group without a plug-in', () => {
  it('names the file it expected', async () => {
    const unplugged = { ...CONSUMER_GROUPS[0], group: 'unplugged-consumer-group' };
    await expect(loadChaosPlugins([unplugged])).rejects.toThrow(MissingChaosPluginError);
    await expect(loadChaosPlugins([unplugged])).rejects.toThrow(
      'consumer group unplugged-consumer-group has no chaos plug-in: expected packages/tools/src/chaos/groups/unplugged-consumer-group.ts',
    );
  });
});

describe('a function deployed for one group never runs as another', () => {
  it('refuses at cold start when CONSUMER_GROUP names another group, naming both', () => {
    const [points, coupons] = CONSUMER_GROUPS;
    const env = {
      [CONSUMER_ENV.group]: coupons.group,
      IDEMPOTENCY_TABLE: 'i',
      LEDGER_TABLE: 'l',
      ACCOUNTS_TABLE: 'a',
      OUTBOX_TABLE: 'o',
      DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:1/q',
      ENVELOPE_SIGNING_SECRET: 'rmq-test/envelope-signing-key',
    };
    expect(() => consumerConfigFromEnv(points, env)).toThrow(InvalidConsumerConfigError);
    expect(() => consumerConfigFromEnv(points, env)).toThrow(
      'this function was deployed for consumer group coupon-consumer-group (CONSUMER_GROUP) but runs the handler of point-consumer-group (packages/consumers/functions/points-consumer/handler.ts)',
    );
    expect(consumerConfigFromEnv(points, { ...env, [CONSUMER_ENV.group]: points.group }).tables).toEqual({
      idempotency: 'i',
      ledger: 'l',
      accounts: 'a',
    });
  });
});
