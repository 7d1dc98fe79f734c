import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  ContentionError,
  PayloadConflictError,
  TransientFailureError,
  WriteRejectedError,
} from '../../../../src/consumer/failures/errors.ts';
import {
  type DeclaredWrite,
  dedupRecordPut,
  explainCancellation,
  type TransactionalResult,
} from '../../../../src/consumer/idempotency/transactional.ts';
import type { ConsumerMessage, Settlement } from '../../../../src/consumer/settlement.ts';

const msg: ConsumerMessage<unknown> = {
  record: { messageId: 'm-1' } as ConsumerMessage<unknown>['record'],
  message: {
    msgId: 'MSG-NEW',
    topic: 'ORDER_TOPIC',
    tags: 'PAID',
    keys: ['SO1'],
    body: '{}',
    reconsumeTimes: 0,
    systemProperties: {},
    userProperties: {},
  },
  payload: {},
  key: 'SO1',
  fingerprint: 'fp-new',
  attempt: 1,
};

const ledgerEntry: DeclaredWrite = {
  item: {
    Put: {
      TableName: 'ledger',
      Item: { userId: 'u1', entryId: 'SO1' },
      ConditionExpression: 'attribute_not_exists(entryId)',
    },
  },
  conditionFailureMeansDone: true,
  fingerprintAttribute: 'fingerprint',
};
const balance: DeclaredWrite = {
  item: {
    Update: {
      TableName: 'accounts',
      Key: { userId: 'u1' },
      UpdateExpression: 'ADD balance :p',
      ConditionExpression: 'attribute_exists(userId)',
    },
  },
};
const award: TransactionalResult = { writes: [ledgerEntry, balance] };

/** The error of the failed settlement a cancellation is explained as. */
const failureOf = (settlement: Settlement) => (settlement.outcome === 'failed' ? settlement.error : undefined);

const none = { Code: 'None' };
const conditionFailed = (item?: Record<string, unknown>) => ({
  Code: 'ConditionalCheckFailed',
  ...(item ? { Item: marshall(item) } : {}),
});

describe('explainCancellation: the dedup record’s condition failed', () => {
  it('is a duplicate when the record holds the same fingerprint, naming the first msgId', () => {
    const reasons = [conditionFailed({ id: 'g#SO1', fingerprint: 'fp-new', firstMsgId: 'MSG-FIRST' }), none, none];
    expect(explainCancellation(msg, award, reasons)).toEqual({
      outcome: 'duplicate',
      reason: 'dedup-record-exists',
      winnerMsgId: 'MSG-FIRST',
    });
  });

  it('is a conflict when the record holds another fingerprint', () => {
    const reasons = [conditionFailed({ id: 'g#SO1', fingerprint: 'fp-old', firstMsgId: 'MSG-FIRST' }), none, none];
    expect(failureOf(explainCancellation(msg, award, reasons))).toBeInstanceOf(PayloadConflictError);
    expect(failureOf(explainCancellation(msg, award, reasons))).toMatchObject({
      existingFingerprint: 'fp-old',
      fingerprint: 'fp-new',
      existingMsgId: 'MSG-FIRST',
    });
  });

  it('is a duplicate when the answer carries no record, or a record without a fingerprint', () => {
    expect(explainCancellation(msg, award, [conditionFailed(), none, none])).toEqual({
      outcome: 'duplicate',
      reason: 'dedup-record-exists',
      winnerMsgId: undefined,
    });
    expect(explainCancellation(msg, award, [conditionFailed({ id: 'g#SO1', firstMsgId: 'MSG-FIRST' })])).toMatchObject({
      outcome: 'duplicate',
      winnerMsgId: 'MSG-FIRST',
    });
  });
});

describe('explainCancellation: the record was imported from the legacy store', () => {
  const legacy = (fields: Record<string, unknown>) =>
    conditionFailed({ id: 'g#SO1', origin: 'legacy-import', firstMsgId: 'legacy:t_point_record#7', ...fields });

  it('is a duplicate of a legacy award when the imported record holds the same fingerprint', () => {
    expect(explainCancellation(msg, award, [legacy({ fingerprint: 'fp-new' }), none, none])).toEqual({
      outcome: 'duplicate',
      reason: 'legacy-record-exists',
      winnerMsgId: 'legacy:t_point_record#7',
    });
  });

  it('is a conflict, as for native records, when the imported record holds another fingerprint', () => {
    expect(
      failureOf(explainCancellation(msg, award, [legacy({ fingerprint: 'fp-legacy' }), none, none])),
    ).toMatchObject({
      code: 'PAYLOAD_CONFLICT',
      existingMsgId: 'legacy:t_point_record#7',
    });
  });

  it('is an unverified duplicate when the imported record holds no content (a Redis key): no conflict check ran', () => {
    expect(explainCancellation(msg, award, [legacy({}), none, none])).toEqual({
      outcome: 'duplicate',
      reason: 'legacy-record-unverified',
      winnerMsgId: 'legacy:t_point_record#7',
    });
  });
});

describe('explainCancellation: a declared write’s condition failed', () => {
  it('is a duplicate when the write says its failure means done and the item holds the same fingerprint', () => {
    const reasons = [
      none,
      conditionFailed({ userId: 'u1', entryId: 'SO1', fingerprint: 'fp-new', msgId: 'MSG-FIRST' }),
      none,
    ];
    expect(explainCancellation(msg, award, reasons)).toEqual({
      outcome: 'duplicate',
      reason: 'effect-already-present',
    });
  });

  it('is a conflict when that item holds another fingerprint, naming its msgId when it has one', () => {
    const withMsgId = [
      none,
      conditionFailed({ userId: 'u1', entryId: 'SO1', fingerprint: 'fp-old', msgId: 'MSG-FIRST' }),
      none,
    ];
    const withoutMsgId = [
      none,
      conditionFailed({ userId: 'u1', entryId: 'SO1', fingerprint: 'fp-old', msgId: 7 }),
      none,
    ];
    expect(failureOf(explainCancellation(msg, award, withMsgId))).toMatchObject({
      code: 'PAYLOAD_CONFLICT',
      existingFingerprint: 'fp-old',
      existingMsgId: 'MSG-FIRST',
    });
    expect(failureOf(explainCancellation(msg, award, withoutMsgId))).toMatchObject({
      code: 'PAYLOAD_CONFLICT',
      existingMsgId: undefined,
    });
  });

  it('is a duplicate when the item carries no fingerprint (written before fingerprints were stored) or the answer no item', () => {
    expect(explainCancellation(msg, award, [none, conditionFailed({ userId: 'u1', entryId: 'SO1' }), none])).toEqual({
      outcome: 'duplicate',
      reason: 'effect-already-present',
    });
    expect(explainCancellation(msg, award, [none, conditionFailed(), none])).toEqual({
      outcome: 'duplicate',
      reason: 'effect-already-present',
    });
  });

  it('is a duplicate, unchecked, when the write names no fingerprint attribute', () => {
    const plain: TransactionalResult = { writes: [{ item: ledgerEntry.item, conditionFailureMeansDone: true }] };
    expect(explainCancellation(msg, plain, [none, conditionFailed({ fingerprint: 'fp-old' })])).toEqual({
      outcome: 'duplicate',
      reason: 'effect-already-present',
    });
  });

  it('is a rejected write (permanent) when the write does not say its failure means done', () => {
    expect(failureOf(explainCancellation(msg, award, [none, none, conditionFailed()]))).toBeInstanceOf(
      WriteRejectedError,
    );
    expect(failureOf(explainCancellation(msg, award, [none, none, conditionFailed()]))?.message).toBe(
      'declared write 1 was rejected by its condition',
    );
  });

  it('is a rejected write when the failed action is one the result never declared', () => {
    expect(failureOf(explainCancellation(msg, award, [none, none, none, conditionFailed()]))?.message).toBe(
      'declared write 2 was rejected by its condition',
    );
  });
});

describe('explainCancellation: no condition failed', () => {
  it.each([
    [
      [none, { Code: 'ThrottlingError' }, { Code: 'TransactionConflict' }],
      'TransactionConflict',
      'None, ThrottlingError, TransactionConflict',
    ],
    [[none, { Code: 'ThrottlingError' }], 'ThrottlingError', 'None, ThrottlingError'],
    [[{}, none], 'TransactionCanceled', 'None, None'],
    [[], 'TransactionCanceled', ''],
  ])('fails with a transient failure for %j coded %s', (reasons, code, listed) => {
    expect(failureOf(explainCancellation(msg, award, reasons))).toMatchObject({
      classification: 'transient',
      code,
      message: `transaction cancelled: ${listed}`,
    });
  });

  it('fails a TransactionConflict as contention, which the runtime retries, and any other cancellation as not', () => {
    expect(failureOf(explainCancellation(msg, award, [none, { Code: 'TransactionConflict' }]))).toBeInstanceOf(
      ContentionError,
    );
    expect(failureOf(explainCancellation(msg, award, [none, { Code: 'ThrottlingError' }]))).toBeInstanceOf(
      TransientFailureError,
    );
  });

  it('takes a ValidationError as a rejected (permanent) transaction: retrying sends the same invalid request', () => {
    expect(failureOf(explainCancellation(msg, award, [none, { Code: 'ValidationError' }]))).toBeInstanceOf(
      WriteRejectedError,
    );
    expect(failureOf(explainCancellation(msg, award, [none, { Code: 'ValidationError' }]))?.message).toBe(
      'transaction rejected: None, ValidationError',
    );
  });
});

describe('dedupRecordPut', () => {
  it('puts a COMPLETED record, if absent or expired, that lives the TTL and returns the old one when refused', () => {
    // Act
    const put = dedupRecordPut(
      msg,
      { tableName: 'dedup', group: 'points-consumer-group', recordIdPrefix: 'points-consumer-group#' },
      86_400,
      Date.UTC(2026, 10, 30, 12, 0, 0, 500),
    );
    // Assess
    const nowSeconds = Date.UTC(2026, 10, 30, 12, 0, 0) / 1000;
    expect(put).toEqual({
      Put: {
        TableName: 'dedup',
        Item: {
          id: 'points-consumer-group#SO1',
          key: 'SO1',
          group: 'points-consumer-group',
          status: 'COMPLETED',
          firstMsgId: 'MSG-NEW',
          fingerprint: 'fp-new',
          createdAt: '2026-11-30T12:00:00.500Z',
          expiresAt: nowSeconds + 86_400,
        },
        ConditionExpression: 'attribute_not_exists(id) OR expiresAt < :nowSeconds',
        ExpressionAttributeValues: { ':nowSeconds': nowSeconds },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });
});
