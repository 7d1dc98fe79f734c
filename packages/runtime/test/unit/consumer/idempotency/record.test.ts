import { describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../../../src/consumer/idempotency/record.ts';

/** The fingerprint tells a duplicate (same business content) from a conflict (different content). */
describe('fingerprintOf', () => {
  const order = {
    orderNo: 'SO202007051422310088',
    userId: '88372',
    points: 300,
    items: [{ sku: 'A-1', qty: 2 }],
    paidAt: '2020-07-05T14:22:31Z',
  };

  it('gives the same fingerprint to the same payload with its JSON keys in another order, at every depth', () => {
    // Prepare: the producer serialised the same order with its fields, and a nested object's, in another order
    const reordered = JSON.parse(
      '{"paidAt":"2020-07-05T14:22:31Z","items":[{"qty":2,"sku":"A-1"}],"points":300,"userId":"88372","orderNo":"SO202007051422310088"}',
    );
    // Act
    const [a, b] = [fingerprintOf(order), fingerprintOf(reordered)];
    // Assess
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(order));
    expect(b).toBe(a);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
  });

  it('treats a field that is undefined as a field that is absent (it never reaches the JSON)', () => {
    expect(fingerprintOf({ ...order, couponId: undefined })).toBe(fingerprintOf(order));
  });

  it.each([
    ['a different amount', { ...order, points: 3000 }],
    ['another user', { ...order, userId: '88373' }],
    ['a nested value changed', { ...order, items: [{ sku: 'A-1', qty: 3 }] }],
    ['a number sent as a string', { ...order, points: '300' }],
    ['an extra field', { ...order, couponId: 'C-1' }],
  ])('gives a different fingerprint to the same order with %s', (_, changed) => {
    expect(fingerprintOf(changed)).not.toBe(fingerprintOf(order));
  });

  it('keeps array order significant (a list is content, not a set of keys)', () => {
    const lines = [
      { sku: 'A-1', qty: 2 },
      { sku: 'B-2', qty: 1 },
    ];
    expect(fingerprintOf({ ...order, items: [...lines].reverse() })).not.toBe(
      fingerprintOf({ ...order, items: lines }),
    );
  });
});
