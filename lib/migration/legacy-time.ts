import { OperationsError } from '../operations/index.ts';

/**
 * Times in legacy stores: a MySQL `DATETIME` written with `CURRENT_TIMESTAMP` is wall-clock time in
 * the server's zone (Beijing time for the article's consumer), and exports keep it that way. A time
 * without a zone is read in the zone the command was given or the server reports, never guessed.
 */
export class MissingTimeZoneError extends OperationsError {
  override readonly name = 'MissingTimeZoneError';
}

/** `+08:00`, `-05:30`, `Z` → minutes east of UTC. */
export function zoneOffsetMinutes(zone: string): number {
  if (zone === 'Z' || zone === 'UTC') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(zone.trim());
  if (!m) throw new OperationsError(`time zone "${zone}" is not like +08:00`);
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;
const ZONED = /(?:Z|[+-]\d{2}:?\d{2})$/;

/**
 * A legacy time as an instant: a string with a zone as it says, a wall-clock string in
 * `offsetMinutes`' zone, a number as epoch milliseconds (or seconds below 10^11). `undefined` for
 * no value; a value that is not a time throws a plain Error (the row is invalid).
 */
export function legacyInstant(value: unknown, offsetMinutes: number | undefined, column: string): Date | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  if (value instanceof Date) return value;
  if (typeof value === 'number') return new Date(value < 1e11 ? value * 1000 : value);
  const text = String(value).trim();
  const local = LOCAL.exec(text);
  if (local) {
    if (offsetMinutes === undefined) {
      throw new MissingTimeZoneError(
        `${column} "${text}" carries no time zone: give the legacy store's with --time-zone (e.g. +08:00)`,
      );
    }
    const [, y, mo, d, h, mi, s, frac = '0'] = local;
    const utc = Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!, Math.round(Number(`0.${frac}`) * 1000));
    return new Date(utc - offsetMinutes * 60_000);
  }
  const parsed = ZONED.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(parsed)) throw new Error(`${column} "${text.slice(0, 40)}" is not a time`);
  return new Date(parsed);
}

/** An instant as wall-clock text in the legacy zone, for a `WHERE create_time >= ?` on a DATETIME column. */
export function legacyWallClock(instant: Date, offsetMinutes: number): string {
  return new Date(instant.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 19).replace('T', ' ');
}
