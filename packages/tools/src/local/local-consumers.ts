import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  assertCatalogueEntry,
  type ConsumerGroupDefinition,
  type TableKey,
} from '@rocketmq-lambda/runtime/config/index.ts';
import type { ConsumerHandler, ConsumerModule, RecordReport } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { ConsumerRuntimeConfig } from '@rocketmq-lambda/runtime/consumer/internal.ts';

const REPOSITORY_ROOT = resolve(import.meta.dirname, '../../../..');

/** What the local run hands a consumer factory: the deployed config plus the local observers. */
export interface LocalConsumerDeps extends ConsumerRuntimeConfig {
  onReport: (report: RecordReport) => void;
  /** Base URL of the run's own coupon service stand-in. */
  couponServiceUrl: string;
  /** Base URL of the run's own notification service stand-in. */
  notificationServiceUrl?: string;
  /** The function's logger, when the run ships its log lines (function-log-shipping.ts). */
  logger?: Logger;
}

/**
 * One consumer group the local run can drive: its catalogue entry, and the same factory the
 * deployed handler module uses. Everything else is read from the entry.
 */
export interface ConsumerRegistration {
  readonly definition: ConsumerGroupDefinition;
  readonly create: (deps: LocalConsumerDeps) => ConsumerHandler;
  /** Needs the coupon service stand-in running. */
  readonly usesCouponService: boolean;
  /** Needs the notification service stand-in running. */
  readonly usesNotificationService: boolean;
  /** Acts on existing orders: the run seeds them as the order service would have created them. */
  readonly needsOrders: boolean;
}

/**
 * A catalogue entry's handler module cannot drive its group: the file is missing, it exports
 * no `consumer`, or its `consumer` was defined for another entry (its metrics, tag filter
 * and DLQ would then belong to another group).
 */
export class HandlerModuleError extends Error {
  override readonly name = 'HandlerModuleError';
}

/**
 * The registration of one catalogue entry, found through the entry alone: its `entry` module
 * is loaded the way esbuild bundles it, and must export the `consumer` that `defineConsumer`
 * built from this very entry.
 */
export async function loadRegistration(definition: ConsumerGroupDefinition): Promise<ConsumerRegistration> {
  assertCatalogueEntry(definition);
  const path = resolve(REPOSITORY_ROOT, definition.entry);
  if (!existsSync(path))
    throw new HandlerModuleError(
      `consumer group ${definition.group}: its handler module ${definition.entry} does not exist`,
    );
  const { consumer } = (await import(pathToFileURL(path).href)) as { consumer?: ConsumerModule };
  if (!consumer?.definition || typeof consumer.create !== 'function') {
    throw new HandlerModuleError(
      `consumer group ${definition.group}: ${definition.entry} exports no \`consumer\` (export const consumer = defineConsumer(entry, create))`,
    );
  }
  if (consumer.definition !== definition) {
    throw new HandlerModuleError(
      `consumer group ${definition.group}: ${definition.entry} exports a consumer defined for ${consumer.definition.group === definition.group ? 'a copy of its catalogue entry' : `consumer group ${consumer.definition.group}`}; ` +
        'defineConsumer must be given the catalogue entry itself',
    );
  }
  const services: readonly string[] = definition.services ?? [];
  return {
    definition,
    create: (deps) =>
      consumer.create({
        ...deps,
        tables: declaredTables(definition, deps.tables),
        services: {
          'coupon-service': deps.couponServiceUrl,
          'notification-service': deps.notificationServiceUrl ?? '',
        },
      }),
    usesCouponService: services.includes('coupon-service'),
    usesNotificationService: services.includes('notification-service'),
    needsOrders: definition.tables.includes('orders'),
  };
}

/**
 * The tables of the run the entry declares, and no other: as deployed, where the function's
 * environment names those alone and IAM grants those alone, so a consumer that needs a table
 * its entry does not list fails here as it would in Lambda.
 */
export function declaredTables(
  definition: ConsumerGroupDefinition,
  tables: Readonly<Partial<Record<TableKey, string>>>,
): Record<TableKey, string> {
  return Object.fromEntries(
    definition.tables.flatMap((key) => (tables[key] === undefined ? [] : [[key, tables[key]]])),
  ) as Record<TableKey, string>;
}

/**
 * The registrations of the given catalogue entries, in their order; the first entry that cannot be driven refuses the
 * run.
 */
export function loadRegistrations(definitions: readonly ConsumerGroupDefinition[]): Promise<ConsumerRegistration[]> {
  return Promise.all(definitions.map(loadRegistration));
}
