import { describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../../lib/consumer/index.ts';
import { checkLegacyRow } from '../../../lib/migration/legacy-award.ts';
import { ARTICLE_MAPPING, columnMappingOf } from '../../../lib/migration/legacy-source.ts';
import { legacyInstant, legacyWallClock, MissingTimeZoneError } from '../../../lib/migration/legacy-time.ts';
import { splitCsvLine } from '../../../lib/migration/sources/file-source.ts';
import { orderPaidFingerprintFields, parseOrderPaid } from '../../../lib/points/index.ts';

describe('checkLegacyRow: a legacy row judged by the consumer’s own rules', () => {
  it('fingerprints a row exactly as the consumer fingerprints the order’s message', () => {
    const order = parseOrderPaid('{"orderNo":"SO202007051422310088","userId":88372,"points":300}');
    const check = checkLegacyRow({ ref: 't#1', orderNo: 'SO202007051422310088', userId: '88372', points: '300' });
    expect(check).toMatchObject({ ok: true, award: { userId: '88372', points: 300 } });
    expect(check.ok && check.award.fingerprint).toBe(fingerprintOf(orderPaidFingerprintFields(order)));
  });

  it('keeps a key-only row without a fingerprint, and refuses half of one', () => {
    expect(checkLegacyRow({ ref: 'k', orderNo: 'SO-1' })).toEqual({
      ok: true,
      award: { ref: 'k', orderNo: 'SO-1', awardedAt: undefined },
    });
    expect(checkLegacyRow({ ref: 'k', orderNo: 'SO-1', userId: '1', points: null })).toEqual({
      ok: false,
      reason: 'points is empty',
    });
  });

  it.each([
    [{ orderNo: '' }, 'orderNo is empty'],
    [{ orderNo: null }, 'orderNo is empty'],
    [{ orderNo: 'x'.repeat(65) }, 'orderNo is longer than 64 characters'],
    [{ orderNo: 'SO-1', userId: '-3', points: 1 }, 'userId must not be negative'],
    [{ orderNo: 'SO-1', userId: 1, points: 1.5 }, 'points must be a whole number'],
    [{ orderNo: 'SO-1', userId: 1, points: 'many' }, 'points must be a number'],
    [{ orderNo: 'SO-1', invalid: 'not JSON' }, 'not JSON'],
  ])('refuses %j: %s', (row, reason) => {
    expect(checkLegacyRow({ ref: 'r', ...row })).toEqual({ ok: false, reason });
  });
});

describe('the column mapping', () => {
  it('is the article’s table by default, and takes another schema field by field', () => {
    expect(columnMappingOf(undefined, undefined)).toEqual(ARTICLE_MAPPING);
    expect(columnMappingOf('t_award', 'key=order_id, user=member_id,points=amount,time=,cursor=order_id')).toEqual({
      table: 't_award',
      key: 'order_id',
      user: 'member_id',
      points: 'amount',
      time: undefined,
      cursor: 'order_id',
    });
  });

  it('refuses half a fingerprint, unknown fields and names that are not plain identifiers', () => {
    expect(() => columnMappingOf(undefined, 'user=')).toThrow(/user and points are the fingerprint/);
    expect(() => columnMappingOf(undefined, 'amount=x')).toThrow(/the fields are key, user, points, time, cursor/);
    expect(() => columnMappingOf('t; DROP TABLE x', undefined)).toThrow(/is not a plain column or table name/);
  });
});

describe('legacy times', () => {
  it('reads wall-clock DATETIMEs in the legacy zone, zoned text as it says, and refuses a zone it was not given', () => {
    expect(legacyInstant('2020-07-05 14:22:31', 480, 'create_time')).toEqual(new Date('2020-07-05T06:22:31Z'));
    expect(legacyInstant('2020-07-05T14:22:31+08:00', undefined, 't')).toEqual(new Date('2020-07-05T06:22:31Z'));
    expect(legacyInstant(1593930151, undefined, 't')).toEqual(new Date('2020-07-05T06:22:31Z'));
    expect(legacyInstant('', undefined, 't')).toBeUndefined();
    expect(() => legacyInstant('2020-07-05 14:22:31', undefined, 'create_time')).toThrow(MissingTimeZoneError);
    expect(() => legacyInstant('soon', 0, 'create_time')).toThrow('create_time "soon" is not a time');
    expect(legacyWallClock(new Date('2020-07-05T06:22:31Z'), 480)).toBe('2020-07-05 14:22:31');
  });
});

describe('splitCsvLine (RFC 4180 on one line)', () => {
  it.each([
    ['a,b,c', ['a', 'b', 'c']],
    ['"a,1","b ""q""",', ['a,1', 'b "q"', '']],
    ['', ['']],
    [',', ['', '']],
  ])('%j', (line, fields) => expect(splitCsvLine(line)).toEqual(fields));

  it('says when a quote is left open or text follows a closing quote', () => {
    expect(splitCsvLine('"open,b')).toBeUndefined();
    expect(splitCsvLine('"a"b,c')).toBeUndefined();
  });
});
