import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONSUMER_ENV } from '../../../lib/config/consumer-environment.ts';
import { CONSUMER_GROUPS, type ConsumerGroupDefinition } from '../../../lib/config/resources.ts';
import { consumerConfigFromEnv } from '../../../lib/consumer/consumer-config.ts';
import type { ConsumerModule } from '../../../lib/consumer/consumer-module.ts';
import { InvalidConsumerConfigError } from '../../../lib/idempotency/errors.ts';
import { registrationOf } from '../../../scripts/local/local-consumers.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

/** What the catalogue entry's module exports, loaded the way the local run and esbuild find it: by the entry path. */
async function moduleOf(def: ConsumerGroupDefinition): Promise<Partial<{ consumer: ConsumerModule; handler: unknown }>> {
  return import(pathToFileURL(resolve(ROOT, def.entry)).href);
}

describe.each(CONSUMER_GROUPS)('catalogue entry $group', (def) => {
  it('has a handler module that declares this very entry as its group', async () => {
    expect(existsSync(resolve(ROOT, def.entry))).toBe(true);
    const mod = await moduleOf(def);
    expect(mod.consumer?.definition).toBe(def);
    expect(typeof mod.handler).toBe('function');
    expect(mod.handler).toBe(mod.consumer?.handler);
  });

  it('is registered with the local run under the names and needs of its entry', () => {
    const registration = registrationOf(def.group);
    expect(registration).toBeDefined();
    expect(registration!.functionName).toBe(def.functionName);
    expect(registration!.usesCouponService).toBe(('services' in def ? (def.services as readonly string[]) : []).includes('coupon-service'));
  });

  it('names a unique function and group', () => {
    expect(CONSUMER_GROUPS.filter((g) => g.group === def.group)).toHaveLength(1);
    expect(CONSUMER_GROUPS.filter((g) => g.functionName === def.functionName)).toHaveLength(1);
  });
});

describe('a function deployed for one group never runs as another', () => {
  it('refuses at cold start when CONSUMER_GROUP names another group, naming both', () => {
    const [points, coupons] = CONSUMER_GROUPS;
    const env = { [CONSUMER_ENV.group]: coupons.group, IDEMPOTENCY_TABLE: 'i', LEDGER_TABLE: 'l', ACCOUNTS_TABLE: 'a', DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:1/q' };
    expect(() => consumerConfigFromEnv(points, env)).toThrow(InvalidConsumerConfigError);
    expect(() => consumerConfigFromEnv(points, env)).toThrow(
      'this function was deployed for consumer group coupon-consumer-group (CONSUMER_GROUP) but runs the handler of point-consumer-group (functions/points-consumer/handler.ts)',
    );
    expect(consumerConfigFromEnv(points, { ...env, [CONSUMER_ENV.group]: points.group }).tables).toEqual({ idempotency: 'i', ledger: 'l', accounts: 'a' });
  });
});
