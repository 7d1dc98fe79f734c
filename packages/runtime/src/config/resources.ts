/**
 * The one source of truth for resource definitions. The CDK app and the local
 * emulator both build tables and queues from these, so names, keys, the TTL attribute
 * and the redrive count can never drift apart.
 */
import { type MessageGroupSource, TagExpression } from '../rocketmq/index.ts';
import {
  DEAD_LETTER_RETENTION_SECONDS,
  FIFO_MAX_BATCH_SIZE,
  IncoherentLifetimesError,
  type LifetimeSettings,
  lifetimesOf,
  type Ordering,
  outboxItemTtlSeconds,
} from './delivery-lifetimes.ts';
import { assertPublishes, type PublishedTopic } from './outbox.ts';

export interface TableDefinition {
  /** Suffix of the physical name: `<prefix>-<suffix>`. */
  readonly suffix: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly ttlAttribute?: string;
}

export const TABLES = {
  /** Dedup / idempotency records, one per (consumer group, business key). */
  idempotency: { suffix: 'idempotency', partitionKey: 'id', ttlAttribute: 'expiresAt' },
  /** Point ledger: every award and reversal of one user under that user's partition. */
  ledger: { suffix: 'point-ledger', partitionKey: 'userId', sortKey: 'entryId' },
  /** Point balances, one item per user. */
  accounts: { suffix: 'point-accounts', partitionKey: 'userId' },
  /** Orders and their status, moved by the order-status consumer. */
  orders: { suffix: 'orders', partitionKey: 'orderNo' },
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

/** The id of a group's record for a business key (what the consumer runtime writes, given the prefix). */
export function recordId(group: string, key: string): string {
  return `${recordIdPrefix(group)}${key}`;
}

/**
 * Services outside the stack a group may call; the stage settings give each its URL and how calls
 * are authenticated (`services` in cdk.json), which the function reads from `env` and `authEnv`.
 * `call` is the one request the function makes under the URL: a SigV4 grant allows that alone.
 */
export const OUTSIDE_SERVICES = {
  'coupon-service': {
    env: 'COUPON_SERVICE_URL',
    authEnv: 'COUPON_SERVICE_AUTH',
    call: { method: 'POST', path: '/v1/coupon-grants' },
    description: 'grants one coupon per order (Idempotency-Key header)',
  },
  'notification-service': {
    env: 'NOTIFICATION_SERVICE_URL',
    authEnv: 'NOTIFICATION_SERVICE_AUTH',
    call: { method: 'POST', path: '/v1/notifications' },
    description: 'tells a user of one points award per outbox event (Idempotency-Key header: the event id)',
  },
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
  /** Filter on the RocketMQ tag in the event source (default true; see packages/infra/src/consumer-group.ts). */
  readonly filterAtEventSource?: boolean;
  /**
   * Transactional groups: commit a batch in as few transactions as DynamoDB allows (default false; refused on orderly
   * groups).
   */
  readonly packing?: boolean;
}

/**
 * One consumer group, declared once. The CDK app (queue, DLQ, function, filter, IAM, alarms,
 * dashboard), the function itself (group, tags, tables, services, settings), the local run and
 * the operations tools all read it. Its ordering, retry policy and record TTL (`LifetimeSettings`)
 * are stated here once; the queue type, the redrive count, the queues' retentions and the
 * cold-start checks derive from them (`lifetimesOf`, `assertOrderingFits`).
 */
export interface ConsumerGroupDefinition extends LifetimeSettings {
  readonly group: string;
  /**
   * How the group makes its effect exactly-once (docs/strategies.md): `'transactional'` for writes
   * to DynamoDB only, `'lease'` for a call outside DynamoDB, `'state-transition'` for a state that
   * only moves forward. The handler module's business returns what this strategy commits, and the
   * tables it keeps its evidence in must be among `tables` (`assertCatalogueEntry`).
   */
  readonly strategy: StrategyName;
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
  /**
   * Orderly groups: where the bridge takes each message's FIFO message group (default the RocketMQ
   * 5 message group). For a topic whose 4.x-style producers select the queue by a key instead:
   * `{ from: 'key' }`, `{ from: 'property', name }` or `{ from: 'queue' }` (packages/runtime/src/rocketmq/message-group.ts).
   */
  readonly messageGroupFrom?: MessageGroupSource;
  /**
   * The topics the group's business may publish to (docs/outbox.md): each outgoing message is written to the
   * group's outbox table in the transaction of its effect and relayed from there. A message to a topic or tag
   * not declared here is refused (the record fails, it is not sent).
   */
  readonly publishes?: readonly PublishedTopic[];
}

/** How a group's effect is made exactly-once; each names the tables it keeps its evidence in (`STRATEGY_TABLES`). */
export type StrategyName = 'transactional' | 'lease' | 'state-transition';

/**
 * The tables a strategy itself writes, whatever the business writes: the dedup record of a
 * transactional group and the lease of a lease group live in the idempotency table; a state
 * transition's evidence is the state itself, in the business's own table.
 */
export const STRATEGY_TABLES: Readonly<Record<StrategyName, readonly TableKey[]>> = {
  transactional: ['idempotency'],
  lease: ['idempotency'],
  'state-transition': [],
};

/** A catalogue entry its own function could not run: it names what is missing and why. */
export class InvalidCatalogueEntryError extends Error {
  override readonly name = 'InvalidCatalogueEntryError';
}

/**
 * The one check of a catalogue entry on its own, run where the entry is defined (`catalogue`,
 * so a bad `CONSUMER_GROUPS` entry fails every import: synth, cold start, local run, tests) and
 * again where an entry from elsewhere is used (the CDK group, `defineConsumer`, the local run's
 * registration): the tables its strategy and its ordering keep their records in are among its
 * `tables` (the function gets, and IAM grants, those alone), and its ordering fits its tuning.
 */
export function assertCatalogueEntry(def: ConsumerGroupDefinition): void {
  const tables: readonly TableKey[] = def.tables;
  const missing = STRATEGY_TABLES[def.strategy].filter((t) => !tables.includes(t));
  if (missing.length > 0) {
    throw new InvalidCatalogueEntryError(
      `consumer group ${def.group}: strategy '${def.strategy}' keeps its records in the ${missing.join(', ')} table, ` +
        `but tables [${tables.map((t) => `'${t}'`).join(', ')}] does not list ${missing.map((t) => `'${t}'`).join(', ')}: ` +
        'its function would get no such table name and IAM no grant on it, so it could not start (add it to tables)',
    );
  }
  assertOrderingFits(def.group, def.ordering, { ...def.tuning, tables, messageGroupFrom: def.messageGroupFrom });
  assertPublishes(def.group, def.strategy, def.publishes);
}

/** The catalogue, each entry checked as it is defined (`assertCatalogueEntry`), types kept to the letter. */
export function catalogue<const T extends readonly ConsumerGroupDefinition[]>(entries: T): T {
  for (const entry of entries) assertCatalogueEntry(entry);
  return entries;
}

export const CONSUMER_GROUPS = catalogue([
  {
    group: 'point-consumer-group',
    strategy: 'transactional',
    functionName: 'points-consumer',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID',
    entry: 'packages/consumers/functions/points-consumer/handler.ts',
    tables: ['idempotency', 'ledger', 'accounts'],
    // An award's writes are its own ledger entry and an unconditional balance ADD: safe to pack.
    tuning: { packing: true },
    // One POINTS_AWARDED per award, written in the award's transaction and relayed to its subscribers' queues.
    publishes: [{ topic: 'POINTS_TOPIC', tags: ['POINTS_AWARDED'], target: 'sqs' }],
  },
  {
    group: 'coupon-consumer-group',
    strategy: 'lease',
    functionName: 'coupon-consumer',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID',
    entry: 'packages/consumers/functions/coupon-consumer/handler.ts',
    tables: ['idempotency'],
    services: ['coupon-service'],
  },
  {
    group: 'order-status-consumer-group',
    strategy: 'state-transition',
    functionName: 'order-status-consumer',
    topic: 'ORDER_TOPIC',
    tagExpression: 'PAID || FINISHED',
    entry: 'packages/consumers/functions/order-status-consumer/handler.ts',
    // WAIT_PAY → PAID → FINISHED applied out of order corrupts the state: one order's events
    // are one FIFO message group. The idempotency table holds each message's failure count.
    ordering: 'orderly',
    // The order service keys every ORDER_TOPIC message by its order number and selects the queue
    // by it (4.x style, no RocketMQ 5 message group): one order, one message group.
    messageGroupFrom: { from: 'key' },
    tables: ['orders', 'idempotency'],
  },
  {
    group: 'notification-consumer-group',
    // The notification is a call outside DynamoDB, like the coupon grant: one lease per event.
    strategy: 'lease',
    functionName: 'notification-consumer',
    // The points group's POINTS_AWARDED, relayed from its outbox: keyed on the event id, never the msgId.
    topic: 'POINTS_TOPIC',
    tagExpression: 'POINTS_AWARDED',
    entry: 'packages/consumers/functions/notification-consumer/handler.ts',
    tables: ['idempotency'],
    services: ['notification-service'],
  },
] as const satisfies readonly ConsumerGroupDefinition[]);

export type ConsumerGroupName = (typeof CONSUMER_GROUPS)[number]['group'];
export type CatalogueEntry<G extends ConsumerGroupName> = Extract<(typeof CONSUMER_GROUPS)[number], { group: G }>;

/** A group's catalogue entry, typed to the letter (its tables, its services). */
export function consumerGroup<G extends ConsumerGroupName>(group: G): CatalogueEntry<G> {
  const entry = CONSUMER_GROUPS.find((g) => g.group === group);
  if (!entry) throw new Error(`consumer group ${group} is not in the catalogue`);
  return entry as CatalogueEntry<G>;
}

/** The catalogue groups a published topic and tag reaches (RocketMQ's clustering model: every subscribed group). */
export function subscribersOf(
  topic: string,
  tag: string,
  groups: readonly ConsumerGroupDefinition[] = CONSUMER_GROUPS,
): ConsumerGroupDefinition[] {
  return groups.filter((g) => g.topic === topic && TagExpression.parse(g.tagExpression).matches(tag));
}

/** A publishing group's outbox item TTL: it outlives the dedup records of every group its messages reach. */
export function outboxTtlOf(
  def: ConsumerGroupDefinition,
  groups: readonly ConsumerGroupDefinition[] = CONSUMER_GROUPS,
): number {
  const downstream = (def.publishes ?? []).flatMap((p) =>
    p.tags.flatMap((tag) => subscribersOf(p.topic, tag, groups).map((g) => lifetimesOf(g).recordTtlSeconds)),
  );
  return outboxItemTtlSeconds(downstream);
}

/**
 * How long after its commit a publishing group's FAILED outbox item may still be set back to PENDING
 * (`ops outbox redrive`): the relayed copy is born at the commit (`committedAt`), so a subscribing
 * group dead-letters it as PAST_REDRIVE_HORIZON once it is older than that group's redrive horizon,
 * and it is a new message of that group's source queue, which may keep it a source retention
 * longer: each subscriber's `letterRedriveHorizonSeconds`, as for one of its own letters; the
 * smallest of them. `undefined` when no catalogue group subscribes (a RocketMQ consumer elsewhere).
 */
export function outboxRedriveHorizonOf(
  def: ConsumerGroupDefinition,
  groups: readonly ConsumerGroupDefinition[] = CONSUMER_GROUPS,
): number | undefined {
  const horizons = (def.publishes ?? []).flatMap((p) =>
    p.tags.flatMap((tag) =>
      subscribersOf(p.topic, tag, groups).map((g) => {
        const { lifetimes, recordTtlSeconds } = lifetimesOf(g);
        return lifetimes.letterRedriveHorizonSeconds(recordTtlSeconds);
      }),
    ),
  );
  return horizons.length === 0 ? undefined : Math.min(...horizons);
}

/**
 * A version label that takes a signing key out of the ring at once: `revoked-<versionId>` (a label names
 * one version of a secret, so each revoked version gets its own). Set by `ops keys revoke`; the stage's
 * revoker role may set labels with this prefix and no other.
 */
export const REVOKED_STAGE_PREFIX = 'revoked-';

/** The Secrets Manager secret the bridge signs envelopes with and every consumer verifies them against. */
export function signingKeySecretName(prefix: string): string {
  return `${prefix}/envelope-signing-key`;
}

export function tableName(prefix: string, table: TableKey): string {
  return `${prefix}-${TABLES[table].suffix}`;
}

/** A catalogue group's ordering (`concurrent` for a group the catalogue does not hold). */
export function orderingOf(group: string): Ordering {
  return (
    (CONSUMER_GROUPS as readonly ConsumerGroupDefinition[]).find((g) => g.group === group)?.ordering ?? 'concurrent'
  );
}

/** SQS requires the `.fifo` suffix on a FIFO queue's name, and an orderly group's queues are FIFO. */
const queueSuffix = (ordering: Ordering) => (ordering === 'orderly' ? '.fifo' : '');

export function queueName(prefix: string, group: string, ordering = orderingOf(group)): string {
  return `${prefix}-${group}${queueSuffix(ordering)}`;
}

export function deadLetterQueueName(prefix: string, group: string, ordering = orderingOf(group)): string {
  return `${prefix}-${group}-dlq${queueSuffix(ordering)}`;
}

/**
 * A group function's log group, as Lambda names it for the function `<prefix>-<functionName>` and
 * as the stack names it (packages/infra/src/project-function.ts). The local run ships its consumers' log lines
 * there, and `ops trace` reads them from there unless told another log group (`--log-group`).
 */
export function functionLogGroupName(prefix: string, functionName: string): string {
  return lambdaLogGroupName(`${prefix}-${functionName}`);
}

/** The log group Lambda itself would create for a function of this full name. */
export function lambdaLogGroupName(deployedFunctionName: string): string {
  return `/aws/lambda/${deployedFunctionName}`;
}

/**
 * SQS attributes of an orderly group's source queue and DLQ (the CDK app sets the same
 * through its props; packages/infra/test compares them). No content-based deduplication: the sender
 * sets `MessageDeduplicationId` to the RocketMQ msgId, so a re-forward of one message within
 * five minutes is absorbed by SQS while two messages with equal bodies are not. High
 * throughput: deduplication and the throughput quota are per message group.
 */
export const FIFO_QUEUE_ATTRIBUTES = {
  FifoQueue: 'true',
  ContentBasedDeduplication: 'false',
  DeduplicationScope: 'messageGroup',
  FifoThroughputLimit: 'perMessageGroupId',
} as const;

/** What the event source and the function are configured with, as far as ordering constrains it. */
export interface OrderingSensitiveSettings {
  readonly packing?: boolean;
  readonly batchSize?: number;
  readonly maxBatchingWindowSeconds?: number;
  readonly tables?: readonly TableKey[];
  readonly messageGroupFrom?: MessageGroupSource;
}

/**
 * Refuses settings an orderly group cannot honour, naming both: at synth with the merged
 * tuning, at cold start with the environment (packing), and for every catalogue entry in a test.
 */
export function assertOrderingFits(
  group: string,
  ordering: Ordering | undefined,
  settings: OrderingSensitiveSettings,
): void {
  if (ordering !== 'orderly') {
    if (settings.messageGroupFrom) {
      throw new IncoherentLifetimesError(
        `consumer group ${group}: messageGroupFrom is set but ordering is not 'orderly': only an orderly group's messages travel in message groups`,
      );
    }
    return;
  }
  const refuse = (setting: string, why: string) => {
    throw new IncoherentLifetimesError(`consumer group ${group}: ${setting} but ordering is 'orderly': ${why}`);
  };
  if (settings.packing)
    refuse(
      'packing is on (tuning.packing / CONSUMER_PACKING)',
      "a packed commit writes a batch's records together, so it cannot stop at a message group's first failure",
    );
  if (settings.batchSize !== undefined && settings.batchSize > FIFO_MAX_BATCH_SIZE) {
    refuse(
      `batchSize is ${settings.batchSize}`,
      `Lambda reads at most ${FIFO_MAX_BATCH_SIZE} records a batch from a FIFO queue`,
    );
  }
  if (settings.maxBatchingWindowSeconds)
    refuse(
      `maxBatchingWindowSeconds is ${settings.maxBatchingWindowSeconds}`,
      'Lambda allows no batching window on a FIFO queue',
    );
  if (settings.tables && !settings.tables.includes('idempotency'))
    refuse(
      "tables does not list 'idempotency'",
      "an orderly group counts each message's failures in the idempotency table",
    );
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
