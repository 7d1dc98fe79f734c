import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { messageOf, OperationsError } from '../../operations/index.ts';
import type { LegacyRow } from '../legacy-award.ts';
import { type ColumnMapping, type LegacySource, LegacySourceError, type SourcePage } from '../legacy-source.ts';
import { legacyInstant, legacyZone, MissingTimeZoneError } from '../legacy-time.ts';

export interface FileSourceOptions {
  readonly path: string;
  readonly format: 'csv' | 'jsonl';
  /** Header names (CSV) or member names (JSONL); `table` and the cursor's role are only labels here. */
  readonly mapping: ColumnMapping;
  readonly since?: Date;
  /** The zone of times written without one; required when the export has such times. */
  readonly timeZone?: string;
  readonly pageSize?: number;
  /** `--sha256`: the export's checksum as its producer published it; another file is refused before a row is read. */
  readonly sha256?: string;
}

/** The export is not the file an interrupted run read: resuming it would skip or repeat rows. */
export class ExportChangedError extends OperationsError {
  override readonly name = 'ExportChangedError';
}

/**
 * An export of the legacy table (CSV with a header row, or one JSON object per line), for teams
 * that cannot reach the database from where they run operations. A page's position is the byte
 * offset after its last line, that line's number and the SHA-256 of every byte before the offset,
 * so an interrupted run resumes by seeking, and only into the file it read: an export rewritten
 * since (rows added, removed or changed before the offset, the file cut shorter) is refused.
 *
 * Lines are split here, not by a CSV library: csv-parse counts characters where a resumable
 * offset needs bytes (a multi-byte character would make the offset point into a row), and its
 * one-line parse costs about 190 µs, half an hour over ten million rows. CSV fields are RFC 4180:
 * quoted when they hold a comma, with doubled quotes inside; a quoted line break is not
 * supported (these tables hold none), and such a line is reported as invalid.
 */
export async function openFileSource(options: FileSourceOptions): Promise<LegacySource> {
  const size = await checkedSize(options);
  const zone = options.timeZone === undefined ? undefined : legacyZone(options.timeZone);
  const { mapping, format } = options;
  const pageSize = options.pageSize ?? 1_000;
  let header: string[] | undefined;

  const rowOf = (fields: Record<string, unknown>, line: number): LegacyRow => {
    const ref = `line ${line}${fields[mapping.cursor] !== undefined ? ` (${mapping.cursor} ${String(fields[mapping.cursor])})` : ''}`;
    let awardedAt: Date | undefined;
    try {
      awardedAt = mapping.time ? legacyInstant(fields[mapping.time], zone, mapping.time) : undefined;
    } catch (error) {
      if (error instanceof MissingTimeZoneError) throw error;
      return { ref, orderNo: undefined, invalid: (error as Error).message };
    }
    return {
      ref,
      orderNo: fields[mapping.key] ?? null,
      ...(mapping.user === undefined
        ? {}
        : { userId: emptyAsNull(fields[mapping.user]), points: emptyAsNull(fields[mapping.points!]) }),
      awardedAt,
    };
  };

  const parseLine = (text: string, line: number): LegacyRow => {
    const invalid = (reason: string): LegacyRow => ({ ref: `line ${line}`, orderNo: undefined, invalid: reason });
    let fields: Record<string, unknown>;
    if (format === 'jsonl') {
      try {
        const value = parseKeepingDigits(text);
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return invalid('not a JSON object');
        fields = value as Record<string, unknown>;
      } catch {
        return invalid('not JSON');
      }
    } else {
      const cells = splitCsvLine(text);
      if (cells === undefined) return invalid('unbalanced quotes (a quoted line break is not supported)');
      if (cells.length !== header!.length) return invalid(`${cells.length} fields, the header has ${header!.length}`);
      fields = Object.fromEntries(header!.map((name, i) => [name, cells[i]]));
    }
    return rowOf(fields, line);
  };

  return {
    kind: format,
    description: `${format.toUpperCase()} export ${options.path} (${size} bytes)`,
    carriesContent: mapping.user !== undefined,
    async estimateRows() {
      return undefined;
    },
    async endPosition() {
      return String((await stat(options.path)).size);
    },
    async *pages(position, upTo): AsyncGenerator<SourcePage> {
      const { startByte, startLine, read } = await resumeAt(options.path, position);
      const upToByte = upTo === undefined ? undefined : Number(upTo);
      if (format === 'csv') header = await readHeader(options.path, mapping);
      let rows: LegacyRow[] = [];
      let last = { line: startLine, endByte: startByte };
      const positionAt = (endByte: number, line: number) => `${endByte}:${line}:${read.copy().digest('hex')}`;
      for await (const { text, line, endByte } of linesOf(options.path, startByte, startLine, read, upToByte)) {
        last = { line, endByte };
        if ((format === 'csv' && line === 1) || text.trim() === '') continue;
        const row = parseLine(text, line);
        if (isSince(row, options.since)) rows.push(row);
        if (rows.length >= pageSize) {
          yield { rows, position: positionAt(endByte, line) };
          rows = [];
        }
      }
      if (rows.length > 0) yield { rows, position: positionAt(last.endByte, last.line) };
    },
    close: async () => undefined,
  };
}

/** The export's size, once it is known to be the file `--sha256` names (when given). */
async function checkedSize(options: FileSourceOptions): Promise<number> {
  let size: number;
  try {
    size = (await stat(options.path)).size;
  } catch (error) {
    throw new LegacySourceError(`cannot read ${options.path}: ${messageOf(error)}`);
  }
  if (options.sha256 !== undefined) await checkSha256(options.path, options.sha256);
  return size;
}

async function checkSha256(path: string, expected: string): Promise<void> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  const actual = hash.digest('hex');
  if (actual !== expected.trim().toLowerCase())
    throw new LegacySourceError(
      `${path}: its SHA-256 is ${actual}, not the ${expected} given (--sha256): this is not the export that was published`,
    );
}

/**
 * Where an interrupted run stopped, checked against the file: the hash of the bytes before the
 * offset must be the one the run recorded. Returns the hash so far, to go on with.
 */
async function resumeAt(
  path: string,
  position: string | undefined,
): Promise<{ startByte: number; startLine: number; read: Hash }> {
  const read = createHash('sha256');
  if (position === undefined) return { startByte: 0, startLine: 0, read };
  const [byte, line, digest] = position.split(':');
  const startByte = Number(byte);
  const changed = (what: string) =>
    new ExportChangedError(
      `${path} changed since the interrupted run read it (${what}): a resumed import would skip or repeat rows. ` +
        'Start a new run: remove the checkpoint (or give another --checkpoint) and import the file whole; rows already imported count as already present',
    );
  if (!Number.isSafeInteger(startByte) || !digest) throw changed('the checkpoint names no verifiable position');
  if ((await stat(path)).size < startByte) throw changed(`it is shorter than the ${startByte} bytes read`);
  if (startByte > 0)
    for await (const chunk of createReadStream(path, { start: 0, end: startByte - 1, highWaterMark: 1 << 20 }))
      read.update(chunk as Buffer);
  if (read.copy().digest('hex') !== digest) throw changed(`its first ${startByte} bytes are not the ones read`);
  return { startByte, startLine: Number(line), read };
}

/**
 * `JSON.parse`, keeping an integer beyond 2^53 − 1 as its digits: as a number it has already lost
 * some (`202007051422310088` reads as `…080`), and an order number that lost digits is another
 * order's key. The reviver's source text (ES2025, Node ≥ 21) is what makes this possible without a
 * parser of our own.
 */
export function parseKeepingDigits(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' &&
    !Number.isSafeInteger(value) &&
    context?.source !== undefined &&
    /^-?\d+$/.test(context.source)
      ? context.source
      : value,
  );
}

/** Rows before `--since` are left out (a row without a time is kept: importing it again is harmless). */
function isSince(row: LegacyRow, since: Date | undefined): boolean {
  return !since || !row.awardedAt || row.awardedAt >= since;
}

const emptyAsNull = (value: unknown) => (value === '' || value === undefined ? null : value);

async function readHeader(path: string, mapping: ColumnMapping): Promise<string[]> {
  for await (const { text } of linesOf(path, 0, 0)) {
    const names = splitCsvLine(text.replace(/^\uFEFF/, ''))?.map((n) => n.trim());
    const needed = [mapping.key, mapping.user, mapping.points, mapping.time].filter(
      (n): n is string => n !== undefined,
    );
    const missing = needed.filter((n) => !names?.includes(n));
    if (!names || missing.length > 0)
      throw new LegacySourceError(`${path}: the header has no column ${missing.join(', ')} (give --map to name them)`);
    return names;
  }
  throw new LegacySourceError(`${path} is empty`);
}

/** Lines with their 1-based number and the byte offset after their line break; `read` takes every byte passed. */
async function* linesOf(
  path: string,
  startByte: number,
  startLine: number,
  read?: Hash,
  upToByte?: number,
): AsyncGenerator<{ text: string; line: number; endByte: number }> {
  if (upToByte !== undefined && upToByte <= startByte) return;
  let offset = startByte;
  let line = startLine;
  let rest = Buffer.alloc(0);
  for await (const chunk of createReadStream(path, {
    start: startByte,
    ...(upToByte === undefined ? {} : { end: upToByte - 1 }),
    highWaterMark: 1 << 20,
  }) as AsyncIterable<Buffer>) {
    let buffer = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
    let at = buffer.indexOf(0x0a);
    while (at !== -1) {
      const end = at > 0 && buffer[at - 1] === 0x0d ? at - 1 : at;
      offset += at + 1;
      line += 1;
      read?.update(buffer.subarray(0, at + 1));
      yield { text: buffer.toString('utf8', 0, end), line, endByte: offset };
      buffer = buffer.subarray(at + 1);
      at = buffer.indexOf(0x0a);
    }
    rest = Buffer.from(buffer);
  }
  if (rest.length > 0) {
    offset += rest.length;
    read?.update(rest);
    yield { text: rest.toString('utf8').replace(/\r$/, ''), line: line + 1, endByte: offset };
  }
}

/** One CSV line's fields (RFC 4180 quoting); `undefined` when a quote is left open. */
export function splitCsvLine(text: string): string[] | undefined {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    if (text[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        const close = text.indexOf('"', i);
        if (close === -1) return undefined;
        value += text.slice(i, close);
        if (text[close + 1] === '"') {
          value += '"';
          i = close + 2;
          continue;
        }
        i = close + 1;
        break;
      }
      fields.push(value);
    } else {
      const comma = text.indexOf(',', i);
      fields.push(text.slice(i, comma === -1 ? text.length : comma));
      i = comma === -1 ? text.length : comma;
    }
    if (i >= text.length) return fields;
    if (text[i] !== ',') return undefined;
    i++;
    if (i === text.length) {
      fields.push('');
      return fields;
    }
  }
}
