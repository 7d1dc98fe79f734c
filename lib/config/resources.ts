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
 * One consumer group. Its retry schedule and record TTL (`LifetimeSettings`) are stated here
 * once; the redrive count, the queues' retentions and the cold-start checks derive from them
 * (`lifetimesOf`).
 */
export interface ConsumerGroupDefinition extends LifetimeSettings {
  readonly group: string;
  readonly topic: string;
  /** RocketMQ tag expression, e.g. `PAID || FINISHED`. */
  readonly tagExpression: string;
  /** Path of the handler module from the repository root. */
  readonly entry: string;
  /** Tables the group's function may touch (least privilege derives from this). */
  readonly tables: readonly TableKey[];
}

export const CONSUMER_GROUPS = [
  {
    group: 'point-consumer-group',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID',
    entry: 'functions/points-consumer/handler.ts',
    tables: ['idempotency', 'ledger', 'accounts'],
  },
  {
    group: 'coupon-consumer-group',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID',
    entry: 'functions/coupon-consumer/handler.ts',
    tables: ['idempotency'],
  },
  {
    group: 'order-status-consumer-group',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID || FINISHED',
    entry: 'functions/order-status-consumer/handler.ts',
    tables: ['orders'],
  },
] as const satisfies readonly ConsumerGroupDefinition[];

export type ConsumerGroupName = (typeof CONSUMER_GROUPS)[number]['group'];

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
