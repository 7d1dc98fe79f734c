import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type StrategyName as CatalogueStrategyName,
  type ConsumerGroupDefinition,
  OUTBOX_ENV,
  OUTBOX_TABLE,
  outboxTtlOf,
  recordIdPrefix,
  TABLES,
  type TableKey,
} from '../../config/index.ts';
import { InvalidConsumerConfigError } from '../failures/errors.ts';
import { leaseStrategy } from '../idempotency/lease.ts';
import { withOutboxWrites } from '../idempotency/outbox-writes.ts';
import { packedTransactionalStrategy } from '../idempotency/packed-transactional.ts';
import { stateTransitionStrategy, type TransitionRequest } from '../idempotency/state-transition.ts';
import type { ConsumptionStrategy } from '../idempotency/strategy.ts';
import { type TransactionalResult, transactionalStrategy } from '../idempotency/transactional.ts';

/** What a strategy is built from: the group's entry and what its function was deployed with. */
export interface StrategyWiring {
  readonly definition: ConsumerGroupDefinition;
  readonly dynamoDb: DynamoDBDocumentClient;
  /** Physical table names of the entry's tables. */
  readonly tables: Readonly<Partial<Record<TableKey, string>>>;
  /** Physical name of the group's outbox table (a publishing entry: its `publishes`). */
  readonly outboxTable?: string;
  readonly ttlSeconds?: number;
  /** Batch packing (transactional groups): the catalogue's `tuning.packing`, or `CONSUMER_PACKING`. */
  readonly packing?: boolean;
  /** Lease mode: added to the invocation's deadline (default 5 s). */
  readonly leaseMarginMs?: number;
  readonly now: () => number;
}

/** The business result each strategy a catalogue entry may name commits. */
export interface StrategyResults extends Record<CatalogueStrategyName, unknown> {
  /** Writes declared for one `TransactWriteItems` with the dedup record (packed when the entry's tuning says so). */
  transactional: TransactionalResult;
  /** The result of an outside call, kept in the lease record and replayed to duplicates. */
  lease: unknown;
  /** A conditional update whose precondition is the idempotency check. */
  'state-transition': TransitionRequest;
}
export type StrategyName = CatalogueStrategyName;

/** A strategy the module builds itself from the wiring (a test's weakened one, say). */
export type StrategyFactory<R> = (wiring: StrategyWiring) => ConsumptionStrategy<R>;

/** What the business of an entry's strategy returns. */
export type ResultOf<D extends ConsumerGroupDefinition> = StrategyResults[D['strategy']];

/**
 * The entry's strategy as the entry configures it (its table, its record-id prefix, its TTL,
 * packing), or one the module builds itself (`factory`: a test's weakened one).
 */
export function wiredStrategy<R>(wiring: StrategyWiring, factory?: StrategyFactory<R>): ConsumptionStrategy<R> {
  if (factory) return factory(wiring);
  const name = wiring.definition.strategy;
  const strategy =
    name === 'state-transition' ? stateTransitionStrategy({ client: wiring.dynamoDb }) : recordKeeping(name, wiring);
  return strategy as ConsumptionStrategy<R>;
}

/** The strategies that keep a record per key in the idempotency table, under the group's prefix. */
function recordKeeping(name: 'transactional' | 'lease', wiring: StrategyWiring) {
  const { definition } = wiring;
  const tableName = wiring.tables.idempotency;
  if (!tableName) {
    throw new InvalidConsumerConfigError(
      `consumer group ${definition.group}: strategy '${name}' keeps its records in the idempotency table, but the entry's tables do not list 'idempotency'`,
    );
  }
  const options = {
    client: wiring.dynamoDb,
    tableName,
    group: definition.group,
    recordIdPrefix: recordIdPrefix(definition.group),
    ttlSeconds: wiring.ttlSeconds,
    now: wiring.now,
  };
  if (name === 'lease') return leaseStrategy({ ...options, marginMs: wiring.leaseMarginMs });
  const outboxTable = publishingTable(wiring);
  const strategy =
    (wiring.packing ?? definition.tuning?.packing)
      ? packedTransactionalStrategy({ ...options, keyAttributes: keyAttributesOf(wiring.tables, outboxTable) })
      : transactionalStrategy(options);
  return withOutboxWrites(strategy, {
    group: definition.group,
    publishes: definition.publishes,
    tableName: outboxTable,
    ttlSeconds: outboxTtlOf(definition),
    now: wiring.now,
  });
}

/** The outbox table a publishing entry writes its messages to; one that publishes without it is refused. */
function publishingTable({ definition, outboxTable }: StrategyWiring): string | undefined {
  if (!definition.publishes?.length) return undefined;
  if (!outboxTable) {
    throw new InvalidConsumerConfigError(
      `consumer group ${definition.group}: its entry publishes (${definition.publishes.map((p) => p.topic).join(', ')}), but no outbox table was given to write its messages to (${OUTBOX_ENV.table} when deployed)`,
    );
  }
  return outboxTable;
}

/** Physical table name → key attributes, from the catalogue and the outbox's (lets the packer see which puts hit one item). */
function keyAttributesOf(tables: StrategyWiring['tables'], outboxTable: string | undefined): Record<string, string[]> {
  return {
    ...Object.fromEntries(
      Object.entries(tables).map(([key, name]) => {
        const def: { partitionKey: string; sortKey?: string } = TABLES[key as TableKey];
        return [name, [def.partitionKey, ...(def.sortKey ? [def.sortKey] : [])]];
      }),
    ),
    ...(outboxTable ? { [outboxTable]: [OUTBOX_TABLE.partitionKey] } : {}),
  };
}
