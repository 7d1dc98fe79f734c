import { OperationsError } from '../operations/index.ts';

/**
 * Times in legacy stores: a MySQL `DATETIME` written with `CURRENT_TIMESTAMP` is wall-clock time in
 * the server's zone (Beijing time for the article's consumer), and exports keep it that way. A time
 * without a zone is read in the zone the command was given or the server reports, never guessed.
 */
export class MissingTimeZoneError extends OperationsError {
  override readonly name = 'MissingTimeZoneError';
}

/**
 * The zone wall-clock times were written in: a fixed offset (`+08:00`), or a zone with daylight
 * saving time by its IANA name (`Europe/Berlin`), whose offset is taken per instant: a fixed
 * offset applied to a whole table in such a zone misreads every row of the other season by an
 * hour, and a delta import after a change of season drops up to an hour of rows.
 */
export interface LegacyZone {
  /** As given: `+08:00`, `Europe/Berlin`. */
  readonly name: string;
  /** Minutes east of UTC at that instant. */
  offsetMinutesAt(instantMs: number): number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** `+08:00`, `-05:30`, `Z`, `UTC`, or an IANA zone name (`Asia/Shanghai`, `Europe/Berlin`). */
export function legacyZone(text: string): LegacyZone {
  const name = text.trim();
  if (name === 'Z' || name === 'UTC') return fixedZone(name, 0);
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(name);
  if (m) return fixedZone(name, (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])));
  return ianaZone(name);
}

function fixedZone(name: string, minutes: number): LegacyZone {
  return { name, offsetMinutesAt: () => minutes };
}

/**
 * A zone's offset from Intl (ICU's time zone data, shipped with Node): the one place offsets per
 * instant are known without a dependency; Temporal, which would do this, is not in Node 24.
 * Offsets change on quarter hours, so the last quarter hour asked is remembered: rows come in
 * time order, and this costs one ICU call per quarter hour of rows rather than one per row.
 */
function ianaZone(name: string): LegacyZone {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    throw new OperationsError(
      `time zone "${name}" is neither an offset like +08:00 nor an IANA zone like Asia/Shanghai`,
    );
  }
  const QUARTER = 15 * 60_000;
  let cached = { quarter: Number.NaN, minutes: 0 };
  return {
    name,
    offsetMinutesAt(instantMs) {
      const quarter = Math.floor(instantMs / QUARTER);
      if (quarter === cached.quarter) return cached.minutes;
      const at = quarter * QUARTER;
      const part = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, Number(p.value)]));
      const wall = Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!, part.second!);
      cached = { quarter, minutes: Math.round((wall - at) / 60_000) };
      return cached.minutes;
    },
  };
}

/**
 * The instant a wall-clock time (given as if it were UTC) names in the zone. Around a change of
 * offset a wall-clock time can name two instants (the hour repeated when clocks go back): the
 * later one is taken, so a row is never read as older than it is (its record lives no shorter,
 * `--since` does not leave it out). A time skipped when clocks go forward, which a server in the
 * zone never writes, is read with the offset before the change.
 */
export function instantOfWallClock(wallMs: number, zone: LegacyZone): number {
  const before = zone.offsetMinutesAt(wallMs - DAY_MS);
  const after = zone.offsetMinutesAt(wallMs + DAY_MS);
  const candidates = [...new Set([before, after])]
    .map((minutes) => wallMs - minutes * 60_000)
    .filter((t) => wallMs - zone.offsetMinutesAt(t) * 60_000 === t);
  return candidates.length === 0 ? wallMs - before * 60_000 : Math.max(...candidates);
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;
const ZONED = /(?:Z|[+-]\d{2}:?\d{2})$/;

/**
 * A legacy time as an instant: a string with a zone as it says, a wall-clock string in `zone`, a
 * number as epoch milliseconds (or seconds below 10^11). `undefined` for no value; a value that
 * is not a time throws a plain Error (the row is invalid).
 */
export function legacyInstant(value: unknown, zone: LegacyZone | undefined, column: string): Date | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  if (value instanceof Date) return value;
  if (typeof value === 'number') return new Date(value < 1e11 ? value * 1000 : value);
  const text = String(value).trim();
  const local = LOCAL.exec(text);
  if (local) {
    if (zone === undefined) {
      throw new MissingTimeZoneError(
        `${column} "${text}" carries no time zone: give the legacy store's with --time-zone (e.g. +08:00 or Europe/Berlin)`,
      );
    }
    const [, y, mo, d, h, mi, s, frac = '0'] = local;
    const wall = Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!, Math.round(Number(`0.${frac}`) * 1000));
    return new Date(instantOfWallClock(wall, zone));
  }
  const parsed = ZONED.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(parsed)) throw new Error(`${column} "${text.slice(0, 40)}" is not a time`);
  return new Date(parsed);
}

/** An instant as wall-clock text in the legacy zone. */
export function legacyWallClock(instant: Date, zone: LegacyZone): string {
  return wallClockText(instant.getTime() + zone.offsetMinutesAt(instant.getTime()) * 60_000);
}

/**
 * The earliest wall-clock text a row written at or after `instant` can carry, for a `WHERE
 * create_time >= ?` on a DATETIME column: when clocks go back after `instant`, a later row can
 * carry an earlier wall-clock time than `instant`'s own. Rows it lets through that are older than
 * `instant` are left out per row, by their instant.
 */
export function earliestWallClockSince(instant: Date, zone: LegacyZone): string {
  const at = instant.getTime();
  return wallClockText(at + Math.min(zone.offsetMinutesAt(at), zone.offsetMinutesAt(at + DAY_MS)) * 60_000);
}

const wallClockText = (wallMs: number) => new Date(wallMs).toISOString().slice(0, 19).replace('T', ' ');
