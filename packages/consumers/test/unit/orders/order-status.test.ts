import {
  IllegalTransitionError,
  InvalidPayloadError,
  NotYetApplicableError,
  TransientFailureError,
} from '@rocketmq-lambda/runtime/consumer/index.ts';
import { describe, expect, it } from 'vitest';
import { parseOrderEvent } from '../../../src/orders/order-events.ts';
import {
  explainRejection,
  judgeRejection,
  ORDER_TRANSITIONS,
  transitionRequest,
} from '../../../src/orders/order-status.ts';

describe('order status transitions (pure)', () => {
  it.each([
    // event, current status, verdict
    ['PAID', 'PAID', 'already-advanced'],
    ['PAID', 'FINISHED', 'already-advanced'],
    ['FINISHED', 'FINISHED', 'already-advanced'],
    ['FINISHED', 'WAIT_PAY', 'not-yet'],
    ['PAID', 'CLOSED', 'illegal'],
    ['FINISHED', 'REFUNDED', 'illegal'],
    ['PAID', 'WAIT_PAY', 'raced'],
    ['FINISHED', 'PAID', 'raced'],
  ] as const)('%s on a %s order is judged %s', (event, status, verdict) => {
    expect(judgeRejection(ORDER_TRANSITIONS[event], { orderNo: 'SO1', status }).kind).toBe(verdict);
  });

  it('judges a missing order as absent and an order without status as illegal', () => {
    expect(judgeRejection(ORDER_TRANSITIONS.PAID, undefined)).toEqual({ kind: 'absent' });
    expect(judgeRejection(ORDER_TRANSITIONS.PAID, { orderNo: 'SO1' })).toEqual({ kind: 'illegal', status: undefined });
  });

  it('turns each verdict into a settlement or a classified error', () => {
    expect(
      explainRejection(ORDER_TRANSITIONS.PAID, 'SO1', { orderNo: 'SO1', status: 'FINISHED', statusMsgId: 'M1' }),
    ).toEqual({
      outcome: 'duplicate',
      reason: 'state-already-advanced',
      winnerMsgId: 'M1',
    });
    expect(() => explainRejection(ORDER_TRANSITIONS.PAID, 'SO1', undefined)).toThrow(NotYetApplicableError);
    expect(() => explainRejection(ORDER_TRANSITIONS.FINISHED, 'SO1', { orderNo: 'SO1', status: 'WAIT_PAY' })).toThrow(
      NotYetApplicableError,
    );
    expect(() => explainRejection(ORDER_TRANSITIONS.FINISHED, 'SO1', { orderNo: 'SO1', status: 'REFUNDED' })).toThrow(
      IllegalTransitionError,
    );
    expect(() => explainRejection(ORDER_TRANSITIONS.PAID, 'SO1', { orderNo: 'SO1', status: 'WAIT_PAY' })).toThrow(
      TransientFailureError,
    );
  });

  it('builds the conditional update with the precondition in the ConditionExpression', () => {
    const request = transitionRequest(
      { kind: 'PAID', orderNo: 'SO1', userId: '88372', points: 300, paidAt: '2020-07-05T14:22:31Z' },
      { tableName: 'orders', msgId: 'M1', now: new Date('2020-07-05T14:22:33Z') },
    );
    expect(request.update).toMatchObject({
      TableName: 'orders',
      Key: { orderNo: 'SO1' },
      ConditionExpression: 'attribute_exists(orderNo) AND #status = :from',
      ExpressionAttributeNames: { '#status': 'status', '#stampedAt': 'paidAt' },
      ExpressionAttributeValues: {
        ':from': 'WAIT_PAY',
        ':to': 'PAID',
        ':stamp': '2020-07-05T14:22:31Z',
        ':msgId': 'M1',
      },
    });
  });

  it('stamps FINISHED with the broker’s born time when the body has no finishedAt', () => {
    const born = Date.parse('2020-07-12T09:00:00Z');
    const request = transitionRequest(
      { kind: 'FINISHED', orderNo: 'SO1' },
      { tableName: 'orders', msgId: 'M2', bornTimestamp: born, now: new Date() },
    );
    expect(request.update.ExpressionAttributeValues).toMatchObject({
      ':from': 'PAID',
      ':to': 'FINISHED',
      ':stamp': '2020-07-12T09:00:00.000Z',
    });
  });
});

describe('order event bodies', () => {
  it('reads PAID and FINISHED bodies by tag', () => {
    expect(
      parseOrderEvent('{"orderNo":"SO1","userId":88372,"points":300,"paidAt":"2020-07-05T14:22:31Z"}', 'PAID'),
    ).toEqual({
      kind: 'PAID',
      orderNo: 'SO1',
      userId: '88372',
      points: 300,
      paidAt: '2020-07-05T14:22:31Z',
    });
    expect(parseOrderEvent('{"orderNo":"SO1","finishedAt":"2020-07-12T09:00:00Z"}', 'FINISHED')).toEqual({
      kind: 'FINISHED',
      orderNo: 'SO1',
      finishedAt: '2020-07-12T09:00:00Z',
    });
  });

  it.each([
    ['not JSON', '{', 'PAID', /not JSON/],
    ['PAID without user', '{"orderNo":"SO1"}', 'PAID', /userId/],
    ['FINISHED without order', '{"finishedAt":"2020-07-12T09:00:00Z"}', 'FINISHED', /orderNo/],
    ['bad timestamp', '{"orderNo":"SO1","finishedAt":"yesterday"}', 'FINISHED', /finishedAt/],
    ['unknown tag', '{"orderNo":"SO1"}', 'REFUNDED', /not an order status event/],
  ])('rejects %s as an invalid payload', (_, body, tag, reason) => {
    expect(() => parseOrderEvent(body, tag)).toThrow(InvalidPayloadError);
    expect(() => parseOrderEvent(body, tag)).toThrow(reason);
  });
});
