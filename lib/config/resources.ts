/**
 * The one source of truth for resource definitions. The CDK app and the local
 * emulator both build tables and queues from these, so names, keys, the TTL attribute
 * and the redrive count can never drift apart.
 */
import { DEAD_LETTER_RETENTION_SECONDS, type LifetimeSettings } from './delivery-lifetimes.ts';

export interface TableDefinition {
  /** Suffix of the physical name: `<prefix>-<suffix>`. */
  readonly suffix: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly ttlAttribute?: string;
  /** Data tables are retained and deletion-protected; caches and records are not. */
  readonly holdsBusinessData: boolean;
}

export const TABLES = {
  /** Dedup / idempotency records, one per (consumer group, business key). */
  idempotency: { suffix: 'idempotency', partitionKey: 'id', ttlAttribute: 'expiresAt', holdsBusinessData: false },
  /** Point ledger: every award and reversal of one user under that user's partition. */
  ledger: { suffix: 'point-ledger', partitionKey: 'userId', sortKey: 'entryId', holdsBusinessData: true },
  /** Point balances, one item per user. */
  accounts: { suffix: 'point-accounts', partitionKey: 'userId', holdsBusinessData: true },
  /** Orders and their status, moved by the order-status consumer. */
  orders: { suffix: 'orders', partitionKey: 'orderNo', holdsBusinessData: true },
} as const satisfies Record<string, TableDefinition>;

export type TableKey = keyof typeof TABLES;

/**
 * Where a group's idempotency records start: every record id is `<group>#<key>`. The groups
 * share the table, and each function's role may touch only the ids under its own prefix
 * (`dynamodb:LeadingKeys`), so one group can never overwrite another's records.
 */
export function recordIdPrefix(group: string): string {
  return `${group}#`;
}

/** Services outside AWS a group may call; the stage settings give each its URL (`services` in cdk.json). */
export const OUTSIDE_SERVICES = {
  'coupon-service': { env: 'COUPON_SERVICE_URL', description: 'grants one coupon per order (Idempotency-Key header)' },
} as const;
export type OutsideServiceName = keyof typeof OUTSIDE_SERVICES;

/**
 * How one group's function and event source are sized. Plain numbers (no CDK types): the
 * catalogue is read by the functions and the local run too. A stage may override any of them.
 */
export interface GroupTuning {
  /** Records per invocation (default 10). */
  readonly batchSize?: number;
  /** Seconds Lambda gathers records before invoking (default 1; required for batches over 10). */
  readonly maxBatchingWindowSeconds?: number;
  /** Concurrent invocations the event source may start, 2–1000 (default 10). */
  readonly maxConcurrency?: number;
  /** Function timeout in seconds (default 30); the queue's visibility timeout derives from it. */
  readonly timeoutSeconds?: number;
  readonly memorySize?: number;
  /** Filter on the RocketMQ tag in the event source (default true; see infra/consumer-group.ts). */
  readonly filterAtEventSource?: boolean;
  /** Transactional groups: commit a batch in as few transactions as DynamoDB allows (default false). */
  readonly packing?: boolean;
}

/**
 * One consumer group, declared once. The CDK app (queue, DLQ, function, filter, IAM, alarms,
 * dashboard), the function itself (group, tags, tables, services, settings), the local run and
 * the operations tools all read it. Its retry schedule and record TTL (`LifetimeSettings`) are
 * stated here once; the redrive count, the queues' retentions and the cold-start checks derive
 * from them (`lifetimesOf`).
 */
export interface ConsumerGroupDefinition extends LifetimeSettings {
  readonly group: string;
  /** The function's short name: used by the local run and its reports (deployed functions keep CDK-generated names). */
  readonly functionName: string;
  readonly topic: string;
  /** RocketMQ tag expression, e.g. `PAID || FINISHED`. */
  readonly tagExpression: string;
  /** Path of the handler module from the repository root; it exports `consumer` (`defineConsumer`). */
  readonly entry: string;
  /** Tables the group's function may touch (least privilege derives from this). */
  readonly tables: readonly TableKey[];
  /** Outside services the function calls. */
  readonly services?: readonly OutsideServiceName[];
  readonly tuning?: GroupTuning;
}

export const CONSUMER_GROUPS = [
  {
    group: 'point-consumer-group',
    functionName: 'points-consumer',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID',
    entry: 'functions/points-consumer/handler.ts',
    tables: ['idempotency', 'ledger', 'accounts'],
    // An award's writes are its own ledger entry and an unconditional balance ADD: safe to pack.
    tuning: { packing: true },
  },
  {
    group: 'coupon-consumer-group',
    functionName: 'coupon-consumer',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID',
    entry: 'functions/coupon-consumer/handler.ts',
    tables: ['idempotency'],
    services: ['coupon-service'],
  },
  {
    group: 'order-status-consumer-group',
    functionName: 'order-status-consumer',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID || FINISHED',
    entry: 'functions/order-status-consumer/handler.ts',
    tables: ['orders'],
  },
] as const satisfies readonly ConsumerGroupDefinition[];

export type ConsumerGroupName = (typeof CONSUMER_GROUPS)[number]['group'];
export type CatalogueEntry<G extends ConsumerGroupName> = Extract<(typeof CONSUMER_GROUPS)[number], { group: G }>;

/** A group's catalogue entry, typed to the letter (its tables, its services). */
export function consumerGroup<G extends ConsumerGroupName>(group: G): CatalogueEntry<G> {
  const entry = CONSUMER_GROUPS.find((g) => g.group === group);
  if (!entry) throw new Error(`consumer group ${group} is not in the catalogue`);
  return entry as CatalogueEntry<G>;
}

export function tableName(prefix: string, table: TableKey): string {
  return `${prefix}-${TABLES[table].suffix}`;
}

export function queueName(prefix: string, group: string): string {
  return `${prefix}-${group}`;
}

export function deadLetterQueueName(prefix: string, group: string): string {
  return `${prefix}-${group}-dlq`;
}

/** Environment variable through which a function learns a table's physical name. */
export const TABLE_ENV: Record<TableKey, string> = {
  idempotency: 'IDEMPOTENCY_TABLE',
  ledger: 'LEDGER_TABLE',
  accounts: 'ACCOUNTS_TABLE',
  orders: 'ORDERS_TABLE',
};

/** DLQ retention: the SQS maximum, so a long weekend never loses a dead letter. */
export const DLQ_RETENTION_DAYS = DEAD_LETTER_RETENTION_SECONDS / 86_400;
