import { describe, expect, it } from 'vitest';
import {
  affinityOrder,
  CONTENTION_CODES,
  contendedCode,
  emptyTransaction,
  estimatedBytes,
  halves,
  isValidation,
  itemIdentity,
  mergeIncrements,
  mergeKeyOf,
  type PackEntry,
  type PackLimits,
  pack,
  parseIncrement,
  planPlacement,
} from '../../../../src/consumer/idempotency/transaction-packing.ts';
import type { TransactItem } from '../../../../src/consumer/idempotency/transactional.ts';
import type { ConsumerMessage } from '../../../../src/consumer/settlement.ts';

const KEYS = { dedup: ['id'], ledger: ['userId', 'entryId'], accounts: ['userId'] } as const;
const identify = itemIdentity(KEYS);
const NOW = '2026-11-30T12:00:00.000Z';

/** The award of one order as the points business declares it: a ledger entry and a balance increment. */
const ledgerPut = (orderNo: string, userId: string, points: number): TransactItem => ({
  Put: {
    TableName: 'ledger',
    Item: { userId, entryId: orderNo, points },
    ConditionExpression: 'attribute_not_exists(entryId)',
  },
});
const balanceIncrement = (userId: string, points: number, now = NOW): TransactItem => ({
  Update: {
    TableName: 'accounts',
    Key: { userId },
    UpdateExpression: 'ADD balance :points SET updatedAt = :now',
    ExpressionAttributeValues: { ':points': points, ':now': now },
  },
});
const dedupPut = (msg: ConsumerMessage<unknown>): TransactItem => ({
  Put: {
    TableName: 'dedup',
    Item: { id: `points#${msg.key}`, fingerprint: msg.fingerprint },
    ConditionExpression: 'attribute_not_exists(id)',
  },
});

function message(key: string): ConsumerMessage<unknown> {
  return {
    record: { messageId: `m-${key}` } as ConsumerMessage<unknown>['record'],
    message: {
      msgId: `MSG-${key}`,
      topic: 'ORDER_TOPIC',
      tags: 'PAID',
      keys: [key],
      body: '{}',
      reconsumeTimes: 0,
      systemProperties: {},
      userProperties: {},
    },
    payload: {},
    key,
    fingerprint: `fp-${key}`,
    attempt: 1,
  };
}

let nextIndex = 0;
/** One record of a batch with the writes its business declared. */
function entry(key: string, ...items: TransactItem[]): PackEntry<unknown> {
  return { index: nextIndex++, msg: message(key), result: { writes: items.map((item) => ({ item })) } };
}
const award = (orderNo: string, userId: string, points: number) =>
  entry(orderNo, ledgerPut(orderNo, userId, points), balanceIncrement(userId, points));

const limits = (overrides: Partial<PackLimits<unknown>> = {}): PackLimits<unknown> => ({
  maxActions: 100,
  maxBytes: 3.5 * 1024 * 1024,
  identify,
  dedupPut,
  ...overrides,
});

describe('itemIdentity: what DynamoDB means by one item', () => {
  it('names a Put by its table and declared key attributes only', () => {
    const first = identify({ Put: { TableName: 'ledger', Item: { userId: 'u1', entryId: 'SO1', points: 10 } } });
    const again = identify({ Put: { TableName: 'ledger', Item: { entryId: 'SO1', points: 99, userId: 'u1' } } });
    expect(first).toBe('ledger|{"entryId":"SO1","userId":"u1"}');
    expect(again).toBe(first);
  });

  it('names a Put on a table without declared keys by its whole item', () => {
    expect(identify({ Put: { TableName: 'audit', Item: { b: 2, a: 1 } } })).toBe('audit|{"a":1,"b":2}');
  });

  it.each([
    ['Update', { Update: { TableName: 'accounts', Key: { userId: 'u1' }, UpdateExpression: 'SET x = :x' } }],
    ['Delete', { Delete: { TableName: 'accounts', Key: { userId: 'u1' } } }],
    [
      'ConditionCheck',
      {
        ConditionCheck: {
          TableName: 'accounts',
          Key: { userId: 'u1' },
          ConditionExpression: 'attribute_exists(userId)',
        },
      },
    ],
  ] as const)('names a %s by its table and key', (_op, item) => {
    expect(identify(item as TransactItem)).toBe('accounts|{"userId":"u1"}');
  });
});

describe('parseIncrement: updates that can be summed', () => {
  it.each([
    ['ADD balance :points', { add: [['balance', ':points']], set: [] }],
    [
      '  ADD balance :p, orders :one  ',
      {
        add: [
          ['balance', ':p'],
          ['orders', ':one'],
        ],
        set: [],
      },
    ],
    [
      'ADD balance :points SET updatedAt = :now, #last = :order',
      {
        add: [['balance', ':points']],
        set: [
          ['updatedAt', ':now'],
          ['#last', ':order'],
        ],
      },
    ],
  ])('reads %j', (expression, parsed) => {
    expect(parseIncrement(expression)).toEqual(parsed);
  });

  it.each([
    ['a SET only', 'SET balance = :points'],
    ['an ADD of a literal', 'ADD balance 5'],
    ['an ADD without a value', 'ADD balance'],
    ['a SET of a computed value', 'ADD balance :p SET total = total + :p'],
    ['a SET of a literal', 'ADD balance :p SET total = 5'],
    ['a REMOVE', 'ADD balance :p REMOVE flag'],
  ])('refuses %s', (_name, expression) => {
    expect(parseIncrement(expression)).toBeUndefined();
  });
});

describe('mergeKeyOf: which actions on one item merge', () => {
  it('gives two increments of one account with one expression the same key', () => {
    expect(mergeKeyOf(balanceIncrement('u1', 10))).toBe(
      mergeKeyOf(balanceIncrement('u1', 25, '2026-12-01T00:00:00.000Z')),
    );
    expect(mergeKeyOf(balanceIncrement('u1', 10))).toBe(
      'accounts|{"userId":"u1"}|ADD balance :points SET updatedAt = :now|{}',
    );
  });

  it('keeps increments of different accounts, or with different names, apart', () => {
    const named: TransactItem = {
      Update: { ...balanceIncrement('u1', 1).Update!, ExpressionAttributeNames: { '#b': 'balance' } },
    };
    expect(mergeKeyOf(balanceIncrement('u2', 10))).not.toBe(mergeKeyOf(balanceIncrement('u1', 10)));
    expect(mergeKeyOf(named)).not.toBe(mergeKeyOf(balanceIncrement('u1', 1)));
  });

  it.each([
    ['a Put', ledgerPut('SO1', 'u1', 10)],
    [
      'a conditional update',
      { Update: { ...balanceIncrement('u1', 1).Update!, ConditionExpression: 'balance >= :zero' } },
    ],
    ['an update without an expression', { Update: { TableName: 'accounts', Key: { userId: 'u1' } } }],
    [
      'a SET-only update',
      {
        Update: {
          TableName: 'accounts',
          Key: { userId: 'u1' },
          UpdateExpression: 'SET tier = :gold',
          ExpressionAttributeValues: { ':gold': 'GOLD' },
        },
      },
    ],
    [
      'an ADD of a string set',
      {
        Update: {
          TableName: 'accounts',
          Key: { userId: 'u1' },
          UpdateExpression: 'ADD tags :t',
          ExpressionAttributeValues: { ':t': new Set(['vip']) },
        },
      },
    ],
    [
      'an ADD whose value is missing',
      { Update: { TableName: 'accounts', Key: { userId: 'u1' }, UpdateExpression: 'ADD balance :p' } },
    ],
  ] as const)('never merges %s', (_name, item) => {
    expect(mergeKeyOf(item as TransactItem)).toBeUndefined();
  });
});

describe('mergeIncrements', () => {
  it('adds the ADD values and keeps the later SET values (what applying both in order leaves)', () => {
    // Act
    const merged = mergeIncrements(balanceIncrement('u1', 10, 'first'), balanceIncrement('u1', 32, 'second'));
    // Assess
    expect(merged).toEqual({
      Update: {
        TableName: 'accounts',
        Key: { userId: 'u1' },
        UpdateExpression: 'ADD balance :points SET updatedAt = :now',
        ExpressionAttributeValues: { ':points': 42, ':now': 'second' },
      },
    });
  });
});

describe('estimatedBytes', () => {
  it('counts the JSON of what the action writes or names, plus 100 bytes of overhead', () => {
    const put = ledgerPut('SO1', 'u1', 10);
    expect(estimatedBytes(put)).toBe(Buffer.byteLength(JSON.stringify(put.Put!.Item)) + 100);
    expect(estimatedBytes(balanceIncrement('u1', 10))).toBe(
      Buffer.byteLength(JSON.stringify({ ':points': 10, ':now': NOW })) + 100,
    );
    expect(estimatedBytes({ Delete: { TableName: 't', Key: { id: 'é' } } })).toBe(
      Buffer.byteLength('{"id":"é"}') + 100,
    );
    expect(
      estimatedBytes({
        ConditionCheck: { TableName: 't', Key: { id: 'x' }, ConditionExpression: 'attribute_exists(id)' },
      }),
    ).toBe(Buffer.byteLength('{"id":"x"}') + 100);
    expect(estimatedBytes({ Update: { TableName: 't', Key: { id: 'x' }, UpdateExpression: 'REMOVE flag' } })).toBe(102);
  });
});

describe('halves', () => {
  it.each([
    [
      [1, 2, 3, 4, 5],
      [
        [1, 2, 3],
        [4, 5],
      ],
    ],
    [
      [1, 2],
      [[1], [2]],
    ],
    [[1], [[1], []]],
  ])('splits %j into %j, the larger half first', (items, split) => {
    expect(halves(items)).toEqual(split);
  });
});

describe('contendedCode and the cancellation codes', () => {
  it.each([
    [['None', 'ThrottlingError', 'TransactionConflict'], 'TransactionConflict'],
    [['None', 'ProvisionedThroughputExceeded'], 'ProvisionedThroughputExceeded'],
    [[undefined, 'RequestLimitExceeded'], 'RequestLimitExceeded'],
    [['None', undefined], 'TransactionCanceled'],
    [['ConditionalCheckFailed'], 'TransactionCanceled'],
  ])('names %j as %s', (codes, code) => {
    expect(contendedCode(codes.map((Code) => (Code === undefined ? {} : { Code })))).toBe(code);
  });

  it('takes contention as "not now", never a condition failure or a validation error', () => {
    expect([...CONTENTION_CODES].sort()).toEqual([
      'ProvisionedThroughputExceeded',
      'RequestLimitExceeded',
      'ThrottlingError',
      'TransactionConflict',
    ]);
  });

  it('recognises the SDK’s ValidationException, and nothing else, as validation', () => {
    expect(isValidation(Object.assign(new Error('two actions on one item'), { name: 'ValidationException' }))).toBe(
      true,
    );
    expect(isValidation(new Error('ValidationException'))).toBe(false);
    expect(isValidation({ name: 'ValidationException' })).toBe(false);
  });
});

describe('affinityOrder', () => {
  it('puts records that increment the same item next to each other, keeping batch order otherwise', () => {
    // Prepare: u2, u1, u2, a record with no increment, u1
    const batch = [
      award('SO1', 'u2', 1),
      award('SO2', 'u1', 1),
      award('SO3', 'u2', 1),
      entry('SO4', ledgerPut('SO4', 'u9', 1)),
      award('SO5', 'u1', 1),
    ];
    // Act
    const ordered = affinityOrder(batch).map((e) => e.msg.key);
    // Assess: records without an increment first, then u1's, then u2's, each in batch order
    expect(ordered).toEqual(['SO4', 'SO2', 'SO5', 'SO1', 'SO3']);
  });
});

describe('planPlacement', () => {
  it('counts only the actions a record adds: its increment of an item already incremented merges', () => {
    // Prepare: a transaction holding SO1's award to u1
    const [tx] = pack([award('SO1', 'u1', 10)], limits());
    const identities = new Map(tx!.actions.map((a, i) => [identify(a.item), i]));
    // Act
    const plan = planPlacement(
      tx!,
      identities,
      [dedupPut(message('SO2')), ledgerPut('SO2', 'u1', 5), balanceIncrement('u1', 5)],
      identify,
    );
    // Assess
    expect(plan?.newActions).toBe(2);
    expect(plan?.bytes).toBeGreaterThan(300);
  });

  it('refuses a record with a second, non-mergeable action on an item already in the transaction', () => {
    const [tx] = pack([award('SO1', 'u1', 10)], limits());
    const identities = new Map(tx!.actions.map((a, i) => [identify(a.item), i]));
    expect(planPlacement(tx!, identities, [ledgerPut('SO1', 'u1', 10)], identify)).toBeUndefined();
    const conditional: TransactItem = {
      Update: { ...balanceIncrement('u1', 1).Update!, ConditionExpression: 'attribute_exists(userId)' },
    };
    expect(planPlacement(tx!, identities, [conditional], identify)).toBeUndefined();
  });

  it('places anything in an empty transaction', () => {
    expect(
      planPlacement(emptyTransaction(), new Map(), [ledgerPut('SO1', 'u1', 1), balanceIncrement('u1', 1)], identify),
    ).toMatchObject({ newActions: 2 });
  });
});

describe('pack: greedy first-fit in batch order', () => {
  it('puts a batch that fits in one transaction, each record’s dedup record first among its slots', () => {
    // Prepare
    const batch = [award('SO1', 'u1', 10), award('SO2', 'u2', 20)];
    // Act
    const transactions = pack(batch, limits());
    // Assess: 2 × (dedup, ledger, balance) = 6 actions
    expect(transactions).toHaveLength(1);
    const [tx] = transactions;
    expect(tx!.entries).toEqual(batch);
    expect(tx!.actions.map((a) => Object.keys(a.item)[0])).toEqual(['Put', 'Put', 'Update', 'Put', 'Put', 'Update']);
    expect(tx!.slots.get(batch[0]!.index)).toEqual([0, 1, 2]);
    expect(tx!.slots.get(batch[1]!.index)).toEqual([3, 4, 5]);
    expect(tx!.actions[0]!.item.Put?.Item).toMatchObject({ id: 'points#SO1' });
    expect(tx!.actions[2]!.mergeKey).toBe(mergeKeyOf(balanceIncrement('u1', 10)));
    expect(tx!.actions[1]!.mergeKey).toBeUndefined();
  });

  it('merges the increments of one account into one action whose value is their sum, both records pointing at it', () => {
    // Prepare
    const batch = [award('SO1', 'u1', 10), award('SO2', 'u1', 32)];
    // Act
    const [tx, ...rest] = pack(batch, limits());
    // Assess: 5 actions, not 6
    expect(rest).toEqual([]);
    expect(tx!.actions).toHaveLength(5);
    expect(tx!.slots.get(batch[1]!.index)).toEqual([3, 4, 2]);
    expect(tx!.actions[2]!.item.Update?.ExpressionAttributeValues).toEqual({ ':points': 42, ':now': NOW });
  });

  it('moves a record that would put a second action on an item to the next transaction', () => {
    // Prepare: both records write the same ledger entry (one item), which DynamoDB refuses in one transaction
    const batch = [
      entry('SO1', ledgerPut('SO-SHARED', 'u1', 1)),
      entry('SO2', ledgerPut('SO-SHARED', 'u1', 1)),
      entry('SO3', ledgerPut('SO3', 'u1', 1)),
    ];
    // Act
    const transactions = pack(batch, limits());
    // Assess: first-fit in order, no look-back: SO3 joins SO2's transaction
    expect(transactions.map((tx) => tx.entries.map((e) => e.msg.key))).toEqual([['SO1'], ['SO2', 'SO3']]);
  });

  it('keeps every transaction within the action limit, never splitting a record', () => {
    // Prepare: 10 awards to distinct users, 3 actions each, at most 7 actions per transaction
    const batch = Array.from({ length: 10 }, (_, i) => award(`SO${i}`, `u${i}`, 1));
    // Act
    const transactions = pack(batch, limits({ maxActions: 7 }));
    // Assess
    expect(transactions.map((tx) => tx.actions.length)).toEqual([6, 6, 6, 6, 6]);
    expect(transactions.flatMap((tx) => tx.entries)).toEqual(batch);
  });

  it('counts merged increments as no new action against the limit', () => {
    // Prepare: 3 awards to one user: 3 + 2 + 2 = 7 actions
    const batch = [award('SO1', 'u1', 1), award('SO2', 'u1', 1), award('SO3', 'u1', 1)];
    // Act / Assess
    expect(pack(batch, limits({ maxActions: 7 })).map((tx) => tx.actions.length)).toEqual([7]);
  });

  it('keeps every transaction within the byte budget', () => {
    // Prepare: each award is about 420 estimated bytes; the budget holds two
    const batch = Array.from({ length: 5 }, (_, i) => award(`SO${i}`, `u${i}`, 1));
    const one = [dedupPut(batch[0]!.msg), ...batch[0]!.result.writes.map((w) => w.item)].reduce(
      (sum, item) => sum + estimatedBytes(item),
      0,
    );
    // Act
    const transactions = pack(batch, limits({ maxBytes: one * 2 + 10 }));
    // Assess
    expect(transactions.map((tx) => tx.entries.length)).toEqual([2, 2, 1]);
  });

  it('still gives a record bigger than the byte budget a transaction of its own (DynamoDB judges it as it would per record)', () => {
    // Prepare: a 2 KB entry against a 1 KB budget, between two small ones
    const big = entry('SO-BIG', {
      Put: { TableName: 'ledger', Item: { userId: 'u1', entryId: 'SO-BIG', note: 'x'.repeat(2048) } },
    });
    const batch = [award('SO1', 'u1', 1), big, award('SO2', 'u2', 1)];
    // Act
    const transactions = pack(batch, limits({ maxBytes: 1024 }));
    // Assess
    expect(transactions.map((tx) => tx.entries.map((e) => e.msg.key))).toEqual([['SO1'], ['SO-BIG'], ['SO2']]);
  });

  it('forces a record with more actions than the limit into a transaction of its own', () => {
    // Prepare: one record declares 4 writes (5 actions) against a limit of 3
    const wide = entry('SO-WIDE', ...['a', 'b', 'c', 'd'].map((n) => ledgerPut(`SO-WIDE-${n}`, 'u1', 1)));
    const batch = [entry('SO1', ledgerPut('SO1', 'u1', 1)), wide, entry('SO2', ledgerPut('SO2', 'u1', 1))];
    // Act
    const transactions = pack(batch, limits({ maxActions: 3 }));
    // Assess
    expect(transactions.map((tx) => tx.entries.map((e) => e.msg.key))).toEqual([['SO1'], ['SO-WIDE'], ['SO2']]);
    expect(transactions[1]!.actions).toHaveLength(5);
    expect(transactions[1]!.slots.get(wide.index)).toEqual([0, 1, 2, 3, 4]);
  });

  it('forces a record that fits nowhere on its first try into the empty transaction it starts with', () => {
    const wide = entry('SO-WIDE', ...['a', 'b', 'c'].map((n) => ledgerPut(`SO-WIDE-${n}`, 'u1', 1)));
    expect(pack([wide], limits({ maxActions: 2 })).map((tx) => tx.actions.length)).toEqual([4]);
  });

  it('keeps a record’s own two actions on one item as two actions (DynamoDB refuses it exactly as per record)', () => {
    // Prepare: the business declared the same increment twice
    const twice = entry('SO1', balanceIncrement('u1', 1), balanceIncrement('u1', 2));
    // Act
    const [tx] = pack([twice, award('SO2', 'u1', 5)], limits());
    // Assess: dedup, inc, inc for SO1; SO2's increment merges into the last one it saw
    expect(tx!.slots.get(twice.index)).toEqual([0, 1, 2]);
    expect(tx!.actions.map((a) => a.item.Update?.ExpressionAttributeValues?.[':points'])).toEqual([
      undefined,
      1,
      7,
      undefined,
      undefined,
    ]);
  });

  it('packs nothing from an empty batch', () => {
    expect(pack([], limits())).toEqual([]);
  });
});
