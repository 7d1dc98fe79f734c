import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { IllegalTransitionError } from '../../../../src/consumer/failures/errors.ts';
import {
  stateTransitionStrategy,
  type TransitionRequest,
} from '../../../../src/consumer/idempotency/state-transition.ts';
import type { ConsumerMessage, Settlement } from '../../../../src/consumer/settlement.ts';
import { recordingDynamoDb } from '../recording-dynamodb.ts';
import { serviceError } from '../recording-sqs.ts';

const msg = { key: 'SO1' } as ConsumerMessage<unknown>;
const seen: Array<Record<string, unknown> | undefined> = [];
/** PAID: WAIT_PAY → PAID; a refusal is a duplicate when the order is already PAID, illegal otherwise. */
const pay: TransitionRequest = {
  update: {
    TableName: 'orders',
    Key: { orderNo: 'SO1' },
    UpdateExpression: 'SET #s = :paid',
    ConditionExpression: '#s = :waitPay',
    ExpressionAttributeNames: { '#s': 'status' },
    ExpressionAttributeValues: { ':paid': 'PAID', ':waitPay': 'WAIT_PAY' },
  },
  explainRejection: (current): Settlement => {
    seen.push(current);
    if (current?.status === 'PAID') return { outcome: 'duplicate', reason: 'state-already-advanced' };
    throw new IllegalTransitionError(`PAID from ${String(current?.status)}`);
  },
};

describe('stateTransitionStrategy', () => {
  it('proceeds at once, keeps no record, and commits the update asking for the old item on refusal', async () => {
    // Prepare
    const { client, inputsOf } = recordingDynamoDb(() => ({}));
    const strategy = stateTransitionStrategy({ client });
    // Act
    const begun = await strategy.begin(msg, 0);
    const settled = await strategy.commit(msg, pay);
    await strategy.abort(msg, new Error('nothing to undo'));
    // Assess
    expect(begun).toEqual({ proceed: true });
    expect(strategy.recordTtlSeconds).toBe(Number.POSITIVE_INFINITY);
    expect(settled).toEqual({ outcome: 'processed' });
    expect(inputsOf('UpdateItemCommand')).toEqual([{ ...pay.update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }]);
  });

  it('lets the business explain a refusal from the item as it was, or from its absence', async () => {
    // Prepare
    seen.length = 0;
    const paid = stateTransitionStrategy({
      client: recordingDynamoDb(
        () =>
          new ConditionalCheckFailedException({
            message: 'refused',
            $metadata: {},
            Item: marshall({ orderNo: 'SO1', status: 'PAID' }),
          }),
      ).client,
    });
    const absent = stateTransitionStrategy({
      client: recordingDynamoDb(() => new ConditionalCheckFailedException({ message: 'refused', $metadata: {} }))
        .client,
    });
    // Act / Assess
    expect(await paid.commit(msg, pay)).toEqual({ outcome: 'duplicate', reason: 'state-already-advanced' });
    expect(await absent.commit(msg, pay)).toEqual({ outcome: 'failed', error: expect.any(IllegalTransitionError) });
    expect(seen).toEqual([{ orderNo: 'SO1', status: 'PAID' }, undefined]);
  });

  it('lets any other failure through for the middleware to classify', async () => {
    const throttled = serviceError('ThrottlingException');
    await expect(
      stateTransitionStrategy({ client: recordingDynamoDb(() => throttled).client }).commit(msg, pay),
    ).rejects.toBe(throttled);
  });
});
