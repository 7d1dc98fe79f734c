/**
 * Deliberately weakened consumers, for tests only: each removes exactly one protection of
 * the real consumers, so a fault test can show that it fails without that protection.
 * Never used outside `packages/tools/test/chaos/`. Each is defined like a handler module (`defineConsumer`),
 * so it is wired exactly as the real group is, apart from what it removes.
 */
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { consumer as couponGroupConsumer } from '@rocketmq-lambda/consumers/functions/coupon-consumer/handler.ts';
import { consumer as orderStatusConsumer } from '@rocketmq-lambda/consumers/functions/order-status-consumer/handler.ts';
import { parseOrderEvent, transitionRequest } from '@rocketmq-lambda/consumers/orders/index.ts';
import {
  awardWrites,
  type OrderPaid,
  orderPaidFingerprintFields,
  type PointTables,
  parseOrderPaid,
} from '@rocketmq-lambda/consumers/points/index.ts';
import { consumerGroup, recordId, recordIdPrefix } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  type ConsumerMessage,
  defineConsumer,
  IllegalTransitionError,
  NotYetApplicableError,
  type TransactionalResult,
  type TransitionRequest,
} from '@rocketmq-lambda/runtime/consumer/index.ts';
import {
  type ConsumptionStrategy,
  dedupRecordPut,
  fingerprintOf,
  transactionalStrategy,
} from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { RetrySchedule } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { MiddlewareStack } from '@smithy/types';
import type { ConsumerFactory } from '../../src/chaos/fault-plan.ts';
import { interceptCommands } from '../../src/instrumentation/command-interceptor.ts';

const POINTS = 'point-consumer-group';
const STATUS = 'order-status-consumer-group';
type Deps = Parameters<ConsumerFactory>[0];
type Strategy = ConsumptionStrategy<TransactionalResult>;

/** Retries come back at once: a weakened consumer that can never succeed exhausts them in moments. */
const IMMEDIATE = new RetrySchedule(Array.from({ length: 16 }, () => 0));

export type PointsWeakness =
  /** None: the real points consumer (the control). */
  | 'none'
  /** The dedup record and the ledger entry are written without their conditions. */
  | 'unconditional-writes'
  /** Keyed by msgId (dedup record and ledger entry) instead of the order number. */
  | 'keyed-by-msg-id'
  /** Reads the record, then writes effect and record unconditionally (check-then-act). */
  | 'check-then-act'
  /** Writes the dedup record when the record starts, the effect at commit (two calls). */
  | 'record-first'
  /** Any SDK failure of the commit is taken as "already done" and acknowledged. */
  | 'ack-on-error'
  /** Any cancelled transaction is taken as "already done", whatever its reasons. */
  | 'cancel-means-done'
  /** The payload fingerprint covers the order number only, so a conflict looks like a duplicate. */
  | 'order-only-fingerprint';

/**
 * Holds every `TransactWriteItems` of a client until `parties` of them are waiting (or a
 * timeout): two concurrent deliveries of one order have then both done whatever they do
 * before committing (a check, for check-then-act) when their commits race. The
 * interleaving that breaks check-then-act, forced instead of hoped for.
 */
export function commitRendezvous<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  parties: number,
  timeoutMs = 3000,
): void {
  let arrived = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  interceptCommands(
    client,
    'commitRendezvous',
    async ({ name }, send) => {
      if (name === 'TransactWriteItemsCommand') {
        if (++arrived >= parties) open();
        await Promise.race([gate, new Promise((r) => setTimeout(r, timeoutMs))]);
      }
      return send();
    },
    { per: 'command' },
  );
}

export function weakPointsConsumer(weakness: Exclude<PointsWeakness, 'none'>): ConsumerFactory {
  const byMsgId = weakness === 'keyed-by-msg-id';
  const weak = defineConsumer(consumerGroup(POINTS), {
    strategy: (wiring): Strategy => {
      const base = transactionalStrategy({
        client: wiring.dynamoDb,
        tableName: wiring.tables.idempotency!,
        group: POINTS,
        recordIdPrefix: recordIdPrefix(POINTS),
        ttlSeconds: wiring.ttlSeconds,
      });
      return weakened(weakness, base, wiring.dynamoDb, wiring.tables.idempotency!);
    },
    parsePayload: (body, message) => ({ ...parseOrderPaid(body), msgId: message.msgId }),
    keyOf: (order) => (byMsgId ? order.msgId : order.orderNo),
    fingerprintFields: (order) =>
      weakness === 'order-only-fingerprint'
        ? { orderNo: order.orderNo }
        : { orderNo: order.orderNo, userId: order.userId, points: order.points },
    business:
      ({ tables }) =>
      (msg) => ({ writes: award(msg.payload, msg.message.msgId, tables, weakness, byMsgId) }),
  });
  // Always one transaction per record: the weaknesses are of the per-record commit.
  return (deps: Deps) => weak.create({ ...deps, packing: false });
}

function award(order: OrderPaid, msgId: string, tables: PointTables, weakness: PointsWeakness, byMsgId: boolean) {
  const writes = awardWrites(
    order,
    { msgId, fingerprint: fingerprintOf(orderPaidFingerprintFields(order)) },
    tables,
    new Date(),
  );
  const ledger = writes[0]!.item.Put!;
  if (byMsgId) (ledger.Item as Record<string, unknown>).entryId = `AWARD#${msgId}`;
  if (weakness === 'unconditional-writes' || weakness === 'check-then-act') delete ledger.ConditionExpression;
  return writes;
}

function weakened(
  weakness: Exclude<PointsWeakness, 'none'>,
  base: Strategy,
  client: Deps['dynamoDb'],
  tableName: string,
): Strategy {
  const unconditionalCommit = async <P>(msg: ConsumerMessage<P>, result: TransactionalResult) => {
    const record = dedupRecordPut(
      msg,
      { tableName, group: POINTS, recordIdPrefix: recordIdPrefix(POINTS) },
      base.recordTtlSeconds,
      Date.now(),
    );
    delete record.Put!.ConditionExpression;
    delete record.Put!.ExpressionAttributeValues;
    await client.send(new TransactWriteCommand({ TransactItems: [record, ...result.writes.map((w) => w.item)] }));
    return { outcome: 'processed' as const };
  };
  switch (weakness) {
    case 'keyed-by-msg-id':
    case 'order-only-fingerprint':
      return base;
    case 'unconditional-writes':
      return { ...base, commit: unconditionalCommit };
    case 'check-then-act':
      return {
        ...base,
        async begin(msg) {
          const { Item } = await client.send(
            new GetCommand({ TableName: tableName, Key: { id: recordId(POINTS, msg.key) }, ConsistentRead: true }),
          );
          if (Item) return { proceed: false, settlement: { outcome: 'duplicate', reason: 'dedup-record-exists' } };
          return { proceed: true };
        },
        commit: unconditionalCommit,
      };
    case 'record-first':
      return {
        ...base,
        async begin(msg) {
          try {
            await client.send(
              new PutCommand({
                ...dedupRecordPut(
                  msg,
                  { tableName, group: POINTS, recordIdPrefix: recordIdPrefix(POINTS) },
                  base.recordTtlSeconds,
                  Date.now(),
                ).Put!,
              } as never),
            );
          } catch (error) {
            if ((error as Error).name === 'ConditionalCheckFailedException')
              return { proceed: false, settlement: { outcome: 'duplicate', reason: 'dedup-record-exists' } };
            throw error;
          }
          return { proceed: true };
        },
        async commit(_msg, result) {
          await client.send(new TransactWriteCommand({ TransactItems: result.writes.map((w) => w.item) }));
          return { outcome: 'processed' };
        },
      };
    case 'ack-on-error':
      return {
        ...base,
        async commit(msg, result) {
          const settlement = await base.commit(msg, result).catch(() => undefined);
          if (settlement && settlement.outcome !== 'failed') return settlement;
          return { outcome: 'duplicate', reason: 'effect-already-present' };
        },
      };
    case 'cancel-means-done':
      return {
        ...base,
        async commit(msg, result) {
          const settlement = await base.commit(msg, result);
          if (settlement.outcome === 'failed' && settlement.error.code === 'TransactionConflict')
            return { outcome: 'duplicate', reason: 'dedup-record-exists' };
          return settlement;
        },
      };
  }
}

/**
 * The coupon consumer in lease mode, with the lease's expiry pushed out by an hour (a
 * "processing" flag that never times out) when `neverExpires`; retries come back at once so
 * a message stuck behind the flag exhausts them quickly.
 */
export function couponConsumer(options: { neverExpires: boolean }): ConsumerFactory {
  return (deps: Deps) =>
    couponGroupConsumer.create({
      ...deps,
      leaseMarginMs: options.neverExpires ? 3_600_000 : 500,
      schedule: IMMEDIATE,
    });
}

export type StatusWeakness =
  /** The update's precondition is only that the order exists: any event sets its state. */
  | 'unconditional-transition'
  /** An event ahead of the order's state (FINISHED before its PAID) is dead-lettered at once as illegal. */
  | 'not-yet-is-illegal'
  /** An event ahead of the order's state is acknowledged as if the order had moved on already. */
  | 'not-yet-is-done';

/** The order-status consumer (as `orderStatusConsumer.create` wires it) with one protection removed. */
export function weakStatusConsumer(weakness: StatusWeakness): ConsumerFactory {
  const weak = defineConsumer(consumerGroup(STATUS), {
    parsePayload: (body, message) => parseOrderEvent(body, message.tags),
    keyOf: (event) => `${event.orderNo}#${event.kind}`,
    fingerprintFields: (event) => ({ orderNo: event.orderNo, kind: event.kind }),
    business:
      ({ tables }) =>
      (msg) =>
        weakenedTransition(
          weakness,
          transitionRequest(msg.payload, { tableName: tables.orders, msgId: msg.message.msgId, now: new Date() }),
        ),
  });
  return (deps: Deps) => weak.create(deps);
}

function weakenedTransition(weakness: StatusWeakness, request: TransitionRequest): TransitionRequest {
  if (weakness === 'unconditional-transition') {
    const { ':from': _from, ...values } = request.update.ExpressionAttributeValues!;
    return {
      ...request,
      update: {
        ...request.update,
        ConditionExpression: 'attribute_exists(orderNo)',
        ExpressionAttributeValues: values,
      },
    };
  }
  return {
    ...request,
    explainRejection: (current) => {
      try {
        return request.explainRejection(current);
      } catch (error) {
        if (!(error instanceof NotYetApplicableError)) throw error;
        if (weakness === 'not-yet-is-illegal') throw new IllegalTransitionError(error.message);
        return { outcome: 'duplicate', reason: 'state-already-advanced' };
      }
    },
  };
}

/**
 * The real order-status consumer (or `factory`'s), handed each FIFO record as a message group
 * of its own: a failure no longer holds back the rest of its group (the middleware's
 * `skipGroupOnError` removed; records without a group at all it refuses on an orderly group).
 */
export function statusWithoutHoldBack(
  factory: ConsumerFactory = (deps) => orderStatusConsumer.create(deps),
): ConsumerFactory {
  return (deps) => {
    const handler = factory(deps);
    return (event, context) =>
      handler(
        { Records: event.Records.map((r) => ({ ...r, attributes: { ...r.attributes, MessageGroupId: r.messageId } })) },
        context,
      );
  };
}
