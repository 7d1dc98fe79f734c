import { orderPaidFingerprintFields, parseOrderPaid } from '@rocketmq-lambda/consumers/points/index.ts';
import { fingerprintOf } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { describe, expect, it } from 'vitest';
import { checkLegacyRow } from '../../../src/migration/legacy-award.ts';
import { ARTICLE_MAPPING, columnMappingOf } from '../../../src/migration/legacy-source.ts';
import {
  earliestWallClockSince,
  legacyInstant,
  legacyWallClock,
  legacyZone,
  MissingTimeZoneError,
} from '../../../src/migration/legacy-time.ts';
import { parseKeepingDigits, splitCsvLine } from '../../../src/migration/sources/file-source.ts';

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
    [{ orderNo: Number('202007051422310088') }, 'orderNo above 2^53 - 1 lost digits as a number: export it as text'],
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
    const beijing = legacyZone('+08:00');
    expect(legacyInstant('2020-07-05 14:22:31', beijing, 'create_time')).toEqual(new Date('2020-07-05T06:22:31Z'));
    expect(legacyInstant('2020-07-05 14:22:31', legacyZone('Asia/Shanghai'), 't')).toEqual(
      new Date('2020-07-05T06:22:31Z'),
    );
    expect(legacyInstant('2020-07-05T14:22:31+08:00', undefined, 't')).toEqual(new Date('2020-07-05T06:22:31Z'));
    expect(legacyInstant(1593930151, undefined, 't')).toEqual(new Date('2020-07-05T06:22:31Z'));
    expect(legacyInstant('', undefined, 't')).toBeUndefined();
    expect(() => legacyInstant('2020-07-05 14:22:31', undefined, 'create_time')).toThrow(MissingTimeZoneError);
    expect(() => legacyInstant('soon', legacyZone('Z'), 'create_time')).toThrow('create_time "soon" is not a time');
    expect(legacyWallClock(new Date('2020-07-05T06:22:31Z'), beijing)).toBe('2020-07-05 14:22:31');
    expect(() => legacyZone('Mars/Olympus')).toThrow(/neither an offset like \+08:00 nor an IANA zone/);
  });

  it('reads each DATETIME of a zone with daylight saving time with its own offset, around both changes', () => {
    const berlin = legacyZone('Europe/Berlin');
    const at = (text: string) => legacyInstant(text, berlin, 't')!.toISOString();
    // Spring forward, 2026-03-29: 02:00 CET becomes 03:00 CEST
    expect(at('2026-03-29 01:30:00')).toBe('2026-03-29T00:30:00.000Z');
    expect(at('2026-03-29 03:30:00')).toBe('2026-03-29T01:30:00.000Z');
    expect(at('2026-07-01 12:00:00')).toBe('2026-07-01T10:00:00.000Z');
    expect(at('2026-12-01 12:00:00')).toBe('2026-12-01T11:00:00.000Z');
    // Fall back, 2026-10-25: 02:30 happens twice; the later instant is taken (never read as older than it is)
    expect(at('2026-10-25 02:30:00')).toBe('2026-10-25T01:30:00.000Z');
    expect(at('2026-10-25 01:30:00')).toBe('2026-10-24T23:30:00.000Z');
    expect(legacyWallClock(new Date('2026-03-29T00:30:00Z'), berlin)).toBe('2026-03-29 01:30:00');
    expect(legacyWallClock(new Date('2026-03-29T01:30:00Z'), berlin)).toBe('2026-03-29 03:30:00');
  });

  it('selects from the earliest wall-clock time a later row can carry (clocks going back after --since)', () => {
    const berlin = legacyZone('Europe/Berlin');
    // 00:40Z is 02:40 CEST; the rows of the repeated hour after it read 02:00–02:59 CET
    expect(earliestWallClockSince(new Date('2026-10-25T00:40:00Z'), berlin)).toBe('2026-10-25 01:40:00');
    expect(earliestWallClockSince(new Date('2026-03-29T00:30:00Z'), berlin)).toBe('2026-03-29 01:30:00');
    expect(earliestWallClockSince(new Date('2020-07-05T06:22:31Z'), legacyZone('+08:00'))).toBe('2020-07-05 14:22:31');
  });
});

describe('JSON lines with integers past 2^53', () => {
  it('keeps their digits from the source text; safe numbers stay numbers', () => {
    expect(parseKeepingDigits('{"order_no":202007051422310088,"user_id":9007199254740993,"point":300}')).toEqual({
      order_no: '202007051422310088',
      user_id: '9007199254740993',
      point: 300,
    });
    expect(parseKeepingDigits('{"a":-12345678901234567890,"b":1.5,"c":1e300}')).toEqual({
      a: '-12345678901234567890',
      b: 1.5,
      c: 1e300,
    });
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
