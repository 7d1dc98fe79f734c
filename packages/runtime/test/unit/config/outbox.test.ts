import { describe, expect, it } from 'vitest';
import { eventIdOf } from '../../../src/config/index.ts';

describe('eventIdOf', () => {
  it('derives the same 32-hex id from the same group, key and index, whatever the msgId', () => {
    expect(eventIdOf('point-consumer-group', 'SO202007051422310088', 0)).toBe('393D6061314BC4BCD33C9DBA67A98CDA');
    expect(eventIdOf('point-consumer-group', 'SO202007051422310088', 0)).toMatch(/^[0-9A-F]{32}$/);
  });

  it('gives another id to another group, key or index', () => {
    const ids = new Set([
      eventIdOf('point-consumer-group', 'SO1', 0),
      eventIdOf('point-consumer-group', 'SO1', 1),
      eventIdOf('point-consumer-group', 'SO2', 0),
      eventIdOf('coupon-consumer-group', 'SO1', 0),
      // The separator keeps a key's characters from moving across the group boundary.
      eventIdOf('point-consumer-group#SO', '1', 0),
    ]);
    expect(ids.size).toBe(5);
  });

  it('refuses an index that is not a whole number', () => {
    expect(() => eventIdOf('g', 'k', -1)).toThrow(RangeError);
    expect(() => eventIdOf('g', 'k', 1.5)).toThrow(RangeError);
  });
});
